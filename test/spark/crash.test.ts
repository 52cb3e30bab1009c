/**
 * SparkStreamSink survives SIGKILL of its driver: killed three times mid-stream (after a batch
 * committed, while the next is in flight), then run again with the same checkpointLocation. In
 * the end every record is counted once: no loss, no duplicate keys, no duplicate quarantine rows.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeltaReader, SparkStreamSink } from "../../src/spark/stream-sink.js";
import { startKafka, type KafkaBroker } from "../support/kafka.js";
import { requireSpark } from "../support/spark.js";
import { orderEvents, sparkOrdersContract } from "./events.js";

requireSpark();
const kafka: KafkaBroker = await startKafka();
let dir: string;
let reader: DeltaReader;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-crash-"));
  reader = await DeltaReader.start();
}, 180_000);
afterAll(async () => {
  await reader?.close();
  await kafka.stop();
  await rm(dir, { recursive: true, force: true });
});

it("loses nothing and duplicates nothing across three SIGKILLs of the driver", async () => {
  const topic = "orders-crash";
  await kafka.createTopic(topic, 1);
  const { values, distinctGoodKeys } = orderEvents(100, 3);
  const producer = new kafkajs.Kafka({ brokers: kafka.brokers, logLevel: kafkajs.logLevel.NOTHING }).producer();
  await producer.connect();
  await producer.send({ topic, messages: values.map((value) => ({ value })) });
  await producer.disconnect();
  const targetPath = join(dir, "orders");
  const options = {
    source: { type: "kafka" as const, bootstrapServers: kafka.brokers, topic, maxOffsetsPerTrigger: 20 },
    checkpointLocation: join(dir, "_checkpoint"),
    targetPath,
  };
  const contract = sparkOrdersContract();
  let killed = 0;
  for (let round = 0; round < 3; round++) {
    const sink: SparkStreamSink = new SparkStreamSink(contract, {
      ...options,
      // Killed right after a batch committed: the next batch is already being read.
      onBatch: () => {
        if (sink.driverPid !== undefined) process.kill(sink.driverPid, "SIGKILL");
      },
    });
    await expect(sink.run()).rejects.toThrow(/driver/);
    killed++;
  }
  expect(killed).toBe(3);
  const last = await new SparkStreamSink(contract, options).run();
  expect(last.batches).toBeGreaterThan(0);
  const good = await reader.read(targetPath, ["order_id"]);
  const bad = await reader.read(`${targetPath}_quarantine`);
  const keys = good.map((r) => r.order_id);
  expect(new Set(keys).size).toBe(keys.length);
  expect(keys.length).toBe(distinctGoodKeys);
  expect(bad.length).toBe(values.length / 5);
  expect(new Set(bad.map((b) => b.quarantine_id)).size).toBe(bad.length);
}, 1_500_000);
