#!/usr/bin/env bash
# Fetch a schema registry that serves the Confluent Schema Registry API — Apicurio Registry
# (io.apicurio:apicurio-registry-app, the `all` zip: a Quarkus runner jar and its lib/ folder,
# in-memory storage, Java 17) — from Maven Central into a cache directory, once, and print that
# directory on stdout (the only thing printed there; progress goes to stderr). Its Confluent-
# compatible API is at /apis/ccompat/v7.
#
# Idempotent: a complete cache is reused without touching the network. Tests start the server
# themselves (127.0.0.1, a free port; test/support/schema-registry.ts); this script never starts it.
#
# Usage:  REGISTRY_HOME="$(bash scripts/provision-schema-registry.sh)"
# Env:    APICURIO_VERSION (default 2.6.13.Final; 3.x needs Java 21), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-schema-registry: %s\n' "$*" >&2; }

VERSION="${APICURIO_VERSION:-2.6.13.Final}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
HOME_DIR="$CACHE/apicurio-registry-$VERSION"
RUNNER="apicurio-registry-app-$VERSION-runner.jar"

cached() { [[ -f "$HOME_DIR/.complete" && -f "$HOME_DIR/$RUNNER" ]]; }
if cached; then
  log "using cached Apicurio Registry $VERSION"
  printf '%s\n' "$HOME_DIR"
  exit 0
fi

command -v java >/dev/null 2>&1 || { log "java is required (Apicurio Registry 2.x runs on Java 11 or newer)"; exit 1; }
command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is required to fetch Apicurio Registry from Maven Central"; exit 1; }
command -v unzip >/dev/null 2>&1 || { log "unzip is required to unpack the Apicurio Registry distribution"; exit 1; }

mkdir -p "$CACHE"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.apicurio-registry-$VERSION.lock"
  flock 9
  if cached; then
    log "using Apicurio Registry $VERSION fetched by a concurrent run"
    printf '%s\n' "$HOME_DIR"
    exit 0
  fi
fi

started=$SECONDS
staging="$(mktemp -d "$CACHE/apicurio-registry.partial.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
log "fetching io.apicurio:apicurio-registry-app:$VERSION (zip, classifier all)"
mvn -B -q -Dstyle.color=never dependency:copy \
  -Dartifact="io.apicurio:apicurio-registry-app:$VERSION:zip:all" -DoutputDirectory="$staging/zip" >&2
unzip -q "$staging/zip/apicurio-registry-app-$VERSION-all.zip" -d "$staging/home"
rm -rf "$staging/zip"
# Smoke test: the runner jar is there and names its main class (starting it here would block).
if [[ ! -f "$staging/home/$RUNNER" || ! -d "$staging/home/lib" ]]; then
  log "the fetched zip holds no $RUNNER with a lib/ folder"
  exit 1
fi
if command -v unzip >/dev/null 2>&1 && ! unzip -p "$staging/home/$RUNNER" META-INF/MANIFEST.MF | grep -q '^Main-Class:'; then
  log "$RUNNER has no Main-Class"
  exit 1
fi
rm -rf "$HOME_DIR"
mv "$staging/home" "$HOME_DIR"
touch "$HOME_DIR/.complete"
log "Apicurio Registry $VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$HOME_DIR"
