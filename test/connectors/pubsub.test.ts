/**
 * The Pub/Sub connector against Google's own in-memory fake (pstest, built from the Go module
 * proxy by scripts/provision-pubsub.sh, on 127.0.0.1), reached through PUBSUB_EMULATOR_HOST
 * like the real emulator. The fake reports how often each message was delivered and acked, so
 * the tests check acknowledgements on the server, not in the client.
 */
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { PubSubConnector, type PubSubMessageMeta } from "../../src/sources/pubsub/source.js";
import { pubsubSpec } from "../../src/sources/pubsub/spec.js";
import { createSource } from "../../src/sources/registry.js";
import { StreamSink, StreamRunError, type BatchReport } from "../../src/sink/index.js";
import { startPubSub } from "../support/pubsub.js";
import { requireService } from "../support/services.js";
import { expectedOrders, ordersContract, readLake, sorted, tempDirs } from "./queue-lake.js";

process.env.METADATA_SERVER_DETECTION ??= "none";
const ps = await requireService("connectors/pubsub (pstest fake)", () => startPubSub({ minAckDeadlineSeconds: 1 }));
const dirs = tempDirs("ll-pubsub");
afterAll(async () => {
  await ps?.stop();
  dirs.cleanup();
});

let names = 0;
const newSubscription = (options?: { ordering?: boolean; ackDeadlineSeconds?: number }) =>
  ps!.createSubscription(`s${++names}-${Date.now()}`, options);

async function publish(
  topic: string,
  messages: Array<{ data: Buffer; attributes?: Record<string, string>; orderingKey?: string }>,
  ordering = false,
): Promise<string[]> {
  const t = ps!.pubsub.topic(topic, { messageOrdering: ordering, batching: { maxMessages: 500, maxMilliseconds: 5 } });
  const ids = await Promise.all(messages.map((m) => t.publishMessage(m)));
  await t.flush();
  return ids;
}

const orders = (from: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({ data: Buffer.from(JSON.stringify(orderEvent(from + k))), attributes: { n: String(from + k) } }));

/** How the fake saw the messages of one topic. */
async function serverView(topic: string) {
  const all = (await ps!.messages()).filter((m) => m.topic.endsWith(`/topics/${topic}`));
  return {
    count: all.length,
    acked: all.filter((m) => m.acks > 0).length,
    maxDeliveries: Math.max(0, ...all.map((m) => m.deliveries)),
    all,
  };
}

describe.skipIf(!ps)("PubSubConnector on pstest", () => {
  it("drains orders and poison messages through StreamSink: rows once, poison quarantined, everything acked", async () => {
    const { topic, subscription } = await newSubscription();
    const N = 1500;
    const poison = [Buffer.from("not json at all"), Buffer.from([0xff, 0xfe, 0x00, 0x41])];
    await publish(topic, [...orders(0, N), ...poison.map((data) => ({ data }))]);
    const lake = dirs.make("drain");
    const reports: BatchReport[] = [];
    const sink = new StreamSink(ordersContract, new PubSubConnector({ projectId: ps!.projectId, subscription }), {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: 250,
      maxWaitMs: 500,
      onBatch: (r) => void reports.push(r),
    });
    const summary = await sink.run("available_now");
    expect(summary.sourceCount).toBe(N + poison.length);
    const { good, bad } = expectedOrders(N);
    const rows = await readLake(lake);
    expect(sorted(rows.goodIds)).toEqual(good);
    expect(sorted(rows.badIds)).toEqual(bad);
    expect(rows.poison).toHaveLength(2);
    // Text that is not JSON is kept as text; bytes that are not UTF-8 as base64.
    expect(rows.poison.map((p) => p.raw).sort()).toEqual([Buffer.from([0xff, 0xfe, 0x00, 0x41]).toString("base64"), "not json at all"].sort());
    const view = await serverView(topic);
    expect(view).toMatchObject({ count: N + 2, acked: N + 2 });
    expect(summary.lag?.oldestAgeMs).toEqual(expect.any(Number));
    expect(reports.every((r) => r.lag?.oldestAgeMs !== undefined)).toBe(true);
  });

  it("acknowledges nothing when the batch fails before its commit, and the messages come back at once (I8)", async () => {
    const { topic, subscription } = await newSubscription({ ackDeadlineSeconds: 60 });
    const N = 100;
    await publish(topic, orders(0, N));
    const lake = dirs.make("fail");
    const failing = new StreamSink(ordersContract, new PubSubConnector({ projectId: ps!.projectId, subscription }), {
      targetPath: lake,
      checkpoint: `${lake}/ckpt.sqlite`,
      batchSize: 40,
      maxWaitMs: 500,
      hooks: {
        afterWrite: () => {
          throw new Error("disk on fire between write and commit");
        },
      },
    });
    await expect(failing.run("available_now")).rejects.toBeInstanceOf(StreamRunError);
    await new Promise((r) => setTimeout(r, 300)); // the client sends acks within ~100 ms: none may arrive
    expect((await serverView(topic)).acked).toBe(0);

    // The failed batch and the buffered messages were nacked, not left to the 60 s subscription
    // deadline: a new run gets them right away. (Messages the fake was sending at the moment the
    // stream closed come back after the stream's 10 s deadline, hence a second run.)
    const started = Date.now();
    const runs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const again = new StreamSink(ordersContract, new PubSubConnector({ projectId: ps!.projectId, subscription }), {
        targetPath: lake,
        checkpoint: `${lake}/ckpt.sqlite`,
        batchSize: 40,
        maxWaitMs: 500,
      });
      const summary = await again.run("available_now");
      runs.push(summary.sourceCount);
      if (summary.totals.sourceCount === N) break;
      await new Promise((r) => setTimeout(r, 5000));
    }
    expect(runs[0]).toBeGreaterThanOrEqual(40);
    expect(runs.reduce((a, b) => a + b, 0)).toBe(N);
    expect(Date.now() - started).toBeLessThan(40_000);
    expect(sorted((await readLake(lake)).goodIds)).toEqual(expectedOrders(N).good);
    await new Promise((r) => setTimeout(r, 300));
    expect((await serverView(topic)).acked).toBe(N);
  }, 60_000);

  it("keeps extending the ack deadline while a write takes longer than it", async () => {
    const { topic, subscription } = await newSubscription({ ackDeadlineSeconds: 2 });
    const N = 20;
    await publish(topic, orders(0, N));
    const lake = dirs.make("extend");
    const sink = new StreamSink(ordersContract, new PubSubConnector({ projectId: ps!.projectId, subscription, ackDeadlineSeconds: 2 }), {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: N,
      maxWaitMs: 1000,
      hooks: { afterWrite: () => new Promise((r) => setTimeout(r, 6000)) }, // three deadlines long
    });
    const summary = await sink.run("available_now");
    expect(summary).toMatchObject({ sourceCount: N, batches: 1 });
    await new Promise((r) => setTimeout(r, 300));
    // Delivered once each: the deadline never ran out while the batch was held.
    expect(await serverView(topic)).toMatchObject({ count: N, acked: N, maxDeliveries: 1 });
  }, 30_000);

  it("hands messages over in ordering-key order, with attributes and ordering key as metadata", async () => {
    const { topic, subscription } = await newSubscription({ ordering: true });
    const keys = ["k1", "k2", "k3"];
    const PER = 6;
    const messages = [];
    for (let i = 0; i < PER; i++) {
      for (const k of keys) messages.push({ data: Buffer.from(JSON.stringify({ k, seq: i })), orderingKey: k, attributes: { seq: String(i) } });
    }
    await publish(topic, messages, true);
    const source = new PubSubConnector({ projectId: ps!.projectId, subscription });
    const seen = new Map<string, number[]>(keys.map((k) => [k, []]));
    const stop = new AbortController();
    try {
      for (let round = 0; round < 100 && [...seen.values()].some((s) => s.length < PER); round++) {
        const got = await source.receive(100, 300, stop.signal);
        for (const r of got) {
          const v = r.value as { k: string; seq: number };
          const meta = r.meta as unknown as PubSubMessageMeta;
          expect(meta.orderingKey).toBe(v.k);
          expect(meta.attributes).toEqual({ seq: String(v.seq) });
          expect(meta.publishTime).toMatch(/^\d{4}-\d\d-\d\dT/);
          seen.get(v.k)!.push(v.seq);
        }
        await source.ack(got.map((r) => r.ackToken));
      }
    } finally {
      await source.close();
    }
    for (const k of keys) expect(seen.get(k)).toEqual(Array.from({ length: PER }, (_, i) => i));
  });

  it("iterator API: values acked once the caller moves on; a break gives back the one it held", async () => {
    const { topic, subscription } = await newSubscription();
    await publish(topic, orders(0, 10));
    const connector = new PubSubConnector({ projectId: ps!.projectId, subscription });
    const first: number[] = [];
    for await (const v of connector.stream()) {
      first.push((v as { order_id: number }).order_id);
      if (first.length === 4) break;
    }
    await connector.close();
    await new Promise((r) => setTimeout(r, 300));
    const view = await serverView(topic);
    // Three finished values were acked; the fourth (held at the break) and the rest were not.
    expect(view.acked).toBe(3);

    const rest = new PubSubConnector({ projectId: ps!.projectId, subscription });
    const seen = new Set(first.slice(0, 3));
    for await (const v of rest.stream()) {
      seen.add((v as { order_id: number }).order_id);
      if (seen.size === 10) break;
    }
    await rest.close();
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    await new Promise((r) => setTimeout(r, 300));
    expect((await serverView(topic)).acked).toBe(9);
  });

  it("is built from JSON config, with errors that name the option", async () => {
    const source = await createSource({ type: "pubsub", project_id: ps!.projectId, subscription: "x", max_messages: 10 });
    expect(source).toBeInstanceOf(PubSubConnector);
    expect(source.kind).toBe("ack");
    await source.close?.();
    await expect(createSource({ type: "pubsub", subscription: "projects/p/topics/t" })).rejects.toThrow(/source pubsub: subscription/);
    await expect(createSource({ type: "pubsub", subscription: "s", maxMessages: 0 })).rejects.toThrow(/maxMessages: expected a number >= 1/);
    await expect(createSource({ type: "pubsub" })).rejects.toThrow(/subscription: is required/);
    expect(Object.keys(pubsubSpec.options)).toEqual(expect.arrayContaining(["projectId", "subscription", "maxMessages"]));
  });

  it("says clearly when the subscription does not exist", async () => {
    const source = new PubSubConnector({ projectId: ps!.projectId, subscription: "no-such-subscription" });
    try {
      await expect(
        (async () => {
          for (let i = 0; i < 20; i++) await source.receive(10, 500, new AbortController().signal);
        })(),
      ).rejects.toThrow(/subscription not found/);
    } finally {
      await source.close();
    }
  });
});
