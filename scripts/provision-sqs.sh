#!/usr/bin/env bash
# Fetch an SQS-compatible server — ElasticMQ (org.elasticmq:elasticmq-server_2.13 and its runtime
# dependencies) — from Maven Central into a cache directory, once, and print that lib directory on
# stdout (the only thing printed there; progress goes to stderr). The jars are listed in
# scripts/sqs/pom.xml.
#
# Idempotent: a complete cache is reused without touching the network. Tests start the server
# themselves (127.0.0.1, a free port; test/support/sqs.ts); this script never starts it.
#
# Usage:  SQS_LIB="$(bash scripts/provision-sqs.sh)"
# Env:    ELASTICMQ_VERSION (default 1.6.14), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-sqs: %s\n' "$*" >&2; }

VERSION="${ELASTICMQ_VERSION:-1.6.14}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
HOME_DIR="$CACHE/elasticmq-$VERSION"
LIB="$HOME_DIR/lib"
POM="$(cd "$(dirname "$0")" && pwd)/sqs/pom.xml"
JAR="elasticmq-server_2.13-$VERSION.jar"

command -v java >/dev/null 2>&1 || { log "java is required (ElasticMQ runs on Java 11 or newer)"; exit 1; }

# Smoke test: the jar holds the server's main class (starting it here would block).
elasticmq_smoke() {
  if command -v jar >/dev/null 2>&1 && ! jar tf "$1/$JAR" | grep -q '^org/elasticmq/server/Main'; then
    log "the fetched $JAR has no org.elasticmq.server.Main"
    return 1
  fi
}

# shellcheck source=lib/maven-jars.sh
source "$(dirname "$0")/lib/maven-jars.sh"
maven_jars ElasticMQ "$POM" elasticmq.version "$VERSION" "$JAR" "$LIB" elasticmq_smoke
