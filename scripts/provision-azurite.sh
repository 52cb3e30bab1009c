#!/usr/bin/env bash
# Install Azurite (npm package `azurite`, Microsoft's Azure Storage emulator; its Blob service
# honours If-Match / If-None-Match) with npm into a cache directory of its own — never into this
# project's package.json — once, and print the path of its `azurite-blob` launcher on stdout (the
# only thing printed there; progress goes to stderr).
#
# Idempotent: a complete cached install of the pinned version is reused without touching the
# network. Tests start the Blob service themselves (127.0.0.1, a free port;
# test/support/objectstores.ts); this script never starts it.
#
# Usage:  AZURITE_BLOB="$(bash scripts/provision-azurite.sh)"
# Env:    AZURITE_VERSION (default 3.37.0), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-azurite: %s\n' "$*" >&2; }

VERSION="${AZURITE_VERSION:-3.37.0}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/azurite-$VERSION"
BIN="$DIR/node_modules/.bin/azurite-blob"

cached() { [[ -x "$BIN" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached Azurite $VERSION"
  printf '%s\n' "$BIN"
  exit 0
fi

command -v npm >/dev/null 2>&1 || { log "npm is required to install Azurite"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using Azurite $VERSION installed by a concurrent run"
    printf '%s\n' "$BIN"
    exit 0
  fi
fi

log "installing azurite@$VERSION"
started=$SECONDS
# A package.json of the cache's own keeps npm from walking up into any enclosing project.
printf '{ "name": "lakelogic-azurite-cache", "private": true }\n' > "$DIR/package.json"
# Azurite declares node >= 22 but its Blob service runs on the Node 20 this project supports;
# --engine-strict=false keeps npm from refusing it. --ignore-scripts: the emulator needs none.
(cd "$DIR" && npm install --no-audit --no-fund --ignore-scripts --engine-strict=false \
  --save-exact "azurite@$VERSION") >&2
[[ -x "$BIN" ]] || { log "npm finished but $BIN is missing"; exit 1; }
touch "$DIR/.complete"
log "Azurite $VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
