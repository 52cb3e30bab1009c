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

cached() { [[ -f "$LIB/.complete" && -f "$LIB/$JAR" ]]; }

# The marker is written last, so an interrupted download is never mistaken for a cache.
if cached; then
  log "using cached ElasticMQ $VERSION"
  printf '%s\n' "$LIB"
  exit 0
fi

command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is required to fetch ElasticMQ from Maven Central"; exit 1; }
mkdir -p "$HOME_DIR"
# Two test files may provision at once: one fetches, the other waits and reuses its result.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$HOME_DIR/.lock"
  flock 9
  if cached; then
    log "using ElasticMQ $VERSION fetched by a concurrent run"
    printf '%s\n' "$LIB"
    exit 0
  fi
fi
staging="$(mktemp -d "$HOME_DIR/lib.partial.XXXXXX")"
trap 'rm -rf "$staging"' EXIT

log "fetching org.elasticmq:elasticmq-server_2.13:$VERSION and its runtime dependencies"
started=$SECONDS
mvn -B -q -Dstyle.color=never -f "$POM" -Delasticmq.version="$VERSION" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >&2

if [[ ! -f "$staging/$JAR" ]]; then
  log "Maven finished but $JAR is missing from the copied dependencies"
  exit 1
fi

# Smoke test: the jar holds the server's main class (starting it here would block).
if command -v jar >/dev/null 2>&1; then
  if ! jar tf "$staging/$JAR" | grep -q '^org/elasticmq/server/Main'; then
    log "the fetched $JAR has no org.elasticmq.server.Main"
    exit 1
  fi
fi

rm -rf "$LIB"
mv "$staging" "$LIB"
trap - EXIT
touch "$LIB/.complete"
log "ElasticMQ $VERSION ready in $((SECONDS - started))s ($(ls "$LIB" | grep -c '\.jar$') jars)"
printf '%s\n' "$LIB"
