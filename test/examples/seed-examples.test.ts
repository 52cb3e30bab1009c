/**
 * The streaming guide's examples (seed/streaming.md), one test each, translated to TypeScript
 * and run against local servers: an SSE server, a WebSocket server (`ws`), and a Kafka broker
 * (test/support/kafka.ts). Translation rules: Python keyword arguments become one options object
 * in camelCase; `for event in connector.stream()` becomes `for await`; the public feeds become
 * local servers; lake and checkpoint files go to a temporary directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { orderEvent } from "../../examples/orders.js";
import { KafkaOffsetSource, SQLiteCheckpointStore, SSEOffsetSource, StreamSink, WatermarkChunkSource } from "../../src/index.js";
import type { FetchChunk } from "../../src/index.js";
import { KafkaConnector, SSEConnector, WebSocketConnector } from "../../src/sources/connectors.js";
import { ScriptedSSEServer } from "../connectors/sse-server.js";
import { startKafka } from "../support/kafka.js";
import { requireService } from "../support/services.js";

const dir = mkdtempSync(join(tmpdir(), "ll-seed-"));
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/** The first `n` items of an async iterable, then stop it. */
async function take<T>(iterable: AsyncIterable<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) {
    out.push(item);
    if (out.length >= n) break;
  }
  return out;
}

const recentChanges = Array.from({ length: 5 }, (_, i) => ({
  id: String(i + 1),
  data: JSON.stringify({ type: "edit", title: `Page ${i + 1}`, order_id: i + 1 }),
}));

async function sseServer(): Promise<ScriptedSSEServer> {
  const server = await new ScriptedSSEServer([...recentChanges]).start();
  closers.push(() => server.stop());
  return server;
}

describe("seed examples without a broker", () => {
  it("SSE: SSEConnector(url) and `for event in connector.stream()`", async () => {
    const server = await sseServer();
    const connector = new SSEConnector(server.url);
    const events = (await take(connector.stream(), 5)) as Array<{ type: string; title: string }>;
    expect(events.map((e) => `${e.type} | ${e.title}`)).toEqual(recentChanges.map((_, i) => `edit | Page ${i + 1}`));
  });

  it("WebSocket: WebSocketConnector({ url, subscribeMessage }) sends the subscription, then streams", async () => {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    closers.push(() => new Promise((r) => wss.close(r)));
    await new Promise((r) => wss.once("listening", r));
    const subscriptions: unknown[] = [];
    wss.on("connection", (socket) => {
      socket.on("message", (raw: Buffer) => {
        subscriptions.push(JSON.parse(raw.toString()));
        for (const price of ["97000.10", "97000.20"]) socket.send(JSON.stringify({ type: "ticker", product_id: "BTC-USD", price }));
      });
    });
    const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    // As the guide writes it: the URL among the options.
    const connector = new WebSocketConnector({
      url,
      subscribeMessage: { type: "subscribe", channels: [{ name: "ticker", product_ids: ["BTC-USD"] }] },
    });
    const events = (await take(connector.stream(), 2)) as Array<{ price?: string }>;
    await connector.close();
    expect(subscriptions).toEqual([{ type: "subscribe", channels: [{ name: "ticker", product_ids: ["BTC-USD"] }] }]);
    expect(events.map((e) => `BTC Price: $${e.price}`)).toEqual(["BTC Price: $97000.10", "BTC Price: $97000.20"]);
  });

  it("SSEOffsetSource(url): the cursor is the last event id", async () => {
    const server = await sseServer();
    const src = new SSEOffsetSource(server.url, { drainIdleMs: 300 });
    const sink = new StreamSink("contracts/bronze_orders.yaml", src, {
      engine: "duckdb",
      checkpoint: new SQLiteCheckpointStore(join(dir, "sse-checkpoints.sqlite")),
      checkpointKey: "sse",
      targetPath: join(dir, "sse-lake"),
    });
    const summary = await sink.run("available_now");
    expect(summary.sourceCount).toBe(5);
    expect(summary.cursor).toBe("5");
  });

  it("WatermarkChunkSource(fetch_chunk, watermark_field='id', chunk_size=1000)", async () => {
    const table = Array.from({ length: 2500 }, (_, i) => ({ id: i + 1, ...orderEvent(i + 1, 0) }));
    // fetch_chunk(after, limit): rows with id > after, ordered by id, at most `limit` of them.
    const fetchChunk: FetchChunk = async (after, limit) => table.filter((r) => after === undefined || r.id > Number(after)).slice(0, limit);
    const src = new WatermarkChunkSource(fetchChunk, { watermarkField: "id", chunkSize: 1000 });
    const sink = new StreamSink("contracts/bronze_orders.yaml", src, {
      engine: "duckdb",
      checkpoint: new SQLiteCheckpointStore(join(dir, "wm-checkpoints.sqlite")),
      checkpointKey: "orders-backfill",
      batchSize: 1000,
      targetPath: join(dir, "wm-lake"),
    });
    const summary = await sink.run("available_now");
    expect(summary.sourceCount).toBe(2500);
    expect(summary.cursor).toEqual({ watermark: 2500 });
  });

  it("StreamSink(contract, an iterable of dicts, engine='polars', SQLiteCheckpointStore, checkpoint_key, batch_size)", async () => {
    const events = Array.from({ length: 3000 }, (_, i) => orderEvent(i, 0.05));
    const sink = new StreamSink("contracts/bronze_orders.yaml", events, {
      engine: "polars",
      checkpoint: new SQLiteCheckpointStore(join(dir, "checkpoints.sqlite")),
      checkpointKey: "orders",
      batchSize: 1000,
      targetPath: join(dir, "lake"),
    });
    const summary = await sink.run("available_now");
    // print(summary.good_count, summary.bad_count, summary.cursor)
    expect(summary.goodCount + summary.badCount + summary.supersededCount).toBe(3000);
    expect(summary.badCount).toBeGreaterThan(0);
    expect(summary.cursor).not.toBeNull();
  });
});

const kafka = await requireService("examples/seed (Apache Kafka broker)", () => startKafka());
afterAll(async () => kafka?.stop());

describe.skipIf(!kafka)("seed examples with a Kafka broker", () => {
  const produce = async (topic: string, n: number) => {
    await kafka!.createTopic(topic, 3);
    const producer = new kafkajs.Kafka({ brokers: kafka!.brokers, logLevel: kafkajs.logLevel.NOTHING }).producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ key: String(i), value: JSON.stringify(orderEvent(i, 0)) })) });
    await producer.disconnect();
  };

  it("KafkaConnector(brokers=[…], topic, consumer_group) and `for event in connector.stream()`", async () => {
    const topic = `production_orders_${Date.now()}`;
    await produce(topic, 20);
    const connector = new KafkaConnector({ brokers: kafka!.brokers, topic, consumerGroup: "lakelogic_processor" });
    const events = (await take(connector.stream(), 20)) as Array<{ order_id: number }>;
    await connector.close();
    expect(events.map((e) => e.order_id).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it("KafkaOffsetSource('orders', brokers='broker:9092', group_id) through StreamSink", async () => {
    const topic = `orders_${Date.now()}`;
    await produce(topic, 50);
    const src = new KafkaOffsetSource(topic, { brokers: kafka!.brokers.join(","), groupId: "lakelogic-bronze" });
    const summary = await new StreamSink("contracts/bronze_orders.yaml", src, {
      engine: "duckdb",
      checkpoint: new SQLiteCheckpointStore(join(dir, "kafka-checkpoints.sqlite")),
      checkpointKey: "orders",
      targetPath: join(dir, "kafka-lake"),
    }).run("available_now");
    expect(summary.sourceCount).toBe(50);
    expect(Object.values(summary.cursor as Record<string, number>).reduce((a, b) => a + Number(b), 0)).toBe(50);
  });
});
