#!/usr/bin/env bash
# Install delta-rs (PyPI `deltalake`, with `pyarrow`) into a private Python virtual environment in
# a cache directory, once, and print the path of its `python` on stdout (the only thing printed
# there; progress goes to stderr). format: delta writes through it (delta/helper.py), and the
# tests read the tables back with it: a reader this project did not write.
#
# Idempotent: a complete cached environment for the pinned version is reused without touching
# the network. Another Python with deltalake and pyarrow may be named by LAKELOGIC_DELTA_PYTHON
# instead (src/lake/delta-helper.ts).
#
# Usage:  DELTA_PYTHON="$(bash scripts/provision-deltalake.sh)"
# Env:    DELTALAKE_VERSION (default 1.6.6, as src/lake/delta-helper.ts pins), PYARROW_VERSION
#         (default 26.0.1), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-deltalake: %s\n' "$*" >&2; }

VERSION="${DELTALAKE_VERSION:-1.6.6}"
PYARROW="${PYARROW_VERSION:-26.0.1}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/deltalake-$VERSION"
BIN="$DIR/venv/bin/python"

cached() { [[ -x "$BIN" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached deltalake $VERSION"
  printf '%s\n' "$BIN"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 (3.9 or newer, with venv) is required to install deltalake"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using deltalake $VERSION installed by a concurrent run"
    printf '%s\n' "$BIN"
    exit 0
  fi
fi

log "installing deltalake==$VERSION and pyarrow==$PYARROW into a private virtual environment"
started=$SECONDS
rm -rf "$DIR/venv"
python3 -m venv "$DIR/venv" >&2
"$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "deltalake==$VERSION" "pyarrow==$PYARROW" >&2
"$DIR/venv/bin/python" -c 'import deltalake, pyarrow; from deltalake import CommitProperties, Transaction' >&2
touch "$DIR/.complete"
log "deltalake $VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
