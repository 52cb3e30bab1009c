#!/usr/bin/env bash
# Fetch an Apache Kafka broker (org.apache.kafka:kafka_2.13 and its runtime dependencies) from
# Maven Central into a cache directory, once, and print that lib directory on stdout (the only
# thing printed there; progress goes to stderr). The jars are listed in scripts/kafka/pom.xml.
#
# Idempotent: a complete cache is reused without touching the network. Tests start the broker
# themselves (KRaft single node on 127.0.0.1, test/support/kafka.ts); this script never starts it.
#
# Usage:  KAFKA_LIB="$(bash scripts/provision-kafka.sh)"
# Env:    KAFKA_VERSION (default 4.1.1), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-kafka: %s\n' "$*" >&2; }

VERSION="${KAFKA_VERSION:-4.1.1}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
HOME_DIR="$CACHE/kafka-$VERSION"
LIB="$HOME_DIR/lib"
POM="$(cd "$(dirname "$0")" && pwd)/kafka/pom.xml"

command -v java >/dev/null 2>&1 || { log "java is required (Kafka 4 needs Java 17 or newer)"; exit 1; }
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -n1)"
if [[ -z "$java_major" || "${java_major%%.*}" -lt 17 ]]; then
  log "Kafka $VERSION needs Java 17 or newer; found '${java_major:-unknown}'"
  exit 1
fi

cached() { [[ -f "$LIB/.complete" && -f "$LIB/kafka_2.13-$VERSION.jar" ]]; }

# The marker is written last, so an interrupted download is never mistaken for a cache.
if cached; then
  log "using cached Kafka $VERSION"
  printf '%s\n' "$LIB"
  exit 0
fi

command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is required to fetch Kafka from Maven Central"; exit 1; }
mkdir -p "$HOME_DIR"
# Two test files may provision at once: one fetches, the other waits and reuses its result.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$HOME_DIR/.lock"
  flock 9
  if cached; then
    log "using Kafka $VERSION fetched by a concurrent run"
    printf '%s\n' "$LIB"
    exit 0
  fi
fi
staging="$(mktemp -d "$HOME_DIR/lib.partial.XXXXXX")"
trap 'rm -rf "$staging"' EXIT

log "fetching org.apache.kafka:kafka_2.13:$VERSION and its runtime dependencies"
started=$SECONDS
mvn -B -q -Dstyle.color=never -f "$POM" -Dkafka.version="$VERSION" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >&2

if [[ ! -f "$staging/kafka_2.13-$VERSION.jar" ]]; then
  log "Maven finished but kafka_2.13-$VERSION.jar is missing from the copied dependencies"
  exit 1
fi

# Smoke test: the storage tool (used to format KRaft storage) loads from this classpath.
if ! java -Xmx128m -cp "$staging/*" kafka.tools.StorageTool version >/dev/null 2>&1; then
  java -Xmx128m -cp "$staging/*" kafka.tools.StorageTool version >&2 || true
  log "the fetched jars do not run kafka.tools.StorageTool"
  exit 1
fi

rm -rf "$LIB"
mv "$staging" "$LIB"
trap - EXIT
touch "$LIB/.complete"
log "Kafka $VERSION ready in $((SECONDS - started))s ($(ls "$LIB" | grep -c '\.jar$') jars)"
printf '%s\n' "$LIB"
