/**
 * The Event Grid pull connector with the real `@azure/eventgrid-namespaces` client against a local
 * HTTP server implementing the documented receive / acknowledge / release / reject / renewLock REST
 * operations (./eventgrid-server.ts) — no Event Grid emulator runs outside Docker. The live suite
 * at the end runs against a real namespace when EVENTGRID_ENDPOINT, EVENTGRID_KEY, EVENTGRID_TOPIC
 * and EVENTGRID_SUBSCRIPTION are set (see docs/connectors.md).
 */
import { EventGridSenderClient, AzureKeyCredential, type CloudEvent } from "@azure/eventgrid-namespaces";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { EventGridConnector, decodeEventData, type EventGridEventMeta } from "../../src/sources/eventgrid/source.js";
import { createSource } from "../../src/sources/registry.js";
import { StreamSink, StreamRunError } from "../../src/sink/index.js";
import { EventGridFakeServer } from "./eventgrid-server.js";
import { expectedOrders, ordersContract, readLake, sorted, tempDirs } from "./queue-lake.js";

const KEY = "test-key";
const dirs = tempDirs("ll-eventgrid");
const servers: EventGridFakeServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});
afterAll(() => dirs.cleanup());

async function fake(options: { lockDurationMs?: number; clock?: "real" | "manual" } = {}): Promise<EventGridFakeServer> {
  const s = await new EventGridFakeServer({ key: KEY, topic: "orders", subscription: "lake", ...options }).start();
  servers.push(s);
  return s;
}

const orderEvents = (from: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({ id: `order-${from + k}`, source: "/shop", type: "shop.order.placed", subject: `orders/${from + k}`, datacontenttype: "application/json", data: orderEvent(from + k) }));

const POISON = [
  { id: "poison-text", source: "/shop", type: "shop.order.placed", datacontenttype: "text/plain", data: "not json" },
  { id: "poison-binary", source: "/shop", type: "shop.order.placed", datacontenttype: "application/octet-stream", data_base64: Buffer.from([0xff, 0x00, 0x7b]).toString("base64") },
];

function connector(server: EventGridFakeServer, extra: Partial<ConstructorParameters<typeof EventGridConnector>[0]> = {}) {
  return new EventGridConnector({ endpoint: server.endpoint, topicName: "orders", subscriptionName: "lake", accessKey: KEY, ...extra });
}

function sinkFor(server: EventGridFakeServer, lake: string, extra: Partial<ConstructorParameters<typeof StreamSink>[2]> = {}, source: Partial<ConstructorParameters<typeof EventGridConnector>[0]> = {}) {
  return new StreamSink(ordersContract, connector(server, source), {
    targetPath: lake,
    checkpoint: `${lake}/ckpt.sqlite`,
    batchSize: 100,
    maxWaitMs: 300,
    ...extra,
  });
}

describe("EventGridConnector against a local Event Grid REST server", () => {
  it("drains through StreamSink: acknowledges good and contract-failed events, rejects poison", async () => {
    const server = await fake();
    const N = 500;
    server.publish(...orderEvents(0, N), ...POISON);
    const lake = dirs.make("drain");
    const summary = await sinkFor(server, lake).run("available_now");
    expect(summary.sourceCount).toBe(N + POISON.length);
    const rows = await readLake(lake);
    const { good, bad } = expectedOrders(N);
    expect(sorted(rows.goodIds)).toEqual(good);
    expect(sorted(rows.badIds)).toEqual(bad);
    expect(rows.poison.map((p) => (p.position as { eventId: string }).eventId).sort()).toEqual(["poison-binary", "poison-text"]);
    expect(server.stats).toMatchObject({ acknowledged: N, rejected: 2, tokenLost: 0, badRequests: 0 });
    expect(server.pending).toBe(0);
    expect(server.deadLettered.map((d) => d.event.id).sort()).toEqual(["poison-binary", "poison-text"]);
    expect(summary.lag?.oldestAgeMs).toEqual(expect.any(Number));
  });

  it("keeps integers beyond 2^53 in event data exact (the SDK's JSON.parse would round them)", async () => {
    const server = await fake();
    server.publish(
      { id: "big", source: "/shop", type: "t", datacontenttype: "application/json", data: { order_id: 9007199254740993n, ref: "x" } },
      { id: "small", source: "/shop", type: "t", datacontenttype: "application/json", data: { order_id: 7 } },
    );
    const source = connector(server);
    try {
      const got = await source.receive(10, 2000, new AbortController().signal);
      expect(got.map((r) => (r.value as { order_id: unknown }).order_id)).toEqual([9007199254740993n, 7]);
    } finally {
      await source.close();
    }
  });

  it("receives what the SDK's sender published", async () => {
    const server = await fake();
    const sender = new EventGridSenderClient(server.endpoint, new AzureKeyCredential(KEY), "orders", { allowInsecureConnection: true });
    await sender.sendEvents(orderEvents(0, 5).map((e) => ({ type: e.type, source: e.source, id: e.id, subject: e.subject, data: e.data })));
    const source = connector(server);
    try {
      const got = await source.receive(10, 2000, new AbortController().signal);
      expect(got.map((r) => (r.value as { order_id: number }).order_id)).toEqual([0, 1, 2, 3, 4]);
      const meta = got[0]!.meta as unknown as EventGridEventMeta;
      expect(meta).toMatchObject({ id: "order-0", source: "/shop", type: "shop.order.placed", subject: "orders/0", deliveryCount: 1, time: expect.any(String) });
      await source.ack(got.map((r) => r.ackToken));
    } finally {
      await source.close();
    }
    expect(server.pending).toBe(0);
  });

  it("acknowledges nothing when the batch fails before its commit, and releases the batch (I8)", async () => {
    const server = await fake({ lockDurationMs: 60_000 });
    const N = 150;
    server.publish(...orderEvents(0, N));
    const lake = dirs.make("fail");
    const failing = sinkFor(server, lake, {
      hooks: {
        afterWrite: () => {
          throw new Error("disk on fire between write and commit");
        },
      },
    });
    await expect(failing.run("available_now")).rejects.toBeInstanceOf(StreamRunError);
    expect(server.stats.acknowledged).toBe(0);
    expect(server.locked).toBe(0); // released, not left to the 60 s lock
    const summary = await sinkFor(server, lake).run("available_now");
    expect(summary.totals.sourceCount).toBe(N);
    expect(server.pending).toBe(0);
    expect(sorted((await readLake(lake)).goodIds)).toEqual(expectedOrders(N).good);
  });

  it("renews locks while a batch is in flight longer than the lock", async () => {
    const server = await fake({ lockDurationMs: 1000 });
    const N = 30;
    server.publish(...orderEvents(0, N));
    const lake = dirs.make("renew");
    const summary = await sinkFor(server, lake, { batchSize: N, hooks: { afterWrite: () => new Promise((r) => setTimeout(r, 3500)) } }, { lockDurationSeconds: 1 }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: N, batches: 1 });
    expect(server.stats.renewed).toBeGreaterThanOrEqual(N * 3);
    expect(server.stats).toMatchObject({ delivered: N, acknowledged: N, tokenLost: 0 });
  });

  it("events whose locks lapsed (a crashed consumer) are delivered again; the late acknowledgement is a warning", async () => {
    // The server's locks lapse only when the test moves its clock: the sink's own locks cannot
    // lapse mid-run on a slow machine, and the crashed consumer's cannot outlive the advance.
    const server = await fake({ lockDurationMs: 60_000, clock: "manual" });
    const N = 20;
    server.publish(...orderEvents(0, N));
    const warnings: string[] = [];
    const dead = connector(server, { lockDurationSeconds: 60, maxLockRenewalSeconds: 1, onWarning: (w) => warnings.push(w) });
    const got = await dead.receive(N, 30_000, new AbortController().signal); // returns once the poll brought them
    expect(got).toHaveLength(N);
    expect(server.locked).toBe(N);
    server.advance(60_000); // the consumer is gone: its locks lapse
    expect(server.locked).toBe(0);
    const lake = dirs.make("expiry");
    const summary = await sinkFor(server, lake).run("available_now");
    expect(summary.sourceCount).toBe(N);
    expect(sorted((await readLake(lake)).goodIds)).toEqual(expectedOrders(N).good);
    expect(server.stats.delivered).toBe(2 * N);
    expect(server.pending).toBe(0);
    await dead.ack(got.map((r) => r.ackToken));
    expect(warnings.some((w) => /acknowledgeEvents refused 20 lock tokens \(TokenLost/.test(w))).toBe(true);
    await dead.close();
  });

  it("unwrapData: false makes the whole CloudEvent the record", async () => {
    const server = await fake();
    server.publish(...orderEvents(3, 1));
    const source = connector(server, { unwrapData: false });
    try {
      const [r] = await source.receive(1, 2000, new AbortController().signal);
      expect(r!.value).toMatchObject({ specversion: "1.0", id: "order-3", source: "/shop", type: "shop.order.placed", data: orderEvent(3) });
      await source.ack([r!.ackToken]);
    } finally {
      await source.close();
    }
  });

  it("iterator API: values acknowledged once the caller moves on; poison rejected; a break releases the one held", async () => {
    const server = await fake();
    server.publish(POISON[0]!, ...orderEvents(0, 10));
    const poisoned: unknown[] = [];
    const source = connector(server, { onPoison: (r) => poisoned.push(r.raw) });
    const ids: number[] = [];
    for await (const v of source.stream()) {
      ids.push((v as { order_id: number }).order_id);
      if (ids.length === 4) break;
    }
    await source.close();
    expect(poisoned).toEqual(["not json"]);
    expect(server.stats).toMatchObject({ acknowledged: 3, rejected: 1 });
    expect(server.locked).toBe(0);
    expect(server.pending).toBe(7);
  });

  it("says clearly when the key is wrong", async () => {
    const server = await fake();
    const source = connector(server, { accessKey: "wrong" });
    await expect(source.receive(1, 2000, new AbortController().signal)).rejects.toThrow(/not authorized \(HTTP 401\): check accessKey/);
    await source.close();
  });

  it("decodes data: JSON values as records, strings as JSON text, nothing else", () => {
    expect(decodeEventData({ a: 1 }).decoded).toEqual({ value: { a: 1 } });
    expect(decodeEventData([1]).decoded).toEqual({ value: { data: [1] } });
    expect(decodeEventData('{"a":1}').decoded).toEqual({ value: { a: 1 } });
    expect(decodeEventData("hello").decoded).toMatchObject({ error: expect.stringMatching(/not JSON/) });
    expect(decodeEventData(undefined).decoded).toEqual({ error: "event has no data" });
  });

  it("is built from JSON config, with errors that name the option", async () => {
    process.env.LL_TEST_EVENTGRID_KEY = "k";
    const source = await createSource({ type: "eventgrid", endpoint: "https://ns.westeurope-1.eventgrid.azure.net", topic_name: "t", subscription_name: "s", access_key: "env:LL_TEST_EVENTGRID_KEY" });
    expect(source).toBeInstanceOf(EventGridConnector);
    expect(source.description).toBe("eventgrid ns.westeurope-1.eventgrid.azure.net/t/s");
    await source.close?.();
    await expect(createSource({ type: "eventgrid", endpoint: "https://x", topicName: "t", subscriptionName: "s", maxWaitTimeSeconds: 5 })).rejects.toThrow(/maxWaitTimeSeconds: expected a number >= 10/);
    await expect(createSource({ type: "eventgrid", endpoint: "ns", topicName: "t", subscriptionName: "s" })).rejects.toThrow(/endpoint: expected an https URL/);
    await expect(createSource({ type: "eventgrid", endpoint: "https://x", topicName: "t" })).rejects.toThrow(/subscriptionName: is required/);
    await expect(createSource({ type: "eventgrid", endpoint: "http://ns.example.com", topicName: "t", subscriptionName: "s" })).rejects.toThrow(/plain http is accepted only for 127.0.0.1/);
  });
});

const liveEnv = ["EVENTGRID_ENDPOINT", "EVENTGRID_KEY", "EVENTGRID_TOPIC", "EVENTGRID_SUBSCRIPTION"] as const;
const live = liveEnv.every((k) => process.env[k]);
if (!live) process.stderr.write(`[skip] connectors/eventgrid live: set ${liveEnv.join(", ")} to run it against a real namespace\n`);

describe.skipIf(!live)("EventGridConnector against a real namespace (EVENTGRID_ENDPOINT)", () => {
  it("drains orders and a poison event; the poison is rejected", async () => {
    const endpoint = process.env.EVENTGRID_ENDPOINT!;
    const key = process.env.EVENTGRID_KEY!;
    const topic = process.env.EVENTGRID_TOPIC!;
    const run = `live-${Date.now()}`;
    const sender = new EventGridSenderClient(endpoint, new AzureKeyCredential(key), topic);
    const N = 100;
    const events: Array<CloudEvent<unknown>> = [
      ...orderEvents(0, N).map((e) => ({ type: e.type, source: `/lakelogic/${run}`, id: `${run}-${e.id}`, data: e.data })),
      { type: "shop.order.placed", source: `/lakelogic/${run}`, id: `${run}-poison`, data: "not json" },
    ];
    await sender.sendEvents(events);
    const lake = dirs.make("live");
    const summary = await new StreamSink(
      ordersContract,
      new EventGridConnector({ endpoint, accessKey: key, topicName: topic, subscriptionName: process.env.EVENTGRID_SUBSCRIPTION! }),
      { targetPath: lake, checkpoint: "memory", batchSize: 100, maxWaitMs: 5000 },
    ).run("available_now");
    expect(summary.sourceCount).toBeGreaterThanOrEqual(N + 1);
    const rows = await readLake(lake);
    expect(new Set(rows.goodIds)).toEqual(new Set(expectedOrders(N).good));
    expect(rows.poison.some((p) => (p.position as { eventId: string }).eventId === `${run}-poison`)).toBe(true);
  }, 120_000);
});
