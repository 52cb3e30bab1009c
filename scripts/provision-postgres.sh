#!/usr/bin/env bash
# Make PostgreSQL server binaries (initdb, postgres, pg_ctl) available for the test suite and
# print their directory on stdout (the only thing printed there; progress goes to stderr).
#
# Idempotent: when the binaries are already present nothing is installed. Otherwise installs
# Debian's `postgresql` package (needs root, or passwordless sudo). The distro's own cluster is
# not started: tests run their own throwaway servers (test/support/postgres.ts).
#
# Usage:  PG_BIN="$(scripts/provision-postgres.sh)"   # then optionally export LAKELOGIC_PG_BIN
set -euo pipefail

log() { printf 'provision-postgres: %s\n' "$*" >&2; }

has_server() { [[ -x "$1/initdb" && -x "$1/postgres" && -x "$1/pg_ctl" ]]; }

find_bin_dir() {
  if [[ -n "${LAKELOGIC_PG_BIN:-}" ]] && has_server "$LAKELOGIC_PG_BIN"; then
    printf '%s\n' "$LAKELOGIC_PG_BIN"; return 0
  fi
  local dir
  # Newest major version first.
  if [[ -d /usr/lib/postgresql ]]; then
    for dir in $(ls -1 /usr/lib/postgresql | sort -rV); do
      if has_server "/usr/lib/postgresql/$dir/bin"; then
        printf '%s\n' "/usr/lib/postgresql/$dir/bin"; return 0
      fi
    done
  fi
  if command -v initdb >/dev/null 2>&1; then
    dir="$(dirname "$(readlink -f "$(command -v initdb)")")"
    if has_server "$dir"; then printf '%s\n' "$dir"; return 0; fi
  fi
  return 1
}

if bin_dir="$(find_bin_dir)"; then
  log "found PostgreSQL server binaries"
  printf '%s\n' "$bin_dir"
  exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  log "PostgreSQL is not installed and this user cannot install packages."
  log "Run as root, or: sudo apt-get install -y postgresql"
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "PostgreSQL is not installed and apt-get is not available; install the PostgreSQL server"
  log "binaries by other means and set LAKELOGIC_PG_BIN to their directory."
  exit 1
fi

# Keep the package's post-install from starting the distro cluster (Debian's policy-rc.d
# convention: exit 101 = "action forbidden"). Only if no policy is in place already.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
  "${as_root[@]}" chmod 755 "$policy"
  added_policy=1
fi
cleanup() { if [[ "$added_policy" -eq 1 ]]; then "${as_root[@]}" rm -f "$policy"; fi; }
trap cleanup EXIT

log "installing Debian package postgresql"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >&2
"${as_root[@]}" apt-get install -y -qq --no-install-recommends postgresql >&2

if bin_dir="$(find_bin_dir)"; then
  log "installed PostgreSQL server binaries"
  printf '%s\n' "$bin_dir"
else
  log "installed the postgresql package but still cannot find initdb/postgres"
  exit 1
fi
