#!/usr/bin/env bash
# Build fake-gcs-server (github.com/fsouza/fake-gcs-server, a GCS JSON-API emulator that honours
# ifGenerationMatch preconditions) with the Go toolchain, its modules coming from the Go module
# proxy only, into a cache directory, once; print the binary's path on stdout (the only thing
# printed there; progress goes to stderr).
#
# Idempotent: a complete cached build of the pinned version is reused without touching the
# network (the first build takes a few minutes). Tests start the server themselves (127.0.0.1, a
# free port; test/support/objectstores.ts); this script never starts it.
#
# Usage:  FAKE_GCS="$(bash scripts/provision-gcs.sh)"
# Env:    FAKE_GCS_VERSION (default 1.56.1), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-gcs: %s\n' "$*" >&2; }

VERSION="${FAKE_GCS_VERSION:-1.56.1}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/fake-gcs-server-$VERSION"
BIN="$DIR/fake-gcs-server"

cached() { [[ -x "$BIN" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached fake-gcs-server $VERSION"
  printf '%s\n' "$BIN"
  exit 0
fi

command -v go >/dev/null 2>&1 || { log "the Go toolchain (go) is required to build fake-gcs-server"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using fake-gcs-server $VERSION built by a concurrent run"
    printf '%s\n' "$BIN"
    exit 0
  fi
fi

log "building fake-gcs-server v$VERSION ($(go version | cut -d' ' -f3); first time only, a few minutes)"
started=$SECONDS
# Built into a staging directory and moved into place, so an interrupted build is never cached.
staging="$(mktemp -d "$DIR/bin.partial.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
GOBIN="$staging" GOFLAGS=-trimpath CGO_ENABLED=0 go install "github.com/fsouza/fake-gcs-server@v$VERSION" >&2
mv "$staging/fake-gcs-server" "$BIN"
touch "$DIR/.complete"
log "fake-gcs-server $VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
