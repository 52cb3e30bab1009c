/**
 * Batches that grow under a Kafka backlog, against a real broker (test/support/kafka.ts): the
 * consumer's lag (high watermarks of its fetches less its cursor) lets a drain's batches double
 * from the default 1000; a batchSize the user sets caps them; the budget in bytes holds; every
 * event lands once. No timing is asserted (`maxWaitMs` is out of reach).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import type { StreamOverrides } from "../../src/pipeline/settings.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import { createSource } from "../../src/sources/registry.js";
import "../../src/sources/kafka/connector.js";
import { startKafka } from "../support/kafka.js";
import { requireService } from "../support/services.js";

const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const kafka = await requireService("connectors/kafka-growth (Apache Kafka broker)", () => startKafka());
const dir = mkdtempSync(join(tmpdir(), "ll-kafka-growth-"));
afterAll(async () => {
  await kafka?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const EVENTS = 15_000;

async function produce(topic: string): Promise<void> {
  await kafka!.createTopic(topic, 3);
  const producer = new kafkajs.Kafka({ brokers: kafka!.brokers, logLevel: kafkajs.logLevel.NOTHING }).producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    for (let start = 0; start < EVENTS; start += 1000) {
      const messages = Array.from({ length: 1000 }, (_, k) => ({ partition: (start + k) % 3, value: JSON.stringify(orderEvent(start + k)) }));
      await producer.send({ topic, messages });
    }
  } finally {
    await producer.disconnect();
  }
}

async function drain(topic: string, options: StreamOverrides): Promise<BatchReport[]> {
  await produce(topic);
  const lake = join(dir, topic);
  const batches: BatchReport[] = [];
  const source = await createSource({ type: "kafka", brokers: kafka!.brokers.join(","), topic, group_id: `${topic}-g`, log_level: "nothing" });
  const summary = await new StreamSink(contractPath, source, {
    targetPath: lake,
    checkpoint: join(dir, `${topic}.sqlite`),
    maxWaitMs: 600_000,
    ...options,
    onBatch: (b) => void batches.push(b),
  }).run("available_now");
  expect(summary.sourceCount).toBe(EVENTS);
  const contract = await loadContract(contractPath);
  const ids = (await readTable(contract, { targetPath: lake })).map((r) => Number(r["order_id"]));
  const want = Array.from({ length: EVENTS }, (_, i) => i).filter((i) => !isBadOrder(i));
  expect(ids.sort((a, b) => a - b)).toEqual(want);
  expect(await readQuarantine(contract, { targetPath: lake })).toHaveLength(EVENTS - want.length);
  return batches;
}

describe.skipIf(!kafka)("batch sizes under a Kafka backlog", () => {
  it("grow from the default 1000 while the consumer lags, within maxBatchBytes", async () => {
    const budget = 1_000_000;
    const batches = await drain("grow", { maxBatchBytes: budget });
    const sizes = batches.map((b) => b.sourceCount);
    expect(sizes[0]).toBe(1000);
    expect(sizes[1]).toBe(2000);
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(4000);
    for (const b of batches) expect(b.bytes).toBeLessThanOrEqual(budget);
    expect(batches.length).toBeLessThan(EVENTS / 1000);
  }, 120_000);

  it("never exceed a batchSize the user set", async () => {
    const batches = await drain("capped", { batchSize: 1500 });
    for (const b of batches) expect(b.sourceCount).toBeLessThanOrEqual(1500);
    expect(batches).toHaveLength(10);
  }, 120_000);
});
