/**
 * `npm run bench:spark` — the same N order events through SparkStreamSink (local[2], a directory
 * of JSON files → Delta, available_now) and through StreamSink (DuckDB lake, available_now);
 * prints rows/s of each and their ratio as one JSON line. N: `N=…` (default 2000).
 * Spark's time includes its start-up (a JVM and a SparkSession), as a run pays it.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { orderEvents } from "../examples/orders.js";
import { parseContract } from "../src/contract/index.js";
import { readFileSync } from "node:fs";
import { StreamSink } from "../src/sink/index.js";
import { IterableSource } from "../src/sources/index.js";
import { SparkStreamSink } from "../src/spark/index.js";

const n = Number(process.env.N ?? "2000");
const dir = mkdtempSync(join(tmpdir(), "ll-bench-spark-"));
const events = [...orderEvents(n)];
try {
  mkdirSync(join(dir, "in"));
  writeFileSync(join(dir, "in", "events.json"), events.map((e) => JSON.stringify(e)).join("\n") + "\n");
  const yaml = readFileSync("examples/orders.yaml", "utf8");

  const sparkStarted = process.hrtime.bigint();
  const spark = await new SparkStreamSink(parseContract(yaml.replace("format: duckdb", "format: delta")), {
    source: { type: "json", path: join(dir, "in") },
    checkpointLocation: join(dir, "spark-checkpoint"),
    targetPath: join(dir, "delta", "orders"),
    trigger: "available_now",
  }).run();
  const sparkSeconds = Number(process.hrtime.bigint() - sparkStarted) / 1e9;

  const nodeStarted = process.hrtime.bigint();
  const node = await new StreamSink(parseContract(yaml), new IterableSource(() => events, { replayable: true }), {
    targetPath: join(dir, "lake"),
    checkpoint: join(dir, "checkpoints.sqlite"),
    handleSignals: false,
  }).run("available_now");
  const nodeSeconds = Number(process.hrtime.bigint() - nodeStarted) / 1e9;

  const rate = (rows: number, s: number): number => Math.round(rows / s);
  console.log(
    JSON.stringify({
      bench: "spark-vs-streamsink",
      events: n,
      spark: { master: "local[2]", seconds: Math.round(sparkSeconds * 10) / 10, rowsPerSecond: rate(spark.sourceCount, sparkSeconds), batches: spark.batches },
      streamSink: { engine: "duckdb", seconds: Math.round(nodeSeconds * 100) / 100, rowsPerSecond: rate(node.sourceCount, nodeSeconds), batches: node.batches },
      ratio: Math.round((sparkSeconds / nodeSeconds) * 10) / 10,
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
