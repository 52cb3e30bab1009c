#!/usr/bin/env bash
# Build Google's in-memory Pub/Sub fake (cloud.google.com/go/pubsub/v2/pstest, wrapped by the few
# lines in scripts/pstest/main.go) with the Go toolchain, its modules coming from the Go module
# proxy only, into a cache directory, once; print the binary's path on stdout (the only thing
# printed there; progress goes to stderr).
#
# One change to the fake: it keeps a message that is not outstanding for 7 days after its
# publication, as the real service does by default, instead of pstest's 10 minutes (a constant,
# `retentionDuration` in pstest/fake.go). A consumer that is killed again and again (the chaos
# harness) can take longer than 10 minutes to get through its backlog, and the fake would then
# delete messages that were never acknowledged. The module is copied from the module cache, that
# one constant is rewritten, and the wrapper is built against the copy (a `replace` directive).
#
# Idempotent: the cache is keyed by a hash of scripts/pstest/{go.mod,go.sum,main.go} and of this
# script, so a build is reused until those change. Tests start the fake themselves (127.0.0.1, a free port;
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

key="$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
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
MODULE=cloud.google.com/go/pubsub/v2
BUILD="$DIR/build"
rm -rf "$BUILD" && mkdir -p "$BUILD"
cp "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" "$BUILD/"
# The pinned module version, downloaded (and checked against go.sum) by the Go toolchain.
moddir="$(cd "$BUILD" && GOFLAGS=-mod=readonly go mod download -json "$MODULE" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -n "$moddir" && -f "$moddir/pstest/fake.go" ]] || { log "could not locate $MODULE in the module cache"; exit 1; }
cp -R "$moddir" "$BUILD/pubsub" && chmod -R u+w "$BUILD/pubsub"
sed -i 's/^const retentionDuration = 10 \* time\.Minute$/const retentionDuration = 7 * 24 * time.Hour/' "$BUILD/pubsub/pstest/fake.go"
grep -q '^const retentionDuration = 7 \* 24 \* time\.Hour$' "$BUILD/pubsub/pstest/fake.go" \
  || { log "pstest/fake.go no longer declares retentionDuration as expected; update this script"; exit 1; }
(cd "$BUILD" && go mod edit -replace "$MODULE=./pubsub") >&2
# -mod=readonly: go.mod/go.sum are the pinned versions; the build never edits them.
(cd "$BUILD" && GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$BIN.partial" .) >&2
rm -rf "$BUILD"
mv "$BIN.partial" "$BIN"
touch "$DIR/.complete"
log "Pub/Sub fake ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
