#!/bin/sh
# One-shot in docker-compose.yml (registry-db): the schema registry's Postgres role and
# database, as the administrator, with the password of the secrets volume. Run at every `up`:
# a changed password takes effect here. Never on a command line: psql reads it from a variable.
set -eu
pw=$(tr -d '\r\n' < /secrets/admin/apicurio.password)
psql "$(cat /secrets/admin/postgres-admin.database-url)" -v ON_ERROR_STOP=1 -v pw="$pw" <<'SQL'
select 'create role apicurio login' where not exists (select 1 from pg_roles where rolname = 'apicurio') \gexec
select format('alter role apicurio password %L', :'pw') \gexec
select 'create database apicurio owner apicurio' where not exists (select 1 from pg_database where datname = 'apicurio') \gexec
SQL
echo "registry-db: role and database apicurio ready"
