#!/usr/bin/env bash
# Fetch the Python LakeLogic package's source distribution (PyPI `lakelogic`, the version this
# runtime is compatible with) and extract it into a cache directory, once; print the directory it
# extracted to on stdout (the only thing printed there; progress goes to stderr). Its examples/
# hold the package's own contracts, with their _domain.yaml / _system.yaml registries:
# test/examples/python-delta-contracts.test.ts runs each of them here.
#
# Idempotent: a complete cached extraction of the pinned version is reused without touching the
# network. Only the sdist is downloaded (`pip download --no-deps --no-binary :all:`); nothing is
# installed.
#
# Usage:  EXAMPLES="$(bash scripts/provision-python-examples.sh)"
# Env:    LAKELOGIC_PY_VERSION (default 1.84.0), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-python-examples: %s\n' "$*" >&2; }

VERSION="${LAKELOGIC_PY_VERSION:-1.84.0}"
# The sdist's digest for the default version: what was tested against is what is extracted.
SHA256_1_84_0="78857c4fea8221c1c5b27120bca76e4612d2aa627605cdddcfccbfa0d25ea74a"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/lakelogic-python-$VERSION"
OUT="$DIR/lakelogic-$VERSION"

cached() { [[ -d "$OUT/examples" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached lakelogic $VERSION sdist"
  printf '%s\n' "$OUT"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 with pip is required to download the lakelogic sdist"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using lakelogic $VERSION extracted by a concurrent run"
    printf '%s\n' "$OUT"
    exit 0
  fi
fi

PIP=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
  # No pip beside python3: a private virtual environment brings one.
  log "python3 has no pip; creating a virtual environment for it"
  python3 -m venv "$DIR/venv" >&2
  PIP=("$DIR/venv/bin/python" -m pip)
fi

log "downloading the lakelogic==$VERSION sdist"
started=$SECONDS
rm -rf "$DIR/download" "$OUT"
mkdir -p "$DIR/download"
"${PIP[@]}" download --quiet --disable-pip-version-check --no-deps --no-binary :all: -d "$DIR/download" "lakelogic==$VERSION" >&2
SDIST="$DIR/download/lakelogic-$VERSION.tar.gz"
[[ -f "$SDIST" ]] || { log "pip download did not produce $(basename "$SDIST")"; exit 1; }
if [[ "$VERSION" == "1.84.0" ]]; then
  actual="$(sha256sum "$SDIST" | cut -d' ' -f1)"
  [[ "$actual" == "$SHA256_1_84_0" ]] || { log "sha256 of $(basename "$SDIST") is $actual, expected $SHA256_1_84_0"; exit 1; }
fi
tar -xzf "$SDIST" -C "$DIR"
[[ -d "$OUT/examples" ]] || { log "the sdist has no examples/ directory"; exit 1; }
touch "$DIR/.complete"
log "lakelogic $VERSION sdist extracted in $((SECONDS - started))s"
printf '%s\n' "$OUT"
