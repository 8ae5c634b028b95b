#!/bin/sh
# docker-compose.yml's one-shot `secrets` service: makes the deployment's certificates and
# passwords at first start, into the `secrets` volume, and gives each container the copies it
# needs, readable by its user alone. Runs as root in the postgres image (for its openssl), at
# every `docker compose up`: what exists is kept, what is missing is made, and the copies are
# written again from source/, so an edit there reaches them at the next `up`.
#
# The volume (mounted read-only at /secrets everywhere else):
#   ca.pem                 the CA every client trusts (its key is not kept: nothing else is
#                          ever signed with it; deleting source/host.* makes a new CA and host
#                          certificate at the next start)
#   source/                root only: every secret as made, one file each; the one to edit
#   kafka/                 uid 1000 (the apache/kafka image's appuser): the broker's chain and
#                          key, the SCRAM users for the storage format, admin's client settings
#   postgres/              uid 999 (the postgres image's postgres): chain, key, superuser password
#   admin/                 uid 10001 (topics, db-roles, cli): Kafka `admin` and `control`, the
#                          Postgres administrator's and the roles' URLs, the roles' passwords
#   registry/              uid 1001 (the Apicurio image's user): its Postgres password
#   <service>/             the service's own uid (OWNERS below): its Kafka password, and the
#                          URL of its Postgres role where it has one
# Files are mode 0600 (ca.pem 0644), directories 0700.
set -eu
umask 077

S=/secrets
SRC=$S/source
ACLS=/etc/callstream/kafka/acls.tsv
# Elsewhere than in the container (a test of this script): another directory and table.
S=${SECRETS_DIR:-$S}
SRC=$S/source
ACLS=${ACLS_FILE:-$ACLS}

# Who reads what. A service runs as its own uid (`user:` in docker-compose.yml), so a
# container can read only its own secrets although every container mounts the volume.
KAFKA_UID=1000
POSTGRES_UID=999
# The Apicurio image's user (its files are its own).
REGISTRY_UID=1001
ADMIN_UID=10001
GID=10001
OWNERS="
gateway 10010
contact 10011
scheduler 10012
launch-dispatcher 10013
completion-detector 10014
recovery 10015
crm-dispatcher 10016
notifier 10017
projections 10018
operator-api 10019
"
# Postgres: the administrator (`postgres`, a superuser, used by db-roles only) and the roles of
# `callstream db roles`. The administrator's file is postgres-admin.*, as with `cargo xtask up
# --cluster`, so it never reads as a Kafka user's.
PG_ROLES="callstream_owner callstream_projections callstream_operator"
# The certificate every broker and Postgres present: the compose network's names and the
# host's loopback (the published ports).
SANS="DNS:kafka-1,DNS:kafka-2,DNS:kafka-3,DNS:postgres,DNS:localhost,IP:127.0.0.1"
# Its subject is the brokers' principal on the mutual-TLS listeners, a super user
# (KAFKA_SUPER_USERS in docker-compose.yml).
BROKER_CN=callstream-cluster-broker
DB=callstream

say() { echo "secrets: $*"; }
fail() { echo "secrets: $*" >&2; exit 1; }

# Kafka users: admin, then every principal of the ACL table (one per service, and `control`).
[ -r "$ACLS" ] || fail "cannot read $ACLS"
KAFKA_USERS="admin $(grep -v '^#' "$ACLS" | cut -f1 | sed -n 's/^User://p' | sort -u | tr '\n' ' ')"
for u in $(echo "$OWNERS" | awk 'NF { print $1 }'); do
  case " $KAFKA_USERS " in
    *" $u "*) ;;
    *) fail "$u has a uid in OWNERS but no row in $ACLS" ;;
  esac
done

owner_of() { echo "$OWNERS" | awk -v u="$1" '$1 == u { print $2 }'; }

# put OWNER MODE FILE: writes stdin to FILE, then renames it into place (a reader never sees
# half a file).
put() {
  tmp="$3.tmp.$$"
  cat > "$tmp"
  chown "$1" "$tmp"
  chmod "$2" "$tmp"
  mv -f "$tmp" "$3"
}

dir() { # dir OWNER PATH
  mkdir -p "$2"
  chown "$1" "$2"
  chmod 0700 "$2"
}

# 32 letters and digits: nothing a URL, a SCRAM argument or a JAAS line would need to escape.
new_password() {
  while :; do
    p=$(openssl rand -base64 64 | tr -dc 'A-Za-z0-9' | cut -c1-32)
    [ ${#p} -eq 32 ] && { echo "$p"; return; }
  done
}

ensure_password() { # makes $1's password when it has none
  if [ ! -s "$SRC/$1.password" ]; then
    new_password | put 0:0 0600 "$SRC/$1.password"
    made="$made $1"
  fi
}

password() { # $1's password; one edited by hand must keep to letters and digits
  p=$(tr -d '\r\n' < "$SRC/$1.password")
  case "$p" in
    *[!A-Za-z0-9]*) fail "$SRC/$1.password: use letters and digits only" ;;
  esac
  echo "$p"
}

mkdir -p "$S"
chmod 0755 "$S"
dir 0:0 "$SRC"
made=
# Not the first start: the brokers may have formatted their storage with the SCRAM users.
formatted=
[ -s "$SRC/kafka-cluster.id" ] && formatted=yes
for name in $KAFKA_USERS; do
  ensure_password "$name"
done
made_kafka=$made
for name in postgres-admin $PG_ROLES apicurio; do
  ensure_password "$name"
done

# --- the CA and the host certificate -------------------------------------------------------
if [ ! -s "$SRC/ca.pem" ] || [ ! -s "$SRC/host.pem" ] || [ ! -s "$SRC/host.key" ]; then
  say "making a CA and a certificate for $SANS (10 years)"
  work=$(mktemp -d)
  cat > "$work/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[host]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
# Server on every listener; client towards the other brokers' mutual-TLS listeners.
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = $SANS
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
EOF
  # EC P-256 keys in PKCS#8 (genpkey's format): Kafka's PEM key store reads only that,
  # unencrypted, and Postgres and librdkafka read it too.
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ca.key" 2>/dev/null
  openssl req -new -x509 -config "$work/openssl.cnf" -extensions ca -key "$work/ca.key" \
    -subj "/CN=callstream deployment CA" -days 3650 -out "$work/ca.pem"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/host.key" 2>/dev/null
  openssl req -new -config "$work/openssl.cnf" -key "$work/host.key" \
    -subj "/CN=$BROKER_CN" -out "$work/host.csr"
  openssl x509 -req -in "$work/host.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 \
    -extfile "$work/openssl.cnf" -extensions host -out "$work/host.crt" 2>/dev/null
  openssl verify -CAfile "$work/ca.pem" "$work/host.crt" > /dev/null
  # The chain a server presents: its certificate, then the CA's.
  cat "$work/host.crt" "$work/ca.pem" | put 0:0 0600 "$SRC/host.pem"
  put 0:0 0600 "$SRC/host.key" < "$work/host.key"
  put 0:0 0600 "$SRC/ca.pem" < "$work/ca.pem"
  rm -rf "$work"
fi
put 0:0 0644 "$S/ca.pem" < "$SRC/ca.pem"

# --- Kafka -----------------------------------------------------------------------------------
# The cluster id: 16 random bytes as Kafka writes a Uuid (base64url, no padding), never
# starting with `-`.
if [ ! -s "$SRC/kafka-cluster.id" ]; then
  while :; do
    id=$(openssl rand -base64 16 | tr '+/' '-_' | tr -d '=\n')
    case "$id" in -*) ;; *) break ;; esac
  done
  echo "$id" | put 0:0 0600 "$SRC/kafka-cluster.id"
fi

dir "$KAFKA_UID:$KAFKA_UID" "$S/kafka"
dir "$ADMIN_UID:$GID" "$S/admin"
put "$KAFKA_UID:$KAFKA_UID" 0600 "$S/kafka/cluster.id" < "$SRC/kafka-cluster.id"
put "$KAFKA_UID:$KAFKA_UID" 0600 "$S/kafka/broker.pem" < "$SRC/host.pem"
put "$KAFKA_UID:$KAFKA_UID" 0600 "$S/kafka/broker.key" < "$SRC/host.key"

# The SCRAM users for `kafka-storage.sh format`, an argument file (one argument a line): the
# passwords never appear on a command line. The format runs once, on empty storage; a
# password changed later is changed on the cluster by hand (README.md, "Deploying with Docker").
: > "$SRC/scram.args.new"
for u in $KAFKA_USERS; do
  pw=$(password "$u")
  printf '%s\n' --add-scram "SCRAM-SHA-512=[name=$u,password=$pw]" >> "$SRC/scram.args.new"
  uid=$(owner_of "$u")
  if [ -n "$uid" ]; then
    dir "$uid:$GID" "$S/$u"
    printf '%s\n' "$pw" | put "$uid:$GID" 0600 "$S/$u/$u.password"
  else
    # admin and control: the operators' tools (topics, cli).
    printf '%s\n' "$pw" | put "$ADMIN_UID:$GID" 0600 "$S/admin/$u.password"
  fi
done
put "$KAFKA_UID:$KAFKA_UID" 0600 "$S/kafka/scram.args" < "$SRC/scram.args.new"
rm -f "$SRC/scram.args.new"

# admin's settings for Kafka's own tools in the kafka image (the acls service, healthchecks).
admin_pw=$(password admin)
put "$KAFKA_UID:$KAFKA_UID" 0600 "$S/kafka/admin.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$admin_pw";
ssl.truststore.type=PEM
ssl.truststore.location=/secrets/ca.pem
EOF

# --- Postgres --------------------------------------------------------------------------------
url() { # url ROLE PASSWORD
  printf 'postgres://%s:%s@postgres:5432/%s?sslmode=verify-full&sslrootcert=/secrets/ca.pem\n' "$1" "$2" "$DB"
}
dir "$POSTGRES_UID:$POSTGRES_UID" "$S/postgres"
put "$POSTGRES_UID:$POSTGRES_UID" 0644 "$S/postgres/server.crt" < "$SRC/host.pem"
# Postgres refuses a key that its group or others may read.
put "$POSTGRES_UID:$POSTGRES_UID" 0600 "$S/postgres/server.key" < "$SRC/host.key"
pg_admin=$(password postgres-admin)
printf '%s\n' "$pg_admin" | put "$POSTGRES_UID:$POSTGRES_UID" 0600 "$S/postgres/postgres-admin.password"
url postgres "$pg_admin" | put "$ADMIN_UID:$GID" 0600 "$S/admin/postgres-admin.database-url"
for role in $PG_ROLES; do
  pw=$(password "$role")
  # db-roles sets these passwords (`callstream db roles --apply --password-dir /secrets/admin`).
  printf '%s\n' "$pw" | put "$ADMIN_UID:$GID" 0600 "$S/admin/$role.password"
  # The operators' tools may act as any role (tokens as the operator, a rebuild as the
  # projections, migrations as the owner).
  url "$role" "$pw" | put "$ADMIN_UID:$GID" 0600 "$S/admin/$role.database-url"
done
pw=$(password callstream_projections)
url callstream_projections "$pw" |
  put "$(owner_of projections):$GID" 0600 "$S/projections/callstream_projections.database-url"
pw=$(password callstream_operator)
url callstream_operator "$pw" |
  put "$(owner_of operator-api):$GID" 0600 "$S/operator-api/callstream_operator.database-url"
# The schema registry's role (apicurio, its own database): registry-db sets it, the registry
# reads it.
pw=$(password apicurio)
printf '%s\n' "$pw" | put "$ADMIN_UID:$GID" 0600 "$S/admin/apicurio.password"
dir "$REGISTRY_UID:$GID" "$S/registry"
printf '%s\n' "$pw" | put "$REGISTRY_UID:$GID" 0600 "$S/registry/apicurio.password"

if [ -n "$made" ]; then
  say "made the passwords of$made in $SRC"
fi
if [ -n "$formatted" ] && [ -n "$made_kafka" ]; then
  # The cluster knows the passwords its storage was formatted with, not these.
  say "give the cluster each new Kafka password:" \
    "docker compose exec kafka-1 bash /etc/callstream/kafka/scram-password.sh USER (for$made_kafka)"
fi
say "ready: CA, host certificate ($SANS), $(echo "$KAFKA_USERS" | wc -w) Kafka users, Postgres roles postgres $PG_ROLES"
