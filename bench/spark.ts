/**
 * `npm run bench:spark [-- --events N] [-- --file-events M] [-- --skip-cluster]` — the same N
 * order events (default 1,000,000) through SparkStreamSink (a directory of JSON-lines files →
 * Delta, available_now, one file of M events per micro-batch, default 100,000) on `local[2]` and
 * on a standalone cluster of two one-core workers on loopback, and through StreamSink (engine
 * duckdb: the same events as one JSON-lines file → the DuckDB lake, available_now).
 * All runs must give the same good and quarantined counts, else no figures are printed (exit 1).
 * Prints one JSON line: rows/s of each, each Spark run's ratio (its rows/s over StreamSink's), and
 * where each Spark run's time went (start-up, then per micro-batch, on the executors: reading,
 * encoding and validating the records, the Delta MERGE, the quarantine's reasons and append).
 * Spark's time includes its start-up (a JVM and a SparkSession; the cluster's own start is not).
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { writeOrderEvents } from "../examples/orders.js";
import { parseContract } from "../src/contract/index.js";
import { StreamSink } from "../src/sink/index.js";
import { createSource } from "../src/sources/registry.js";
import { locateSpark } from "../src/engine/spark-home.js";
import { SparkStreamSink, type SparkRunSummary } from "../src/spark/index.js";
import { startSparkCluster } from "../test/support/spark-cluster.js";
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";

const { values } = parseArgs({ options: { events: { type: "string" }, "file-events": { type: "string" }, "skip-cluster": { type: "boolean", default: false } } });
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

  const contract = parseContract(yaml.replace("format: duckdb", "format: delta"));
  type SparkRun = { summary: SparkRunSummary; seconds: number };
  const sparkRun = async (name: string, master: string, conf?: Record<string, string>): Promise<SparkRun> => {
    const started = process.hrtime.bigint();
    const summary = await new SparkStreamSink(contract, {
      source: { type: "json", path: join(dir, "in"), maxFilesPerTrigger: 1 },
      checkpointLocation: join(dir, `${name}-checkpoint`),
      targetPath: join(dir, name, "orders"),
      trigger: "available_now",
      master,
      ...(conf ? { conf } : {}),
    }).run();
    return { summary, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  };
  const local = await sparkRun("local", "local[2]");
  let cluster: SparkRun | undefined;
  if (!values["skip-cluster"]) {
    const standalone = await startSparkCluster(locateSpark(), 2);
    try {
      // One executor per worker, one core each: the cluster has this machine's two cores.
      cluster = await sparkRun("cluster", standalone.master, { "spark.cores.max": "2", "spark.executor.cores": "1", "spark.executor.memory": "768m" });
    } finally {
      await standalone.stop();
    }
  }

  const nodeStarted = process.hrtime.bigint();
  const node = await new StreamSink(parseContract(yaml), await createSource({ type: "file", path: events }), {
    engine: "duckdb",
    targetPath: join(dir, "lake"),
    checkpoint: join(dir, "checkpoints.sqlite"),
    handleSignals: false,
  }).run("available_now");
  const nodeSeconds = Number(process.hrtime.bigint() - nodeStarted) / 1e9;

  const runs = [local.summary, ...(cluster ? [cluster.summary] : [])];
  const agree = (r: SparkRunSummary): boolean => r.sourceCount === n && r.goodCount === node.goodCount && r.badCount === node.badCount;
  if (node.sourceCount !== n || !runs.every(agree)) {
    console.error(
      `bench:spark: the runs disagree, no figures: ${runs.map((r, i) => `spark ${i === 0 ? "local" : "cluster"} ${r.sourceCount} in, ${r.goodCount} good, ${r.badCount} bad`).join("; ")}; ` +
        `streamSink ${node.sourceCount} in, ${node.goodCount} good, ${node.badCount} bad`,
    );
    process.exitCode = 1;
  } else {
    const rate = (rows: number, s: number): number => Math.round(rows / s);
    const seconds = (ms: number): number => Math.round(ms / 100) / 10;
    const figures = (master: string, run: SparkRun): Record<string, unknown> => {
      const { summary, seconds: total } = run;
      const phase = (k: keyof SparkRunSummary["reports"][number]["phasesMs"]): number => seconds(summary.reports.reduce((t, r) => t + r.phasesMs[k], 0));
      const inBatches = summary.reports.reduce((t, r) => t + r.durationMs, 0);
      return {
        master,
        seconds: Math.round(total * 10) / 10,
        rowsPerSecond: rate(summary.sourceCount, total),
        batches: summary.batches,
        // Outside the micro-batches: the JVM, the SparkSession, the query's start and stop.
        startSeconds: Math.round((total - inBatches / 1000) * 10) / 10,
        phaseSeconds: { validate: phase("validate"), merge: phase("merge"), quarantine: phase("quarantine") },
        // Its rows/s over StreamSink's (the target is >= 0.5 on local[2]).
        ratio: Math.round((nodeSeconds / total) * 100) / 100,
      };
    };
    console.log(
      JSON.stringify({
        bench: "spark-vs-streamsink",
        events: n,
        files,
        good: node.goodCount,
        quarantined: node.badCount,
        spark: figures("local[2]", local),
        ...(cluster ? { sparkCluster: figures("standalone: 2 workers x 1 core", cluster) } : {}),
        streamSink: { engine: "duckdb", seconds: Math.round(nodeSeconds * 100) / 100, rowsPerSecond: rate(node.sourceCount, nodeSeconds), batches: node.batches },
      }),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
