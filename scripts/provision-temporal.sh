#!/usr/bin/env bash
# Build the Temporal CLI (which embeds the dev server) from the Go module proxy, once, and cache
# it. Later releases carry a `replace` directive that breaks `go install pkg@version`; 1.5.1 does not.
# Prints the binary's path.
set -euo pipefail
VERSION="${TEMPORAL_CLI_VERSION:-1.5.1}"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
BIN="$CACHE/temporal-$VERSION/temporal"
if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null || { echo "provision-temporal: Go is required to build the Temporal CLI" >&2; exit 1; }
mkdir -p "$CACHE/temporal-$VERSION"
echo "provision-temporal: building temporal CLI v$VERSION (first time only; several minutes)" >&2
GOBIN="$CACHE/temporal-$VERSION" GOFLAGS="-trimpath" go install "github.com/temporalio/cli/cmd/temporal@v$VERSION" >&2
"$BIN" --version >&2
echo "$BIN"
