#!/usr/bin/env bash
# Provision every real server the test suite uses, from the package registries only, into a
# cache (${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}). Idempotent: a second run reuses the cache.
# Each step fails loudly; the test suite itself starts and stops the servers on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
  local name=$1
  shift
  echo "::group::provision $name"
  local start=$SECONDS
  "$@" >/dev/null
  echo "provisioned $name in $((SECONDS - start)) s"
  echo "::endgroup::"
}

step "PostgreSQL (Debian packages)" bash scripts/provision-postgres.sh
step "Temporal CLI and dev server (Go module proxy)" bash scripts/provision-temporal.sh
step "Apache Kafka (Maven Central)" bash scripts/provision-kafka.sh
step "ElasticMQ, SQS-compatible (Maven Central)" bash scripts/provision-sqs.sh
step "Pub/Sub fake pstest (Go module proxy)" bash scripts/provision-pubsub.sh
step "Object stores: moto (PyPI), Azurite (npm), fake-gcs-server (Go module proxy)" bash scripts/provision-objectstores.sh
step "Apicurio Registry, Confluent-compatible schema registry (Maven Central)" bash scripts/provision-schema-registry.sh
step "Prometheus text-format parser for the metrics tests: prometheus_client (PyPI)" bash scripts/provision-prometheus-parser.sh
step "Delta Lake writer for format: delta: deltalake (delta-rs) and pyarrow (PyPI)" bash scripts/provision-deltalake.sh
step "DuckDB extensions for format: ducklake: ducklake, postgres_scanner, httpfs, delta (PyPI)" bash scripts/provision-duckdb-extensions.sh
step "Apache Spark and Delta Lake (PyPI pyspark, delta-spark; jars from Maven Central)" bash scripts/provision-spark.sh
step "Python LakeLogic sdist, its example contracts for the compatibility tests (PyPI lakelogic)" bash scripts/provision-python-examples.sh
