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

# Smoke test: the storage tool (used to format KRaft storage) loads from this classpath.
kafka_smoke() {
  if ! java -Xmx128m -cp "$1/*" kafka.tools.StorageTool version >/dev/null 2>&1; then
    java -Xmx128m -cp "$1/*" kafka.tools.StorageTool version >&2 || true
    log "the fetched jars do not run kafka.tools.StorageTool"
    return 1
  fi
}

# shellcheck source=lib/maven-jars.sh
source "$(dirname "$0")/lib/maven-jars.sh"
maven_jars Kafka "$POM" kafka.version "$VERSION" "kafka_2.13-$VERSION.jar" "$LIB" kafka_smoke
