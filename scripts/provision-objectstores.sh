#!/usr/bin/env bash
# Provision the three object-store emulators the checkpoint tests use (S3: moto; Azure Blob:
# Azurite; GCS: fake-gcs-server), each into the cache by its own script, and say how long each
# took. Idempotent: cached copies are reused without touching the network. Prints the three
# launcher paths on stdout, one a line (S3, Azure, GCS).
set -euo pipefail
here="$(dirname "$0")"
for name in s3 azurite gcs; do
  started=$SECONDS
  bash "$here/provision-$name.sh"
  printf 'provision-objectstores: %s ready in %ss\n' "$name" "$((SECONDS - started))" >&2
done
