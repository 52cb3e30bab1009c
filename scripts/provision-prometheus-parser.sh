#!/usr/bin/env bash
# Install the Prometheus Python client (PyPI `prometheus_client`, whose text-format parser the
# metrics tests use to read /metrics as Prometheus would) into a private Python virtual
# environment in a cache directory, once, and print the path of its `python` on stdout (the only
# thing printed there; progress goes to stderr).
#
# Idempotent: a complete cached environment for the pinned version is reused without touching
# the network.
#
# Usage:  PROM_PYTHON="$(bash scripts/provision-prometheus-parser.sh)"
# Env:    PROMETHEUS_CLIENT_VERSION (default 0.21.1), LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-prometheus-parser: %s\n' "$*" >&2; }

VERSION="${PROMETHEUS_CLIENT_VERSION:-0.21.1}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/prometheus-client-$VERSION"
BIN="$DIR/venv/bin/python"

cached() { [[ -x "$BIN" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached prometheus_client $VERSION"
  printf '%s\n' "$BIN"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 (3.9 or newer, with venv) is required to install prometheus_client"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using prometheus_client $VERSION installed by a concurrent run"
    printf '%s\n' "$BIN"
    exit 0
  fi
fi

log "installing prometheus_client==$VERSION into a private virtual environment"
started=$SECONDS
rm -rf "$DIR/venv"
python3 -m venv "$DIR/venv" >&2
"$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "prometheus_client==$VERSION" >&2
"$DIR/venv/bin/python" -c 'from prometheus_client.parser import text_string_to_metric_families' >&2
touch "$DIR/.complete"
log "prometheus_client $VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$BIN"
