#!/bin/sh
# The schema registry's entrypoint in docker-compose.yml: its Postgres password from the
# secrets volume (Apicurio reads it from the environment only), then the image's own start.
set -eu
APICURIO_DATASOURCE_PASSWORD=$(tr -d '\r\n' < /secrets/registry/apicurio.password)
export APICURIO_DATASOURCE_PASSWORD
exec /opt/jboss/container/java/run/run-java.sh "$@"
