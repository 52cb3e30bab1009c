"""LakeLogic's Spark driver: one SparkSession, driven by the TypeScript side over JSON lines.

    python driver.py serve  CONFIG.json   requests on stdin, one reply per request on stdout
                                          (engine "spark": the TypeScript side encodes records,
                                          this process runs the compiled statement)
    python driver.py stream CONFIG.json   a Structured Streaming query (foreachBatch) that
                                          validates and writes each micro-batch on the executors
                                          (class Executors) and reports its counts on stdout

The TypeScript side compiles the contract (src/engine/spark-sql.ts, src/spark/executor-plan.ts);
this process runs the compiled Spark SQL, owns the stream's source offsets (checkpointLocation)
and writes the Delta tables. Stdout carries only protocol lines; Spark's own logging goes to
stderr.
"""
import hashlib
import json
import math
import os
import sys
import time

_OUT = sys.stdout
sys.stdout = sys.stderr  # anything printed by a library goes to stderr, never the protocol


def send(msg):
    _OUT.write(json.dumps(msg, allow_nan=False, default=str) + "\n")
    _OUT.flush()


def recv():
    line = sys.stdin.readline()
    if not line:
        raise EOFError("the TypeScript side closed the connection")
    return json.loads(line)


def session(cfg):
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(cfg.get("appName", "lakelogic")).master(cfg.get("master", "local[2]"))
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.ansi.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # A micro-batch's shuffles (the MERGE's join, the quarantine's window) are few and short:
        # no adaptive re-planning per query; their partitions are set from the cores below.
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        # Dates and timestamps are proleptic Gregorian, as in JavaScript and DuckDB: written and
        # read as they are, without the Julian-calendar rebase Spark otherwise asks about.
        "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    }
    if cfg.get("jars"):
        conf["spark.jars"] = ",".join(cfg["jars"])
    if cfg.get("packages"):
        conf["spark.jars.packages"] = ",".join(cfg["packages"])
    conf.update(cfg.get("conf") or {})
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    cores = str(max(1, spark.sparkContext.defaultParallelism))
    # One task per core the application holds, unless `conf` says otherwise: for a micro-batch's
    # shuffles (Spark's 200 are mostly empty tasks; one would put every MERGE on a single core of
    # the cluster) and for Delta's rebuild of a table's state after each commit (its 50 cost
    # about 2 s of each micro-batch on two cores).
    for key in ("spark.sql.shuffle.partitions", "spark.databricks.delta.snapshotPartitions"):
        if key not in (cfg.get("conf") or {}):
            spark.conf.set(key, cores)
    return spark


def plain(v):
    """A collected value as JSON: non-finite doubles as text, decimals and dates as text."""
    if isinstance(v, float):
        return v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return str(v)


def validate(spark, stmt, cols):
    """Run one compiled statement over one encoded batch; columns and measures back."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField(c["name"], LongType() if c["type"] == "BIGINT" else StringType()) for c in stmt["input"]])
    n = len(cols["__ll_i"])
    rows = list(zip(*[cols[c["name"]] for c in stmt["input"]])) if n else []
    df = spark.createDataFrame(rows, schema)
    df.createOrReplaceTempView("__ll_batch")
    ev = spark.sql(stmt["sql"])
    collected = ev.collect()
    out = {c: [plain(r[i]) for r in collected] for i, c in enumerate(stmt["columns"])}
    measures, errors = [], []
    if stmt["measures"]:
        spark.createDataFrame(collected, ev.schema).createOrReplaceTempView("__ll_ev")
        for q in stmt["measures"]:
            try:
                v = spark.sql(q).collect()[0][0]
                measures.append(None if v is None else plain(float(v)))
                errors.append(None)
            except Exception as err:  # a measure that throws reports its rule as failed
                measures.append(0)
                errors.append(short(err))
    return {"columns": out, "measures": measures, "measureErrors": errors}


def short(err):
    text = str(err).strip().splitlines()
    return text[0][:500] if text else type(err).__name__


class SetupError(Exception):
    """The stream could not start: `stage` says what ("session": the SparkSession on the master,
    "source": the source's path, "contract": a statement Spark cannot analyse), so the
    TypeScript side names the option at fault."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


def reason(err):
    """An exception's first line; for a JVM exception, the Java one (Py4J's own says only which call failed)."""
    java = getattr(err, "java_exception", None)
    if java is not None:
        try:
            return short(java.toString())
        except Exception:  # the gateway may be gone with the failed context
            pass
    return short(err)


def read_table(spark, path, order_by, select=None):
    df = spark.read.format("delta").load(path)
    if select:
        df = df.selectExpr(*select)
    if order_by:
        df = df.orderBy(*order_by)
    schema = [f.name for f in df.schema.fields]
    return {"rows": [{k: plain(r[k]) if not isinstance(r[k], list) else [plain(x) for x in r[k]] for k in schema} for r in df.collect()]}


def handle(spark, req):
    op = req["op"]
    if op == "validate":
        return validate(spark, req["stmt"], req["cols"])
    if op == "compile":
        # Analysis runs when the statement is planned: unknown functions or columns fail here.
        validate(spark, req["stmt"], req["cols"])
        return {}
    if op == "read":
        return read_table(spark, req["path"], req.get("orderBy"), req.get("select"))
    raise ValueError("unknown request " + repr(op))


def serve_one(spark, req):
    try:
        reply = handle(spark, req)
        send({"id": req.get("id"), "ok": True, **reply})
    except Exception as err:
        send({"id": req.get("id"), "ok": False, "error": short(err)})


def serve(cfg):
    spark = session(cfg)
    send({"event": "ready", "version": spark.version})
    while True:
        try:
            req = recv()
        except EOFError:
            break
        if req.get("op") == "close":
            break
        serve_one(spark, req)
    spark.stop()


# ── stream mode ──


def source_frame(spark, src):
    """The stream as rows of (raw text, position JSON, order)."""
    from pyspark.sql import functions as F

    kind = src["type"]
    if kind == "kafka":
        r = spark.readStream.format("kafka").option("kafka.bootstrap.servers", src["bootstrapServers"]).option("subscribe", src["topic"])
        r = r.option("startingOffsets", src.get("startingOffsets", "earliest"))
        if src.get("maxOffsetsPerTrigger"):
            r = r.option("maxOffsetsPerTrigger", str(src["maxOffsetsPerTrigger"]))
        df = r.load()
        return df.select(
            F.col("value").cast("string").alias("raw"),
            F.to_json(F.struct(F.col("topic"), F.col("partition"), F.col("offset"))).alias("position"),
            F.col("partition").alias("p"),
            F.col("offset").alias("o"),
        )
    if kind == "json":
        # As Spark's file source: a glob may match nothing yet (files arrive later), a plain path must exist.
        if not any(c in src["path"] for c in "{}[]*?\\") and not path_exists(spark, src["path"]):
            raise SetupError("source", "json source %s: no such file or directory (expected a directory of newline-delimited JSON files)" % json.dumps(src["path"]))
        r = spark.readStream.format("text")
        if src.get("maxFilesPerTrigger"):
            r = r.option("maxFilesPerTrigger", str(src["maxFilesPerTrigger"]))
        df = r.load(src["path"]).withColumn("f", F.input_file_name())
        return df.select(F.col("value").alias("raw"), F.to_json(F.struct(F.col("f").alias("file"))).alias("position"), F.col("f").alias("p"))
    if kind == "delta":
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, src["path"]):
            why = "is not a Delta table (it has no _delta_log)" if path_exists(spark, src["path"]) else "does not exist"
            raise SetupError("source", "delta source %s %s: expected the path of a Delta table" % (json.dumps(src["path"]), why))
        r = spark.readStream.format("delta")
        changes = src.get("readChangeFeed")
        if changes is None:
            changes = has_change_feed(spark, src["path"])
        if changes:
            # A merge's commit rewrites files holding untouched rows; its change feed holds only
            # the rows it inserted or changed (a plain Delta stream refuses such commits).
            r = r.option("readChangeFeed", "true")
        if src.get("startingVersion") is not None:
            r = r.option("startingVersion", str(src["startingVersion"]))
        if src.get("maxFilesPerTrigger"):
            r = r.option("maxFilesPerTrigger", str(src["maxFilesPerTrigger"]))
        df = r.load(src["path"])
        if not changes:
            return df.select(F.to_json(F.struct(*[F.col(c) for c in df.columns])).alias("raw"), F.lit(None).cast("string").alias("position"), F.lit(0).alias("p"))
        # In commit order: a micro-batch may hold a row's insert and its later update.
        data = [F.col(c) for c in df.columns if c not in ("_change_type", "_commit_version", "_commit_timestamp")]
        df = df.where(F.col("_change_type").isin("insert", "update_postimage"))
        return df.select(
            F.to_json(F.struct(*data)).alias("raw"),
            F.to_json(F.struct(F.col("_commit_version").alias("version"))).alias("position"),
            F.col("_commit_version").alias("p"),
        )
    raise ValueError("unknown source type " + repr(kind))


def path_exists(spark, path):
    """Whether a path exists, on whichever Hadoop file system it names (local, HDFS, s3a://, …)."""
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(p)


def has_change_feed(spark, path):
    """Whether the Delta table records its changes (delta.enableChangeDataFeed)."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return False
    props = DeltaTable.forPath(spark, path).detail().collect()[0]["properties"] or {}
    return str(props.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def table_version(spark, path):
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return -1
    return DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]


def write_good(spark, cfg, batch_id, df):
    """MERGE the good rows on the primary key; once per batch (Delta's txnAppId/txnVersion)."""
    from delta.tables import DeltaTable

    path, app = cfg["targetPath"], cfg["appId"]
    keys = cfg["primaryKey"]
    if not keys or not DeltaTable.isDeltaTable(spark, path):
        # The first batch creates the table; Delta's transaction id still guards a replay.
        df.write.format("delta").mode("append").option("txnAppId", app).option("txnVersion", batch_id).save(path)
        return
    spark.conf.set("spark.databricks.delta.write.txnAppId", app)
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
    try:
        cond = " AND ".join("t.`{0}` <=> s.`{0}`".format(k.replace("`", "``")) for k in keys)
        (DeltaTable.forPath(spark, path).alias("t").merge(df.alias("s"), cond).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")


def write_bad(spark, cfg, batch_id, df):
    """Append quarantine rows; Delta skips a batch this app already committed. True when it skipped this one."""
    path = cfg["quarantinePath"]
    before = table_version(spark, path)
    df.write.format("delta").mode("append").option("txnAppId", cfg["appId"] + ":q").option("txnVersion", batch_id).save(path)
    return table_version(spark, path) == before


def q(name):
    return "`%s`" % name.replace("`", "``")


class Executors:
    """One micro-batch validated where its rows are: the contract's plan (spark/jsvalues.py for
    the records, the compiled statement for the rules), the good rows MERGEd and the bad ones
    appended from the executors. The driver sees the batch's counts only."""

    def __init__(self, spark, cfg):
        import jsvalues
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType, StringType, StructField, StructType

        self.x = x = cfg["executor"]
        self.cfg = cfg
        self.encode = F.udf(jsvalues.encoder(x), jsvalues.encoder_schema(x))
        explain_type = StructType([
            StructField("record", StringType()),
            StructField("identity", StringType()),
            StructField("reasons", ArrayType(StringType())),
            StructField("rule_ids", ArrayType(StringType())),
        ])
        self.explain = F.udf(jsvalues.explainer(x), explain_type)

    def check(self, spark):
        """Analyse the statement once before the stream starts: a rule naming a function or a
        column Spark does not have is refused now, with Spark's reason, not in a micro-batch."""
        import jsvalues
        from pyspark.sql.types import StringType, StructField, StructType

        schema = jsvalues.encoder_schema(self.x)
        fields = [StructField("__ll_i", StructType([StructField("p", StringType()), StructField("o", StringType())]))]
        fields += [StructField("__ll_raw", StringType()), StructField("__ll_pos", StringType())]
        fields += [f for f in schema.fields if f.name not in ("__ll_state", "__ll_detail")]
        spark.createDataFrame([], StructType(fields)).createOrReplaceTempView("__ll_batch")
        try:
            spark.sql(self.x["sql"]).selectExpr(*self.x["good"])
        except Exception as err:
            raise SetupError("contract", reason(err))
        finally:
            spark.catalog.dropTempView("__ll_batch")

    def run(self, batch_df, batch_id):
        from pyspark import StorageLevel
        from pyspark.sql import functions as F
        from pyspark.sql.window import Window

        x, cfg = self.x, self.cfg
        spark = batch_df.sparkSession
        times = {"started": time.time()}
        enc = batch_df.select(
            F.struct(F.col("p"), F.col("o")).alias("__ll_i"),
            F.col("raw").alias("__ll_raw"),
            F.col("position").alias("__ll_pos"),
            self.encode(F.col("raw")).alias("e"),
        ).select("__ll_i", "__ll_raw", "__ll_pos", "e.*")
        enc.persist(StorageLevel.MEMORY_AND_DISK)
        enc.where("__ll_state = 0").drop("__ll_state", "__ll_detail").createOrReplaceTempView("__ll_batch")
        sup = x.get("supersededCol")
        bad_col = q(x["badCol"])
        good_when = "NOT %s" % bad_col + (" AND NOT %s" % q(sup) if sup else "")
        fail = q(x["failCol"]) if x["checks"] else "CAST(NULL AS STRING)"
        # What the counts, the MERGE and the quarantine read, cached once: the statement's
        # intermediate columns are not (caching them cost more than the statement), and a good
        # row's payload is not kept twice.
        ev = spark.sql(x["sql"]).selectExpr(
            *x["good"], bad_col, *([q(sup)] if sup else []), *[q(c["flag"]) for c in x["checks"]],
            "%s AS __ll_fail" % fail, "%s AS __ll_unknown" % q(x["unknownCol"]), "__ll_i",
            "CASE WHEN %s THEN __ll_raw END AS __ll_raw" % bad_col, "CASE WHEN %s THEN __ll_pos END AS __ll_pos" % bad_col,
        )
        good_names = ev.columns[: len(x["good"])]
        ev.persist(StorageLevel.MEMORY_AND_DISK)
        # One pass for every count: the rows, the bad, the superseded and each check's failures.
        aggs = ["count(*)", "count_if(%s)" % bad_col, ("count_if(NOT %s AND %s)" % (bad_col, q(sup))) if sup else "0"]
        aggs += ["count_if(%s)" % q(c["flag"]) for c in x["checks"]]
        counted = ev.selectExpr(*["CAST(%s AS BIGINT)" % a for a in aggs]).collect()[0]
        objects, bad_objects, superseded = counted[0], counted[1], counted[2]
        check_counts = [int(v) for v in counted[3:]]
        states = enc.selectExpr("CAST(count(*) AS BIGINT)", "CAST(count_if(__ll_state = 1) AS BIGINT)", "CAST(count_if(__ll_state = 2) AS BIGINT)").collect()[0]
        total, not_json, not_object = int(states[0]), int(states[1]), int(states[2])
        times["validated"] = time.time()

        good = ev.where(good_when).select(*[F.col(q(c)) for c in good_names])
        good_count = objects - bad_objects - superseded
        if good_count > 0:
            write_good(spark, cfg, batch_id, good)
        times["merged"] = time.time()

        bad = ev.where(bad_col).selectExpr("__ll_i", "__ll_raw", "__ll_pos", "0 AS __ll_state", "CAST(NULL AS STRING) AS __ll_detail", "__ll_fail", "__ll_unknown")
        other = enc.where("__ll_state <> 0").selectExpr("__ll_i", "__ll_raw", "__ll_pos", "__ll_state", "__ll_detail", "CAST(NULL AS STRING) AS __ll_fail", "CAST(NULL AS STRING) AS __ll_unknown")
        bad_count = bad_objects + not_json + not_object
        already = 0
        if bad_count > 0 and cfg.get("quarantine", True):
            ex = bad.unionByName(other).select(
                "__ll_i", "__ll_raw", "__ll_pos",
                self.explain("__ll_raw", "__ll_pos", "__ll_state", "__ll_detail", "__ll_fail", "__ll_unknown").alias("x"),
            )
            # Rows alike in position, payload and record are told apart by their order (quarantineIds).
            ordinal = F.row_number().over(Window.partitionBy("x.identity").orderBy("__ll_i")) - 1
            rows = ex.select(
                F.substring(F.sha2(F.concat(F.lit("lakelogic.quarantine.v1\n"), F.col("x.identity"), F.lit("\n"), ordinal.cast("string")), 256), 1, 32).alias("quarantine_id"),
                F.lit(batch_id).cast("bigint").alias("batch_id"),
                F.col("x.record").alias("record"),
                F.col("__ll_raw").alias("raw"),
                F.col("x.reasons").alias("reasons"),
                F.col("x.rule_ids").alias("rule_ids"),
                F.col("__ll_pos").alias("position"),
                F.current_timestamp().alias("quarantined_at"),
            )
            if write_bad(spark, cfg, batch_id, rows):
                already = bad_count
        times["done"] = time.time()
        ev.unpersist()
        enc.unpersist()
        ms = lambda a, b: int((times[b] - times[a]) * 1000)  # noqa: E731
        return {
            "sourceCount": total,
            "goodCount": good_count,
            "badCount": bad_count,
            "supersededCount": superseded,
            "notObjectCount": not_object,
            "checkCounts": check_counts,
            "badAlreadyPresent": already,
            "durationMs": ms("started", "done"),
            "validateMs": ms("started", "validated"),
            "mergeMs": ms("validated", "merged"),
            "quarantineMs": ms("merged", "done"),
        }


def stream(cfg):
    try:
        spark = session(cfg)
        # A standalone master that never registered the application: Spark 3.5 still returns the
        # session (its SparkContext stops moments later), named by the scheduler's fallback id
        # instead of the master's `app-…` one. Decided by the time getOrCreate returns.
        if cfg.get("master", "").startswith("spark://") and spark.sparkContext.applicationId.startswith("spark-application-"):
            raise SetupError("session", "the master did not register the application (Spark's standalone client gave up after its registration retries)")
    except SetupError:
        raise
    except Exception as err:
        raise SetupError("session", reason(err))
    send({"event": "ready", "version": spark.version})
    # The executors import spark/jsvalues.py: shipped with the job, so a cluster needs no install.
    spark.sparkContext.addPyFile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "jsvalues.py"))
    df = source_frame(spark, cfg["source"])
    executors = Executors(spark, cfg)
    executors.check(spark)
    totals = {"batches": 0, "sourceCount": 0, "goodCount": 0, "badCount": 0, "supersededCount": 0}

    def each(batch_df, batch_id):
        from pyspark.sql import functions as F

        if "o" not in batch_df.columns:
            # Files and Delta rows: their order within the micro-batch, as read.
            batch_df = batch_df.withColumn("o", F.monotonically_increasing_id())
        report = executors.run(batch_df, batch_id)
        for k in ("sourceCount", "goodCount", "badCount", "supersededCount"):
            totals[k] += report[k]
        totals["batches"] += 1
        send({"event": "committed", "batchId": batch_id, **report})

    w = df.writeStream.foreachBatch(each).option("checkpointLocation", cfg["checkpointLocation"])
    trig = cfg["trigger"]
    w = w.trigger(availableNow=True) if trig == "available_now" else w.trigger(processingTime=trig["processingTime"])
    query = w.start()
    if trig == "available_now":
        query.awaitTermination()
    else:
        # Runs until the TypeScript side closes stdin's control file or the process is stopped.
        stop_file = cfg.get("stopFile")
        while query.isActive:
            if stop_file and os.path.exists(stop_file):
                query.stop()
                break
            query.awaitTermination(0.5)
    if query.exception():
        raise RuntimeError(str(query.exception()))
    send({"event": "summary", **totals})
    spark.stop()


def app_id(cfg):
    return hashlib.sha256(("lakelogic.spark\n%s\n%s" % (cfg["checkpointLocation"], cfg["targetPath"])).encode()).hexdigest()[:32]


def main():
    mode, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        cfg = json.load(f)
    if mode == "serve":
        serve(cfg)
    elif mode == "stream":
        cfg.setdefault("appId", app_id(cfg))
        try:
            stream(cfg)
        except SetupError as err:
            send({"event": "error", "stage": err.stage, "error": str(err)})
            sys.exit(1)
        except Exception as err:
            send({"event": "error", "error": short(err)})
            sys.exit(1)
    else:
        raise SystemExit("usage: driver.py serve|stream CONFIG.json")


if __name__ == "__main__":
    main()
