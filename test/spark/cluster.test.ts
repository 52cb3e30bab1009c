/**
 * SparkStreamSink on a real cluster: a Spark standalone master and two workers on loopback, each
 * stream submitted to `spark://…`, from the three sources Spark reads:
 * - Kafka (3 partitions) → Delta merged on the key;
 * - a directory of JSON-lines files, one file per micro-batch → a bronze Delta table (append);
 * - that bronze table as a Delta source → silver, merged on the key.
 * While each run is under way one worker is SIGKILLed with its executor (Spark runs its tasks
 * again on the other worker), then the driver, its Python and its JVM at once (the run resumes
 * from `checkpointLocation`). The tables, read back with delta-rs, hold every record once:
 * nothing lost, nothing duplicated, every input good or quarantined. A killed worker is started
 * again before the next test, so each kill leaves one live worker behind.
 */
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { SparkStreamSink, type SparkBatchReport, type SparkStreamSinkOptions } from "../../src/spark/stream-sink.js";
import { readDelta } from "../support/delta.js";
import { startKafka, type KafkaBroker } from "../support/kafka.js";
import { killTree } from "../support/proc.js";
import { startSparkCluster, type SparkCluster } from "../support/spark-cluster.js";
import { requireSpark } from "../support/spark.js";
import { bronzeOrdersYaml, orderEvents, sparkOrdersContract } from "./events.js";

const runtime = requireSpark();
let kafka: KafkaBroker;
let cluster: SparkCluster;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-cluster-run-"));
  [kafka, cluster] = await Promise.all([startKafka(), startSparkCluster(runtime, 2)]);
}, 300_000);
beforeEach(async () => {
  // The previous test killed a worker: this one starts with two live workers again.
  for (const i of cluster.killed()) await cluster.restartWorker(i);
}, 300_000);
afterAll(async () => {
  await cluster?.stop();
  await kafka?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// One core per worker: both workers hold an executor, and tasks of a lost one run again.
const CONF = {
  "spark.cores.max": "2",
  "spark.executor.cores": "1",
  "spark.executor.memory": "512m",
  "spark.task.maxFailures": "8",
};

/** How many executors worker i's current process was asked to launch. */
const launches = (i: number): number => (cluster.workerLog(i).match(/Asked to launch executor/g) ?? []).length;

/**
 * Runs the stream, SIGKILLing worker `worker` after its first committed micro-batch and the
 * driver after its second, then runs it again on the same checkpoint to the end. Returns each
 * batch's last report by batch id (a replayed batch reports again).
 */
async function killThenResume(contract: Contract, options: SparkStreamSinkOptions, worker: number): Promise<Map<number, SparkBatchReport>> {
  const reports = new Map<number, SparkBatchReport>();
  const launchedBefore = launches(worker);
  let batches = 0;
  const first: SparkStreamSink = new SparkStreamSink(contract, {
    ...options,
    onBatch: (r) => {
      reports.set(r.batchId, r);
      batches++;
      // After the first commit, the next micro-batch is in flight: lose a worker under it.
      if (batches === 1) cluster.killWorker(worker);
      // After the next one: lose the driver, its Python and its JVM at once.
      if (batches === 2 && first.driverPid !== undefined) killTree(first.driverPid);
    },
  });
  await expect(first.run()).rejects.toThrow(/driver/);
  expect(batches).toBe(2);
  // The killed worker ran an executor of this run.
  expect(launches(worker)).toBeGreaterThan(launchedBefore);

  const rest = await new SparkStreamSink(contract, { ...options, onBatch: (r) => reports.set(r.batchId, r) }).run();
  expect(rest.batches).toBeGreaterThan(0);
  return reports;
}

/** in = good + quarantined (+ superseded by a later row of the same key), batch by batch and in all. */
function inputCounted(reports: Map<number, SparkBatchReport>, input: number): void {
  const all = [...reports.values()];
  for (const r of all) expect(r.goodCount + r.badCount + r.supersededCount).toBe(r.sourceCount);
  expect(all.reduce((t, r) => t + r.sourceCount, 0)).toBe(input);
}

it("loses and duplicates nothing when a worker, then the driver, is killed mid-stream", async () => {
  const topic = "orders-cluster";
  await kafka.createTopic(topic, 3);
  const { values, distinctGoodKeys } = orderEvents(30_000, 5);
  const producer = new kafkajs.Kafka({ brokers: kafka.brokers, logLevel: kafkajs.logLevel.NOTHING }).producer();
  await producer.connect();
  for (let i = 0; i < values.length; i += 5_000) {
    await producer.send({ topic, messages: values.slice(i, i + 5_000).map((value, j) => ({ value, partition: (i + j) % 3 })) });
  }
  await producer.disconnect();
  const targetPath = join(dir, "orders");
  const options: SparkStreamSinkOptions = {
    source: { type: "kafka", bootstrapServers: kafka.brokers, topic, maxOffsetsPerTrigger: 5_000 },
    checkpointLocation: join(dir, "_checkpoint"),
    targetPath,
    master: cluster.master,
    conf: CONF,
  };
  const reports = await killThenResume(sparkOrdersContract(), options, 0);
  inputCounted(reports, values.length);

  const good = readDelta(targetPath).rows;
  const bad = readDelta(`${targetPath}_quarantine`).rows;
  const keys = good.map((r) => r["order_id"]);
  expect(new Set(keys).size).toBe(keys.length);
  expect(keys.length).toBe(distinctGoodKeys);
  // Every 5th event is bad; each is quarantined once.
  expect(bad.length).toBe(values.length / 5);
  expect(new Set(bad.map((b) => b["quarantine_id"])).size).toBe(bad.length);
  expect(new Set(bad.map((b) => b["position"])).size).toBe(bad.length);
}, 1_200_000);

// JSON files → bronze → silver: the files' events, a quarter of the bad ones not JSON.
const files = { count: 3, lines: 2_000 };
const json = orderEvents(files.count * files.lines, 11);
const notJson = json.values.filter((v) => v.includes("not json")).length;
const bronzePath = (): string => join(dir, "lake", "bronze_orders");

const bronzeContract = (): Contract => parseContract(bronzeOrdersYaml(join(dir, "lake")));

it("JSON files → bronze: loses and duplicates nothing when a worker, then the driver, is killed", async () => {
  const input = join(dir, "json-in");
  await mkdir(input);
  for (let f = 0; f < files.count; f++) {
    await writeFile(join(input, `part-${f}.json`), json.values.slice(f * files.lines, (f + 1) * files.lines).join("\n") + "\n");
  }
  const options: SparkStreamSinkOptions = {
    source: { type: "json", path: input, maxFilesPerTrigger: 1 },
    checkpointLocation: join(dir, "bronze-checkpoint"),
    master: cluster.master,
    conf: CONF,
  };
  const reports = await killThenResume(bronzeContract(), options, 1);
  inputCounted(reports, json.values.length);

  const good = readDelta(bronzePath()).rows;
  const bad = readDelta(`${bronzePath()}_quarantine`).rows;
  // An append: each JSON event once, told apart by its email (one per event).
  const emails = good.map((r) => r["email"]);
  expect(new Set(emails).size).toBe(emails.length);
  expect(new Set(emails)).toEqual(new Set(json.values.filter((v) => !v.includes("not json")).map((v) => (JSON.parse(v) as { email: string }).email)));
  expect(bad.length).toBe(notJson);
  expect(new Set(bad.map((b) => b["quarantine_id"])).size).toBe(bad.length);
  expect(bad.map((b) => b["raw"]).sort()).toEqual(json.values.filter((v) => v.includes("not json")).sort());
  expect(good.length + bad.length).toBe(json.values.length);
}, 1_200_000);

it("bronze → silver (Delta source): loses and duplicates nothing when a worker, then the driver, is killed", async () => {
  const bronze = readDelta(bronzePath());
  expect(bronze.rows.length).toBe(json.values.length - notJson);
  // A commit of at least one file per JSON file: with one file per micro-batch, more batches than
  // the first run's two.
  expect(bronze.version).toBe(files.count - 1);
  const targetPath = join(dir, "silver", "orders");
  const options: SparkStreamSinkOptions = {
    source: { type: "delta", path: bronzePath(), maxFilesPerTrigger: 1 },
    checkpointLocation: join(dir, "silver-checkpoint"),
    targetPath,
    master: cluster.master,
    conf: CONF,
  };
  const reports = await killThenResume(sparkOrdersContract(), options, 0);
  inputCounted(reports, bronze.rows.length);

  const good = readDelta(targetPath).rows;
  const bad = readDelta(`${targetPath}_quarantine`).rows;
  const keys = good.map((r) => r["order_id"]);
  expect(new Set(keys).size).toBe(keys.length);
  expect(keys.length).toBe(json.distinctGoodKeys);
  // Every 5th event is bad: the not-JSON ones stayed out of bronze, silver quarantines the rest once.
  expect(bad.length).toBe(json.values.length / 5 - notJson);
  expect(new Set(bad.map((b) => b["quarantine_id"])).size).toBe(bad.length);
}, 1_200_000);
