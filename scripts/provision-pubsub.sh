#!/usr/bin/env bash
# Build Google's in-memory Pub/Sub fake (cloud.google.com/go/pubsub/v2/pstest, wrapped by the few
# lines in scripts/pstest/main.go) with the Go toolchain, its modules coming from the Go module
# proxy only, into a cache directory, once; print the binary's path on stdout (the only thing
# printed there; progress goes to stderr).
#
# Idempotent: the cache is keyed by a hash of scripts/pstest/{go.mod,go.sum,main.go}, so a build
# is reused until those change. Tests start the fake themselves (127.0.0.1, a free port;
# test/support/pubsub.ts); this script never starts it.
#
# Usage:  PSTEST="$(bash scripts/provision-pubsub.sh)"
# Env:    LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-pubsub: %s\n' "$*" >&2; }

SRC="$(cd "$(dirname "$0")" && pwd)/pstest"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"

command -v go >/dev/null 2>&1 || { log "the Go toolchain (go) is required to build the Pub/Sub fake"; exit 1; }
command -v sha256sum >/dev/null 2>&1 || { log "sha256sum is required"; exit 1; }

key="$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-16)"
DIR="$CACHE/pstest-$key"
BIN="$DIR/pstest"

if [[ -x "$BIN" && -f "$DIR/.complete" ]]; then
  log "using cached Pub/Sub fake ($key)"
  printf '%s\n' "$BIN"
  exit 0
fi

mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if [[ -x "$BIN" && -f "$DIR/.complete" ]]; then
    log "using the Pub/Sub fake built by a concurrent run"
    printf '%s\n' "$BIN"
    exit 0
  fi
fi

log "building cloud.google.com/go/pubsub/v2/pstest ($(go version | cut -d' ' -f3))"
started=$SECONDS
# -mod=readonly: go.mod/go.sum are the pinned versions; the build never edits them.
(cd "$SRC" && GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$BIN.partial" .) >&2
mv "$BIN.partial" "$BIN"
touch "$DIR/.complete"
log "Pub/Sub fake ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
