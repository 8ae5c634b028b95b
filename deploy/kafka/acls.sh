#!/bin/bash
# docker-compose.yml's one-shot `acls` service: makes the ACLs of callstream's Kafka users
# those of acls.tsv beside this script (xtask/src/cluster/acls.rs, rendered by its test), as
# `admin` over SASL_SSL, with Kafka's own kafka-acls.sh:
#   - adds the bindings the cluster lacks,
#   - removes the bindings of the table's users that the table no longer has (a row taken out
#     of the table is taken off the cluster),
#   - leaves the bindings of any other user alone.
# One kafka-acls.sh run lists what is in force; when nothing differs, that is all. Bindings
# that differ are applied in as few runs as cover them exactly (each run adds every
# principal x operation x resource it names), as each run is a JVM start.
set -euo pipefail
shopt -s inherit_errexit
set -f # resource names are never globs

file=/etc/callstream/kafka/acls.tsv
config=/secrets/kafka/admin.properties
bootstrap=kafka-1:9092,kafka-2:9092,kafka-3:9092
prefix=${CALLSTREAM_TOPIC_PREFIX:-}
export LC_ALL=C

say() { echo "acls: $*"; }

# The table names its topics and processors' ids for one prefix (its header says which).
if ! grep -qF "(topic prefix \"$prefix\")" "$file"; then
  say "$file is not the table for topic prefix \"$prefix\" (CALLSTREAM_TOPIC_PREFIX; its header" \
    "says which it is): put the table rendered for that prefix in its place" \
    "(acls::render in xtask/src/cluster/acls.rs)" >&2
  exit 1
fi

kafka_acls() {
  /opt/kafka/bin/kafka-acls.sh --bootstrap-server "$bootstrap" --command-config "$config" "$@"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

grep -v '^#' "$file" | awk 'NF' | sort -u > "$work/wanted"
cut -f1 "$work/wanted" | sort -u > "$work/users"

# What is in force, in the table's format. kafka-acls.sh --list prints
#   Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=call-events, patternType=LITERAL)`:
#    	(principal=User:gateway, host=*, operation=WRITE, permissionType=ALLOW)
# Only bindings from any host (`*`) are compared: the table has no other.
list() {
  kafka_acls --list | awk '
    /^Current ACLs for resource `ResourcePattern\(/ {
      s = $0
      sub(/^Current ACLs for resource `ResourcePattern\(resourceType=/, "", s)
      type = s; sub(/,.*/, "", type)
      pattern = s; sub(/.*, patternType=/, "", pattern); sub(/\).*/, "", pattern)
      name = s; sub(/^[^,]*, name=/, "", name); sub(/, patternType=.*/, "", name)
      next
    }
    /^[ \t]*\(principal=/ {
      s = $0
      sub(/^[ \t]*\(principal=/, "", s)
      principal = s; sub(/, host=.*/, "", principal)
      host = s; sub(/.*, host=/, "", host); sub(/, operation=.*/, "", host)
      op = s; sub(/.*, operation=/, "", op); sub(/, permissionType=.*/, "", op)
      permission = s; sub(/.*, permissionType=/, "", permission); sub(/\).*/, "", permission)
      if (host == "*") print principal "\t" type "\t" pattern "\t" name "\t" op "\t" permission
    }'
}

# A broker that has just joined may not serve ACL requests yet (its authorizer loads from the
# metadata log): a few tries.
for try in 1 2 3 4 5 6; do
  if list > "$work/listed" 2> "$work/list.err"; then
    break
  fi
  if [ "$try" -eq 6 ]; then
    cat "$work/list.err" >&2
    say "listing the ACLs failed" >&2
    exit 1
  fi
  sleep 5
done
sort -u "$work/listed" > "$work/current"

# Wanted and not in force; in force for one of the table's users and not wanted (stale).
awk 'NR == FNR { current[$0]; next } !($0 in current)' "$work/current" "$work/wanted" > "$work/add"
awk -F '\t' 'NR == FNR { users[$1]; next } $1 in users' "$work/users" "$work/current" |
  awk 'NR == FNR { wanted[$0]; next } !($0 in wanted)' "$work/wanted" - > "$work/remove"

# Groups bindings into runs, each added (or removed) by one kafka-acls.sh, which takes every
# principal x operation x resource it is given: first the operations of each name, then the
# names with the same operations, then the principals with the same operations on the same
# names. Sorted input in, so the same bindings always make the same runs. Prints one run a
# line: permission, type, pattern, then operations, names and principals, comma-separated.
# (Field 1 of each stage's input is what it gathers, the rest its key.)
group() {
  gather() {
    awk -F '\t' -v OFS='\t' '{
      v = $1; k = $2; for (i = 3; i <= NF; i++) k = k OFS $i
      if (k in acc) acc[k] = acc[k] "," v; else { acc[k] = v; order[++n] = k }
    } END { for (i = 1; i <= n; i++) print order[i], acc[order[i]] }'
  }
  # principal type pattern name operation permission
  awk -F '\t' -v OFS='\t' '{ print $5, $1, $6, $2, $3, $4 }' "$1" | sort | gather |
    # principal permission type pattern name operations
    awk -F '\t' -v OFS='\t' '{ print $5, $1, $2, $3, $4, $6 }' | sort | gather |
    # principal permission type pattern operations names
    sort | gather |
    # permission type pattern operations names principals
    sort
}

# apply --add|--remove FILE
apply() {
  local action=$1 runs=0 permission type pattern ops names principals p o n
  local -a args
  while IFS=$'\t' read -r permission type pattern ops names principals; do
    args=("$action" --force --resource-pattern-type "${pattern,,}")
    for p in ${principals//,/ }; do
      if [ "$permission" = DENY ]; then
        args+=(--deny-principal "$p")
      else
        args+=(--allow-principal "$p")
      fi
    done
    # kafka-acls.sh spells DESCRIBE_CONFIGS as DescribeConfigs (or DESCRIBECONFIGS).
    for o in ${ops//,/ }; do args+=(--operation "${o//_/}"); done
    case "$type" in
      CLUSTER) args+=(--cluster) ;;
      TOPIC) for n in ${names//,/ }; do args+=(--topic "$n"); done ;;
      GROUP) for n in ${names//,/ }; do args+=(--group "$n"); done ;;
      TRANSACTIONAL_ID) for n in ${names//,/ }; do args+=(--transactional-id "$n"); done ;;
      *)
        say "unknown resource type $type" >&2
        exit 1
        ;;
    esac
    if ! kafka_acls "${args[@]}" > "$work/run.out" 2>&1; then
      cat "$work/run.out" >&2
      say "kafka-acls.sh $action failed" >&2
      exit 1
    fi
    runs=$((runs + 1))
  done < <(group "$2")
  echo "$runs"
}

added=$(wc -l < "$work/add")
removed=$(wc -l < "$work/remove")
if [ "$added" -gt 0 ]; then
  say "adding $added bindings ..."
  runs=$(apply --add "$work/add")
  say "added in $runs runs of kafka-acls.sh"
fi
if [ "$removed" -gt 0 ]; then
  say "removing $removed bindings the table no longer has:"
  sed 's/^/acls:   /' "$work/remove"
  runs=$(apply --remove "$work/remove")
  say "removed in $runs runs of kafka-acls.sh"
fi
say "$(wc -l < "$work/wanted") bindings of $(wc -l < "$work/users") users in force ($added added, $removed removed)"
