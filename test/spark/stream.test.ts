/**
 * SparkStreamSink on a real Spark (local[2]) and a real Kafka broker: Kafka → Delta with the
 * example contract, good rows merged on the primary key, bad rows quarantined; available_now
 * and processing-time triggers; a second run over the same checkpoint writes nothing twice; a
 * contract with its quarantine off counts its bad rows and writes none.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeltaReader, SparkStreamSink } from "../../src/spark/stream-sink.js";
import { startKafka, type KafkaBroker } from "../support/kafka.js";
import { waitFor } from "../support/proc.js";
import { requireSpark } from "../support/spark.js";
import { orderEvents, sparkOrdersContract } from "./events.js";

requireSpark();
const kafka: KafkaBroker = await startKafka();
const c = sparkOrdersContract();
let dir: string;
let reader: DeltaReader;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-stream-"));
  reader = await DeltaReader.start();
}, 180_000);
afterAll(async () => {
  await reader?.close();
  await kafka.stop();
  await rm(dir, { recursive: true, force: true });
});

async function produce(topic: string, values: string[]): Promise<void> {
  const producer = new kafkajs.Kafka({ brokers: kafka.brokers, logLevel: kafkajs.logLevel.NOTHING }).producer();
  await producer.connect();
  await producer.send({ topic, messages: values.map((value, i) => ({ key: String(i % 7), value })) });
  await producer.disconnect();
}

describe("SparkStreamSink: Kafka → Delta", () => {
  it("available_now: every record lands once, good merged by key, bad quarantined; a rerun writes nothing", async () => {
    const topic = "orders-now";
    await kafka.createTopic(topic, 2);
    const { values, distinctGoodKeys } = orderEvents(120, 1);
    await produce(topic, values);
    const targetPath = join(dir, "now", "orders");
    const checkpointLocation = join(dir, "now", "_checkpoint");
    const sink = (): SparkStreamSink =>
      new SparkStreamSink(c, {
        source: { type: "kafka", bootstrapServers: kafka.brokers, topic, maxOffsetsPerTrigger: 50 },
        checkpointLocation,
        targetPath,
        trigger: "available_now",
      });
    const first = await sink().run();
    expect(first.sourceCount).toBe(values.length);
    expect(first.goodCount + first.badCount + first.supersededCount).toBe(values.length);
    expect(first.batches).toBeGreaterThan(1);
    const good = await reader.read(targetPath, ["order_id"]);
    const keys = good.map((r) => r.order_id);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(distinctGoodKeys);
    const bad = await reader.read(`${targetPath}_quarantine`);
    expect(bad.length).toBe(first.badCount);
    expect(bad.length).toBe(values.length / 5);
    expect(bad.every((b) => Array.isArray(b.rule_ids) && (b.rule_ids as unknown[]).length > 0 && typeof b.raw === "string")).toBe(true);
    expect(new Set(bad.map((b) => b.quarantine_id)).size).toBe(bad.length);
    // Same checkpoint, nothing new: no records, nothing written again.
    const again = await sink().run();
    expect(again.sourceCount).toBe(0);
    expect((await reader.read(targetPath)).length).toBe(keys.length);
    expect((await reader.read(`${targetPath}_quarantine`)).length).toBe(bad.length);
  }, 900_000);

  it("processingTime: runs until stopped, picking up records produced while it runs", async () => {
    const topic = "orders-pt";
    await kafka.createTopic(topic, 2);
    const { values, distinctGoodKeys } = orderEvents(60, 2);
    await produce(topic, values.slice(0, 30));
    const targetPath = join(dir, "pt", "orders");
    let seen = 0;
    const sink = new SparkStreamSink(c, {
      source: { type: "kafka", bootstrapServers: kafka.brokers, topic },
      checkpointLocation: join(dir, "pt", "_checkpoint"),
      targetPath,
      trigger: { processingTime: "1 second" },
      onBatch: (r) => (seen += r.sourceCount),
    });
    const running = sink.run();
    await waitFor("the first 30 records", async () => seen >= 30, 600_000);
    await produce(topic, values.slice(30));
    await waitFor("all 60 records", async () => seen >= 60, 600_000);
    await sink.stop();
    const summary = await running;
    expect(summary.stoppedBy).toBe("stop");
    expect(summary.sourceCount).toBe(60);
    const good = await reader.read(targetPath);
    const bad = await reader.read(`${targetPath}_quarantine`);
    expect(new Set(good.map((r) => r.order_id)).size).toBe(good.length);
    expect(good.length).toBe(distinctGoodKeys);
    expect(bad.length).toBe(12);
  }, 900_000);

  it("quarantine.enabled: false: the bad rows are counted, not written, as StreamSink does", async () => {
    const topic = "orders-noq";
    await kafka.createTopic(topic, 1);
    const { values, distinctGoodKeys } = orderEvents(40, 3);
    await produce(topic, values);
    const targetPath = join(dir, "noq", "orders");
    const summary = await new SparkStreamSink({ ...c, quarantine: { ...c.quarantine, enabled: false } }, {
      source: { type: "kafka", bootstrapServers: kafka.brokers, topic },
      checkpointLocation: join(dir, "noq", "_checkpoint"),
      targetPath,
    }).run();
    expect(summary.badCount).toBe(values.length / 5);
    expect(summary.goodCount + summary.badCount + summary.supersededCount).toBe(values.length);
    expect((await reader.read(targetPath)).length).toBe(distinctGoodKeys);
    expect(existsSync(summary.quarantinePath)).toBe(false);
  }, 900_000);
});
