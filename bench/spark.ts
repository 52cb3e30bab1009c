/**
 * `npm run bench:spark [-- --events N] [-- --file-events M]` — the same N order events (default
 * 1,000,000) through SparkStreamSink (local[2]: a directory of JSON-lines files → Delta,
 * available_now, one file of M events per micro-batch, default 100,000) and through StreamSink
 * (engine duckdb: the same events as one JSON-lines file → the DuckDB lake, available_now).
 * Both runs must give the same good and quarantined counts, else no figures are printed (exit 1).
 * Prints one JSON line: rows/s of each, their ratio (Spark's rows/s over StreamSink's), and where Spark's time went (start-up,
 * then per micro-batch, on the executors: reading, encoding and validating the records, the
 * Delta MERGE, the quarantine's reasons and append). Spark's time includes its start-up (a JVM
 * and a SparkSession).
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { writeOrderEvents } from "../examples/orders.js";
import { parseContract } from "../src/contract/index.js";
import { StreamSink } from "../src/sink/index.js";
import { createSource } from "../src/sources/registry.js";
import { SparkStreamSink } from "../src/spark/index.js";
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";

const { values } = parseArgs({ options: { events: { type: "string" }, "file-events": { type: "string" } } });
const count = (flag: string, text: string | undefined, fallback: number): number => {
  const v = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${flag} must be a whole number >= 1 (got ${text})`);
  return v;
};
const n = count("events", values.events, 1_000_000);
const perFile = count("file-events", values["file-events"], 100_000);

/** `path`'s lines as files of `perFile` lines each in `dir` (Spark's micro-batches, one file each). */
async function split(path: string, dir: string): Promise<number> {
  mkdirSync(dir);
  let files = 0;
  let lines = 0;
  let out: ReturnType<typeof createWriteStream> | undefined;
  const close = (o: ReturnType<typeof createWriteStream>): Promise<void> => new Promise((r) => o.end(r));
  for await (const line of createInterface({ input: createReadStream(path) })) {
    if (!out || lines === perFile) {
      if (out) await close(out);
      out = createWriteStream(join(dir, `events-${String(files++).padStart(5, "0")}.json`));
      lines = 0;
    }
    if (!out.write(line + "\n")) await new Promise<void>((r) => out!.once("drain", () => r()));
    lines++;
  }
  if (out) await close(out);
  return files;
}

const dir = mkdtempSync(join(tmpdir(), "ll-bench-spark-"));
try {
  const events = join(dir, "events.ndjson");
  await writeOrderEvents(events, n);
  const files = await split(events, join(dir, "in"));
  const yaml = readFileSync("examples/orders.yaml", "utf8");

  const sparkStarted = process.hrtime.bigint();
  const spark = await new SparkStreamSink(parseContract(yaml.replace("format: duckdb", "format: delta")), {
    source: { type: "json", path: join(dir, "in"), maxFilesPerTrigger: 1 },
    checkpointLocation: join(dir, "spark-checkpoint"),
    targetPath: join(dir, "delta", "orders"),
    trigger: "available_now",
  }).run();
  const sparkSeconds = Number(process.hrtime.bigint() - sparkStarted) / 1e9;

  const nodeStarted = process.hrtime.bigint();
  const node = await new StreamSink(parseContract(yaml), await createSource({ type: "file", path: events }), {
    engine: "duckdb",
    targetPath: join(dir, "lake"),
    checkpoint: join(dir, "checkpoints.sqlite"),
    handleSignals: false,
  }).run("available_now");
  const nodeSeconds = Number(process.hrtime.bigint() - nodeStarted) / 1e9;

  if (spark.sourceCount !== n || node.sourceCount !== n || spark.goodCount !== node.goodCount || spark.badCount !== node.badCount) {
    console.error(
      `bench:spark: the runs disagree, no figures: spark ${spark.sourceCount} in, ${spark.goodCount} good, ${spark.badCount} bad; ` +
        `streamSink ${node.sourceCount} in, ${node.goodCount} good, ${node.badCount} bad`,
    );
    process.exitCode = 1;
  } else {
    const rate = (rows: number, s: number): number => Math.round(rows / s);
    const seconds = (ms: number): number => Math.round(ms / 100) / 10;
    const phase = (k: keyof (typeof spark.reports)[number]["phasesMs"]): number => seconds(spark.reports.reduce((t, r) => t + r.phasesMs[k], 0));
    const inBatches = spark.reports.reduce((t, r) => t + r.durationMs, 0);
    console.log(
      JSON.stringify({
        bench: "spark-vs-streamsink",
        events: n,
        good: node.goodCount,
        quarantined: node.badCount,
        spark: {
          master: "local[2]",
          seconds: Math.round(sparkSeconds * 10) / 10,
          rowsPerSecond: rate(spark.sourceCount, sparkSeconds),
          batches: spark.batches,
          files,
          // Outside the micro-batches: the JVM, the SparkSession, the query's start and stop.
          startSeconds: Math.round((sparkSeconds - inBatches / 1000) * 10) / 10,
          phaseSeconds: { validate: phase("validate"), merge: phase("merge"), quarantine: phase("quarantine") },
        },
        streamSink: { engine: "duckdb", seconds: Math.round(nodeSeconds * 100) / 100, rowsPerSecond: rate(node.sourceCount, nodeSeconds), batches: node.batches },
        // SparkStreamSink's rows/s over StreamSink's (the target is >= 0.5).
        ratio: Math.round((nodeSeconds / sparkSeconds) * 100) / 100,
      }),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
