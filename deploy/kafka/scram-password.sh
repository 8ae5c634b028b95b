#!/bin/bash
# Gives Kafka user USER on the running cluster the SCRAM-SHA-512 password the secrets volume
# has for it now: the step of a password change that the storage format (first start only)
# cannot do. Run in a broker's container, after the `secrets` service has written the new
# password (README.md, "Deploying with Docker", says the whole change):
#   docker compose exec kafka-1 bash /etc/callstream/kafka/scram-password.sh USER
# It connects with the broker certificate over the brokers' mutual-TLS listener (a super
# user), so it works for `admin` too, whose old password is gone by then. The password
# reaches the tool in a java argument file (`@file`), never on a command line, where `ps`
# would show it (kafka-configs.sh takes SCRAM credentials from its command line alone).
set -euo pipefail

user=${1:?usage: scram-password.sh USER}
dir=/secrets/kafka
line=$(grep -F "SCRAM-SHA-512=[name=$user,password=" "$dir/scram.args") || {
  echo "scram-password: no user $user in $dir/scram.args" >&2
  exit 1
}
password=${line#*,password=}
password=${password%]}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The key store inline, line ends escaped, as broker.sh gives it to the broker.
pem() { awk '{ printf "%s\\n", $0 }' "$1"; }
{
  echo "security.protocol=SSL"
  echo "ssl.keystore.type=PEM"
  echo "ssl.keystore.certificate.chain=$(pem "$dir/broker.pem")"
  echo "ssl.keystore.key=$(pem "$dir/broker.key")"
  echo "ssl.truststore.type=PEM"
  echo "ssl.truststore.location=/secrets/ca.pem"
} > "$work/client.properties"
# What kafka-configs.sh would run, one argument a line (none has a space).
printf '%s\n' kafka.admin.ConfigCommand \
  --bootstrap-server kafka-1:9094,kafka-2:9094,kafka-3:9094 \
  --command-config "$work/client.properties" \
  --alter --entity-type users --entity-name "$user" \
  --add-config "SCRAM-SHA-512=[password=$password]" > "$work/args"
/opt/kafka/bin/kafka-run-class.sh "@$work/args"
