#!/usr/bin/env bash
# Install DuckDB's own signed extension binaries for the DuckDB this package runs (the version of
# @duckdb/node-bindings in node_modules) from PyPI, where DuckDB publishes them as
# `duckdb-extension-<name>` wheels, into a DuckDB extension directory in the cache:
#
#   $CACHE/duckdb-extensions/v<version>/<platform>/<name>.duckdb_extension
#
# format: ducklake loads ducklake, postgres_scanner (a PostgreSQL catalog) and httpfs (s3://
# data) from it (src/util/duckdb-extensions.ts); the tests read Delta tables with `delta`. An
# extension loads only into the exact DuckDB version it was built for, so the wheels are pinned
# to that version. Online users need none of this: DuckDB installs extensions itself.
#
# Idempotent: a complete directory for this version is reused without touching the network.
# Usage:  bash scripts/provision-duckdb-extensions.sh   (prints the extension directory)
# Env:    LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'provision-duckdb-extensions: %s\n' "$*" >&2; }

EXTENSIONS=(ducklake postgres_scanner httpfs delta)
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
ROOT="$CACHE/duckdb-extensions"

# The version and platform DuckDB itself reports (they name the directory it looks in).
read -r VERSION PLATFORM < <(node --input-type=module -e '
  import { DuckDBInstance } from "@duckdb/node-api";
  const c = await (await DuckDBInstance.create(":memory:")).connect();
  const r = (await c.runAndReadAll("SELECT version(), (SELECT platform FROM pragma_platform())")).getRows()[0];
  console.log(`${r[0]} ${r[1]}`);
')
DIR="$ROOT/$VERSION/$PLATFORM"
PYPI_VERSION="${VERSION#v}"

complete() { [[ -f "$DIR/.complete" ]]; }
if complete; then
  log "using cached DuckDB $VERSION extensions"
  printf '%s\n' "$ROOT"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 with pip is required to fetch the extension wheels"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if complete; then printf '%s\n' "$ROOT"; exit 0; fi
fi

started=$SECONDS
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
wheels=()
for name in "${EXTENSIONS[@]}"; do wheels+=("duckdb-extension-${name//_/-}==$PYPI_VERSION"); done
log "downloading ${wheels[*]}"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: -d "$tmp" "${wheels[@]}" >&2
# Each wheel holds <package>/extensions/v<version>/<name>.duckdb_extension.
python3 - "$tmp" "$DIR" "$VERSION" "${EXTENSIONS[@]}" <<'PY'
import pathlib, sys, zipfile
tmp, out, version, names = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
for name in names:
    found = False
    for wheel in tmp.glob("*.whl"):
        with zipfile.ZipFile(wheel) as z:
            for member in z.namelist():
                if member.endswith(f"/extensions/{version}/{name}.duckdb_extension"):
                    (out / f"{name}.duckdb_extension").write_bytes(z.read(member))
                    found = True
    if not found:
        sys.exit(f"no {name}.duckdb_extension for DuckDB {version} in the downloaded wheels")
PY
touch "$DIR/.complete"
log "DuckDB $VERSION extensions (${EXTENSIONS[*]}) ready in $((SECONDS - started)) s"
printf '%s\n' "$ROOT"
