#!/bin/bash
# The entrypoint of docker-compose.yml's brokers (kafka-1, kafka-2, kafka-3): formats the
# node's storage once, with the SCRAM users, then runs the apache/kafka image's own start
# (/etc/kafka/docker/run), which writes server.properties from the KAFKA_* variables and
# starts the broker. The image's start cannot add SCRAM users, and a storage it has formatted
# without them cannot get them from a format any more, hence the format here first.
set -euo pipefail

dir=/secrets/kafka
data=${KAFKA_LOG_DIRS:?KAFKA_LOG_DIRS is not set}
for f in cluster.id broker.pem broker.key scram.args; do
  if [ ! -r "$dir/$f" ]; then
    echo "broker: cannot read $dir/$f as uid $(id -u); the secrets service makes it for uid 1000" >&2
    exit 1
  fi
done

CLUSTER_ID=$(tr -d '\r\n' < "$dir/cluster.id")
export CLUSTER_ID
# The key store is PEM, inline (Kafka reads an unencrypted PKCS#8 key only from
# ssl.keystore.key): each line end escaped as `\n`, as a .properties value needs.
pem() { awk '{ printf "%s\\n", $0 }' "$1"; }
KAFKA_SSL_KEYSTORE_CERTIFICATE_CHAIN=$(pem "$dir/broker.pem")
KAFKA_SSL_KEYSTORE_KEY=$(pem "$dir/broker.key")
export KAFKA_SSL_KEYSTORE_CERTIFICATE_CHAIN KAFKA_SSL_KEYSTORE_KEY

# The properties the KAFKA_* variables make, as the image names them (lower case, `_` a dot,
# `__` an underscore, `___` a dash), for the format to read the same configuration.
properties() {
  local name key
  for name in $(compgen -e); do
    case "$name" in
      KAFKA_VERSION | KAFKA_HEAP_OPTS | KAFKA_LOG4J_OPTS | KAFKA_OPTS | KAFKA_JMX_OPTS | \
        KAFKA_JVM_PERFORMANCE_OPTS | KAFKA_GC_LOG_OPTS | KAFKA_LOG4J_ROOT_LOGLEVEL | \
        KAFKA_LOG4J_LOGGERS | KAFKA_TOOLS_LOG4J_LOGLEVEL | KAFKA_JMX_HOSTNAME) continue ;;
      KAFKA_*) ;;
      *) continue ;;
    esac
    key=${name#KAFKA_}
    key=${key,,}
    key=${key//_/.}
    key=${key//.../-}
    key=${key//../_}
    printf '%s=%s\n' "$key" "${!name}"
  done
}

if [ ! -e "$data/meta.properties" ]; then
  echo "broker: formatting $data (cluster $CLUSTER_ID) with the SCRAM-SHA-512 users of $dir/scram.args"
  config=$(mktemp) # holds the key: mode 0600, deleted below
  properties > "$config"
  # The users and their passwords come from an argument file (`@file`, one argument a
  # line), never the command line, where `ps` would show them.
  status=0
  /opt/kafka/bin/kafka-storage.sh format --ignore-formatted --cluster-id "$CLUSTER_ID" \
    --config "$config" "@$dir/scram.args" || status=$?
  rm -f "$config"
  if [ "$status" -ne 0 ]; then
    echo "broker: kafka-storage.sh format failed ($status)" >&2
    exit "$status"
  fi
fi

# The image's start formats too; it finds the storage formatted and goes on.
exec /etc/kafka/docker/run
