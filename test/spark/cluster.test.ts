/**
 * SparkStreamSink on a real cluster: a Spark standalone master and two workers on loopback, the
 * stream submitted to `spark://…`, Kafka (3 partitions) → Delta merged on the key. While the run
 * is under way one worker is SIGKILLed with its executor (Spark runs its tasks again on the other
 * worker), then the driver is SIGKILLed (the run resumes from `checkpointLocation`). The tables,
 * read back with delta-rs, hold every record once: nothing lost, nothing duplicated, every input
 * good (one row per key) or quarantined.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SparkStreamSink, type SparkStreamSinkOptions } from "../../src/spark/stream-sink.js";
import { readDelta } from "../support/delta.js";
import { startKafka, type KafkaBroker } from "../support/kafka.js";
import { startSparkCluster, type SparkCluster } from "../support/spark-cluster.js";
import { requireSpark } from "../support/spark.js";
import { orderEvents, sparkOrdersContract } from "./events.js";

const runtime = requireSpark();
let kafka: KafkaBroker;
let cluster: SparkCluster;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-cluster-run-"));
  [kafka, cluster] = await Promise.all([startKafka(), startSparkCluster(runtime, 2)]);
}, 300_000);
afterAll(async () => {
  await cluster?.stop();
  await kafka?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

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
    // One core per worker: both workers hold an executor, and tasks of a lost one run again.
    conf: { "spark.cores.max": "2", "spark.executor.cores": "1", "spark.executor.memory": "512m", "spark.task.maxFailures": "8" },
  };
  const contract = sparkOrdersContract();

  let batches = 0;
  const first: SparkStreamSink = new SparkStreamSink(contract, {
    ...options,
    onBatch: () => {
      batches++;
      // After the first commit, the next micro-batch is in flight: lose a worker under it.
      if (batches === 1) cluster.killWorker(0);
      // After the next one: lose the driver.
      if (batches === 2 && first.driverPid !== undefined) process.kill(first.driverPid, "SIGKILL");
    },
  });
  await expect(first.run()).rejects.toThrow(/driver/);
  expect(batches).toBe(2);
  expect(cluster.workerLog(0)).toMatch(/Launching executor|Asked to launch executor/);

  const rest = await new SparkStreamSink(contract, options).run();
  expect(rest.batches).toBeGreaterThan(0);

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
