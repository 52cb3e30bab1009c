#!/usr/bin/env bash
# Install Apache Spark (PyPI `pyspark`) and Delta Lake (PyPI `delta-spark`) into a private Python
# virtual environment in a cache directory, and fetch the Delta Lake and Spark Kafka connector jars
# from Maven Central next to it, once. Prints the Spark home (the cache directory) on stdout (the
# only thing printed there; progress goes to stderr). Layout of that directory:
#   venv/bin/python   Python with pyspark + delta-spark (SparkStreamSink and engine "spark" run it)
#   jars/*.jar        delta-spark, delta-storage, spark-sql-kafka and their non-Spark dependencies,
#                     handed to Spark as `spark.jars`, so nothing is downloaded at run time
#
# Idempotent: a complete cache for the pinned versions is reused without touching the network.
#
# Usage:  LAKELOGIC_SPARK_HOME="$(bash scripts/provision-spark.sh)"
# Env:    PYSPARK_VERSION (default 3.5.7), DELTA_VERSION (default 3.3.2),
#         LAKELOGIC_CACHE (default ~/.cache/lakelogic)
set -euo pipefail

log() { printf 'provision-spark: %s\n' "$*" >&2; }

SPARK_VERSION="${PYSPARK_VERSION:-3.5.7}"
DELTA_VERSION="${DELTA_VERSION:-3.3.2}"
SCALA="2.12"
# The Kafka client and pool versions Spark $SPARK_VERSION's spark-sql-kafka was built against.
KAFKA_CLIENTS_VERSION="${SPARK_KAFKA_CLIENTS_VERSION:-3.4.1}"
POOL2_VERSION="2.11.1"
CACHE="${LAKELOGIC_CACHE:-$HOME/.cache/lakelogic}"
DIR="$CACHE/spark-$SPARK_VERSION-delta-$DELTA_VERSION"
BIN="$DIR/venv/bin/python"

cached() { [[ -x "$BIN" && -f "$DIR/.complete" ]]; }

if cached; then
  log "using cached Spark $SPARK_VERSION with Delta $DELTA_VERSION"
  printf '%s\n' "$DIR"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 (3.9 or newer, with venv) is required for pyspark"; exit 1; }
command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is required to fetch the Delta and Kafka connector jars"; exit 1; }
command -v java >/dev/null 2>&1 || { log "java 17 is required by Spark $SPARK_VERSION"; exit 1; }
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.lock"
  flock 9
  if cached; then
    log "using Spark $SPARK_VERSION installed by a concurrent run"
    printf '%s\n' "$DIR"
    exit 0
  fi
fi

started=$SECONDS
if [[ ! -x "$BIN" ]] || ! "$BIN" -c 'import pyspark, delta' 2>/dev/null; then
  log "installing pyspark==$SPARK_VERSION and delta-spark==$DELTA_VERSION into a private virtual environment"
  rm -rf "$DIR/venv"
  python3 -m venv "$DIR/venv" >&2
  "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check \
    "pyspark==$SPARK_VERSION" "delta-spark==$DELTA_VERSION" >&2
fi

log "fetching the Delta Lake and spark-sql-kafka jars"
rm -rf "$DIR/jars.partial"
mkdir -p "$DIR/jars.partial"
for artifact in \
  "io.delta:delta-spark_$SCALA:$DELTA_VERSION" \
  "io.delta:delta-storage:$DELTA_VERSION" \
  "org.apache.spark:spark-sql-kafka-0-10_$SCALA:$SPARK_VERSION" \
  "org.apache.spark:spark-token-provider-kafka-0-10_$SCALA:$SPARK_VERSION" \
  "org.apache.kafka:kafka-clients:$KAFKA_CLIENTS_VERSION" \
  "org.apache.commons:commons-pool2:$POOL2_VERSION"; do
  mvn -B -q -Dstyle.color=never dependency:copy -Dartifact="$artifact" \
    -DoutputDirectory="$DIR/jars.partial" >&2
done
rm -rf "$DIR/jars"
mv "$DIR/jars.partial" "$DIR/jars"

# Smoke test: a local session with the Delta extension writes and reads a Delta table.
smoke="$(mktemp -d)"
trap 'rm -rf "$smoke"' EXIT
JARS="$(ls "$DIR"/jars/*.jar | paste -sd, -)" SMOKE="$smoke" "$BIN" - >&2 <<'PY'
import os
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").appName("lakelogic-provision-smoke")
         .config("spark.jars", os.environ["JARS"])
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.ui.enabled", "false").getOrCreate())
path = os.path.join(os.environ["SMOKE"], "t")
spark.range(3).write.format("delta").save(path)
assert spark.read.format("delta").load(path).count() == 3
spark.stop()
PY
touch "$DIR/.complete"
log "Spark $SPARK_VERSION with Delta $DELTA_VERSION ready in $((SECONDS - started))s"
printf '%s\n' "$DIR"
