/**
 * The Service Bus connector. No Service Bus emulator runs outside Docker, so the main suite runs
 * at the SDK boundary: the connector drives a faithful fake of the peek-lock receiver
 * (./servicebus-fake.ts: lock expiry, redelivery with delivery counts, MessageLockLost, dead-letter).
 * The live suite at the end runs against a real namespace when SERVICEBUS_CONNECTION_STRING and
 * SERVICEBUS_QUEUE are set (see docs/connectors.md).
 */
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { createSource } from "../../src/sources/registry.js";
import { ServiceBusConnector, decodeServiceBusBody, type ServiceBusMessageMeta } from "../../src/sources/servicebus/source.js";
import { DEFAULT_DEAD_LETTER_REASON } from "../../src/sources/servicebus/spec.js";
import { ConfigError } from "../../src/errors.js";
import { StreamSink, StreamRunError } from "../../src/sink/index.js";
import { FakeServiceBusEntity, type FakeMessageInput } from "./servicebus-fake.js";
import { expectedOrders, ordersContract, readLake, sorted, tempDirs } from "./queue-lake.js";

const dirs = tempDirs("ll-servicebus");
afterAll(() => dirs.cleanup());

const orders = (from: number, n: number, as: "object" | "bytes" | "string" = "bytes"): FakeMessageInput[] =>
  Array.from({ length: n }, (_, k) => {
    const e = orderEvent(from + k);
    const body = as === "object" ? e : as === "string" ? JSON.stringify(e) : Buffer.from(JSON.stringify(e));
    return { body, messageId: `order-${from + k}`, applicationProperties: { n: from + k } };
  });

const POISON: FakeMessageInput[] = [
  { body: Buffer.from("not json"), messageId: "poison-text" },
  { body: Buffer.from([0xc3, 0x28, 0x7b]), messageId: "poison-bytes" },
  { body: "{\"order_id\": ", messageId: "poison-string" },
];

function sinkFor(entity: FakeServiceBusEntity, lake: string, extra: Partial<ConstructorParameters<typeof StreamSink>[2]> = {}, source?: Partial<ConstructorParameters<typeof ServiceBusConnector>[0]>) {
  return new StreamSink(ordersContract, new ServiceBusConnector({ queueName: "orders", receiver: entity.receiver(), maxWaitTimeMs: 300, ...source }), {
    targetPath: lake,
    checkpoint: `${lake}/ckpt.sqlite`,
    batchSize: 100,
    maxWaitMs: 300,
    ...extra,
  });
}

describe("ServiceBusConnector at the SDK boundary (fake peek-lock receiver)", () => {
  it("drains through StreamSink: completes good and contract-failed messages, dead-letters poison with our reason", async () => {
    const entity = new FakeServiceBusEntity();
    const N = 600;
    // Bodies as the SDKs send them: bytes (other languages), strings, AMQP values (objects).
    entity.send(...orders(0, 200, "bytes"), ...orders(200, 200, "string"), ...orders(400, 200, "object"), ...POISON);
    const lake = dirs.make("drain");
    const summary = await sinkFor(entity, lake).run("available_now");
    expect(summary.sourceCount).toBe(N + POISON.length);
    const rows = await readLake(lake);
    const { good, bad } = expectedOrders(N);
    expect(sorted(rows.goodIds)).toEqual(good);
    expect(sorted(rows.badIds)).toEqual(bad);
    expect(rows.poison.map((p) => (p.position as { messageId: string }).messageId).sort()).toEqual(["poison-bytes", "poison-string", "poison-text"]);
    // Contract failures are completed like good rows; only poison is dead-lettered.
    expect(entity.stats).toMatchObject({ completed: N, deadLettered: 3, lockLost: 0, abandoned: 0 });
    expect(entity.activeCount).toBe(0);
    expect(entity.deadLetters.map((d) => [d.messageId, d.reason]).sort()).toEqual([
      ["poison-bytes", DEFAULT_DEAD_LETTER_REASON],
      ["poison-string", DEFAULT_DEAD_LETTER_REASON],
      ["poison-text", DEFAULT_DEAD_LETTER_REASON],
    ]);
    expect(entity.deadLetters.find((d) => d.messageId === "poison-bytes")!.description).toMatch(/not valid UTF-8/);
    expect(entity.deadLetters.find((d) => d.messageId === "poison-text")!.description).toMatch(/not JSON/);
    expect(summary.lag?.oldestAgeMs).toEqual(expect.any(Number));
  });

  it("settles nothing when the batch fails before its commit, and abandons the batch so it comes back at once (I8)", async () => {
    const entity = new FakeServiceBusEntity({ lockDurationMs: 60_000 });
    const N = 150;
    entity.send(...orders(0, N), POISON[0]!);
    const lake = dirs.make("fail");
    const failing = sinkFor(entity, lake, {
      hooks: {
        afterWrite: () => {
          throw new Error("disk on fire between write and commit");
        },
      },
    });
    await expect(failing.run("available_now")).rejects.toBeInstanceOf(StreamRunError);
    expect(entity.stats).toMatchObject({ completed: 0, deadLettered: 0 });
    expect(entity.lockedCount).toBe(0); // abandoned, not left to the 60 s lock
    const summary = await sinkFor(entity, lake).run("available_now");
    expect(summary.totals.sourceCount).toBe(N + 1);
    expect(entity.activeCount).toBe(0);
    expect(entity.deadLetters).toHaveLength(1);
    expect(sorted((await readLake(lake)).goodIds)).toEqual(expectedOrders(N).good);
  });

  it("renews locks while a batch is in flight longer than the lock", async () => {
    const entity = new FakeServiceBusEntity({ lockDurationMs: 1000 });
    const N = 40;
    entity.send(...orders(0, N));
    const lake = dirs.make("renew");
    const summary = await sinkFor(entity, lake, { hooks: { afterWrite: () => new Promise((r) => setTimeout(r, 3500)) } }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: N, batches: 1 });
    expect(entity.stats.renewed).toBeGreaterThanOrEqual(N * 3);
    expect(entity.stats).toMatchObject({ completed: N, lockLost: 0, received: N });
  });

  it("a lost lock is redelivered and merged, not an error: locks expire after a crash", async () => {
    const entity = new FakeServiceBusEntity({ lockDurationMs: 500 });
    const N = 30;
    entity.send(...orders(0, N));
    // A process that received a batch and died: its source is never closed, its locks lapse.
    const dead = new ServiceBusConnector({ queueName: "orders", receiver: entity.receiver(), maxLockRenewalSeconds: 1 });
    const got = await dead.receive(N, 200, new AbortController().signal);
    expect(got).toHaveLength(N);
    await new Promise((r) => setTimeout(r, 1700)); // renewals stop after 1 s; the lock runs out
    const lake = dirs.make("expiry");
    const summary = await sinkFor(entity, lake).run("available_now");
    expect(summary.sourceCount).toBe(N);
    expect(sorted((await readLake(lake)).goodIds)).toEqual(expectedOrders(N).good);
    expect(entity.stats.received).toBe(2 * N); // every message delivered twice: lock lapsed, redelivered
    expect(entity.activeCount).toBe(0);
    // The late settlement of the dead process finds its locks lost: a warning, not a failure.
    const warnings: string[] = [];
    const late = new ServiceBusConnector({ queueName: "orders", receiver: entity.receiver(), onWarning: (w) => warnings.push(w) });
    await late.ack([]); // nothing held: a no-op
    (dead as unknown as { warn: (m: string) => void }).warn = (w) => warnings.push(w);
    await dead.ack(got.map((r) => r.ackToken));
    expect(warnings.length).toBe(N);
    expect(warnings[0]).toMatch(/lock of message order-\d+ was lost.*delivered again/);
  });

  it("keeps application properties and system properties as metadata", async () => {
    const entity = new FakeServiceBusEntity();
    entity.send({ body: { ...orderEvent(1) }, messageId: "m-1", applicationProperties: { tenant: "acme", priority: 2 }, contentType: "application/json", subject: "order" });
    const source = new ServiceBusConnector({ queueName: "orders", receiver: entity.receiver() });
    const [r] = await source.receive(10, 100, new AbortController().signal);
    const meta = r!.meta as unknown as ServiceBusMessageMeta;
    expect(meta).toMatchObject({
      messageId: "m-1",
      sequenceNumber: "1",
      deliveryCount: 1,
      applicationProperties: { tenant: "acme", priority: 2 },
      contentType: "application/json",
      subject: "order",
      enqueuedTime: expect.stringMatching(/^\d{4}-/),
    });
    expect(r!.position).toEqual({ messageId: "m-1", sequenceNumber: "1" });
    await source.ack([r!.ackToken]);
    await source.close();
    expect(entity.stats.completed).toBe(1);
  });

  it("iterator API: values completed once the caller moves on; poison dead-lettered; a break abandons the one held", async () => {
    const entity = new FakeServiceBusEntity();
    entity.send(POISON[0]!, ...orders(0, 10));
    const poisoned: string[] = [];
    const connector = new ServiceBusConnector({ queueName: "orders", receiver: entity.receiver(), maxWaitTimeMs: 200, onPoison: (r) => poisoned.push(String(r.raw)) });
    const ids: number[] = [];
    for await (const v of connector.stream()) {
      ids.push((v as { order_id: number }).order_id);
      if (ids.length === 6) break;
    }
    await connector.close();
    expect(poisoned).toEqual(["not json"]);
    expect(entity.stats).toMatchObject({ completed: 5, deadLettered: 1, abandoned: 5 });
    expect(entity.activeCount).toBe(5);
    expect(entity.lockedCount).toBe(0);
  });

  it("decodes bodies: bytes and strings as UTF-8 JSON, AMQP values as they are", () => {
    expect(decodeServiceBusBody(Buffer.from('{"a":1}')).decoded).toEqual({ value: { a: 1 } });
    expect(decodeServiceBusBody('{"a":1}').decoded).toEqual({ value: { a: 1 } });
    expect(decodeServiceBusBody({ a: 1 }).decoded).toEqual({ value: { a: 1 } });
    expect(decodeServiceBusBody(42).decoded).toEqual({ value: { data: 42 } });
    expect(decodeServiceBusBody(undefined).decoded).toEqual({ error: "message has no body" });
    const bytes = decodeServiceBusBody(new Uint8Array([0xff]));
    expect(bytes.decoded).toEqual({ error: "body is not valid UTF-8" });
    expect(bytes.raw).toEqual(new Uint8Array([0xff]));
  });

  it("is built from JSON config, with errors that name the option", async () => {
    // A JSON config names the secret's variable; a literal connection string is refused (secret-literals.test.ts).
    process.env.LL_TEST_SERVICEBUS_CS = "Endpoint=sb://example.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0";
    const cs = "env:LL_TEST_SERVICEBUS_CS";
    const source = await createSource({ type: "servicebus", connection_string: cs, queue_name: "orders" });
    expect(source).toBeInstanceOf(ServiceBusConnector);
    expect(source.description).toBe("servicebus example.servicebus.windows.net/orders");
    await source.close?.();
    const topic = await createSource({ type: "servicebus", namespace: "example", topicName: "t", subscriptionName: "s" });
    expect(topic.description).toBe("servicebus example.servicebus.windows.net/t/subscriptions/s");
    await expect(createSource({ type: "servicebus", queueName: "q" })).rejects.toThrow(/connectionString: is required \(or namespace/);
    await expect(createSource({ type: "servicebus", connectionString: cs })).rejects.toThrow(/queueName: is required/);
    await expect(createSource({ type: "servicebus", connectionString: cs, topicName: "t" })).rejects.toThrow(/subscriptionName: topicName and subscriptionName go together/);
    await expect(createSource({ type: "servicebus", connectionString: cs, namespace: "x", queueName: "q" })).rejects.toThrow(ConfigError);
    // The secret is never echoed back.
    await expect(createSource({ type: "servicebus", connectionString: 42, queueName: "q" })).rejects.toThrow(/got <secret>/);
  });
});

const live = process.env.SERVICEBUS_CONNECTION_STRING && process.env.SERVICEBUS_QUEUE;
if (!live) process.stderr.write("[skip] connectors/servicebus live: set SERVICEBUS_CONNECTION_STRING and SERVICEBUS_QUEUE to run it against a real namespace\n");

describe.skipIf(!live)("ServiceBusConnector against a real namespace (SERVICEBUS_CONNECTION_STRING)", () => {
  it("drains orders and a poison message; the poison is dead-lettered with our reason", async () => {
    const { ServiceBusClient } = await import("@azure/service-bus");
    const cs = process.env.SERVICEBUS_CONNECTION_STRING!;
    const queue = process.env.SERVICEBUS_QUEUE!;
    const client = new ServiceBusClient(cs);
    const run = `live-${Date.now()}`;
    try {
      const sender = client.createSender(queue);
      const N = 200;
      await sender.sendMessages([
        ...Array.from({ length: N }, (_, i) => ({ body: orderEvent(i), messageId: `${run}-${i}`, applicationProperties: { run } })),
        { body: Buffer.from("not json"), messageId: `${run}-poison`, applicationProperties: { run } },
      ]);
      await sender.close();
      const lake = dirs.make("live");
      const summary = await new StreamSink(ordersContract, new ServiceBusConnector({ connectionString: cs, queueName: queue }), {
        targetPath: lake,
        checkpoint: "memory",
        batchSize: 100,
        maxWaitMs: 3000,
      }).run("available_now");
      expect(summary.sourceCount).toBeGreaterThanOrEqual(N + 1);
      const rows = await readLake(lake);
      expect(new Set(rows.goodIds)).toEqual(new Set(expectedOrders(N).good));
      const dlq = client.createReceiver(queue, { subQueueType: "deadLetter", receiveMode: "peekLock" });
      const dead = await dlq.receiveMessages(50, { maxWaitTimeInMs: 5000 });
      const ours = dead.find((m) => m.messageId === `${run}-poison`);
      expect(ours?.deadLetterReason).toBe(DEFAULT_DEAD_LETTER_REASON);
      for (const m of dead) if (m.applicationProperties?.run === run) await dlq.completeMessage(m);
      await dlq.close();
    } finally {
      await client.close();
    }
  }, 120_000);
});
