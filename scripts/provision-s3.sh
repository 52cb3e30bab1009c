#!/usr/bin/env bash
# Install moto in server mode (PyPI `moto[server]`, an S3 API emulator that honours the
# If-Match / If-None-Match preconditions of PutObject) into a private Python virtual environment
# in a cache directory, once, and print the path of its `moto_server` launcher on stdout (the only
# thing printed there; progress goes to stderr).
#
# Idempotent: a complete cached environment for the pinned version is reused without touching
# the network. Tests start the server themselves (127.0.0.1, a free port;
# test/support/objectstores.ts); this script never starts it.
#
# Usage:  MOTO_SERVER="$(bash scripts/provision-s3.sh)"
# Env:    MOTO_VERSION (default 5.2.5), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-s3: %s\n' "$*" >&2; }

VERSION="${MOTO_VERSION:-5.2.5}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/moto-$VERSION"
BIN="$DIR/venv/bin/moto_server"

cached() { [[ -x "$BIN" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached moto $VERSION"
  printf '%s\n' "$BIN"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 (3.9 or newer, with venv) is required to install moto"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using moto $VERSION installed by a concurrent run"
    printf '%s\n' "$BIN"
    exit 0
  fi
fi

log "installing moto[server]==$VERSION into a private virtual environment"
started=$SECONDS
rm -rf "$DIR/venv"
python3 -m venv "$DIR/venv" >&2
"$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$VERSION" >&2
# Smoke test: the launcher imports (starting it here would block).
"$DIR/venv/bin/python" -c 'import moto.server' >&2
[[ -x "$BIN" ]] || { log "pip finished but $BIN is missing"; exit 1; }
touch "$DIR/.complete"
log "moto $VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
