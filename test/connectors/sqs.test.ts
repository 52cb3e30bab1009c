/**
 * The SQS connector against a real SQS-compatible server (ElasticMQ from Maven Central, on
 * 127.0.0.1; scripts/provision-sqs.sh). Every drain ends by counting the rows of a DuckDB merge
 * target and its quarantine, and the messages left in the queue.
 */
import { SendMessageBatchCommand, type SendMessageBatchRequestEntry } from "@aws-sdk/client-sqs";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { createSource } from "../../src/sources/registry.js";
import { SQSConnector, type SQSMessageMeta } from "../../src/sources/sqs/source.js";
import { sqsSpec } from "../../src/sources/sqs/spec.js";
import { ConfigError } from "../../src/errors.js";
import { StreamSink, StreamRunError, type BatchReport } from "../../src/sink/index.js";
import { startSqs } from "../support/sqs.js";
import { requireService } from "../support/services.js";
import { expectedOrders, ordersContract, readLake, sorted, tempDirs } from "./queue-lake.js";

const sqs = await requireService("connectors/sqs (ElasticMQ)", () => startSqs());
const dirs = tempDirs("ll-sqs");
afterAll(async () => {
  await sqs?.stop();
  dirs.cleanup();
});

let queues = 0;
const newQueue = (suffix = "", attributes?: Record<string, string>) => sqs!.createQueue(`q${++queues}-${Date.now()}${suffix}`, attributes);

async function send(queueUrl: string, entries: Array<Omit<SendMessageBatchRequestEntry, "Id">>): Promise<void> {
  const calls: Array<Promise<unknown>> = [];
  for (let i = 0; i < entries.length; i += 10) {
    const chunk = entries.slice(i, i + 10).map((e, j) => ({ ...e, Id: String(j) }));
    calls.push(sqs!.client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: chunk })));
    if (calls.length >= 16) await Promise.all(calls.splice(0));
  }
  await Promise.all(calls);
}

const orders = (from: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({ MessageBody: JSON.stringify(orderEvent(from + k)) }));

// SQS bodies must be XML-safe text, so poison here is text that is not JSON.
const POISON = ["this is not json", "{\"order_id\": 1,", "<order id=\"3\"/>"];

describe.skipIf(!sqs)("SQSConnector on ElasticMQ", () => {
  it("drains orders and poison messages through StreamSink: rows exactly once, poison quarantined, queue empty", async () => {
    const url = await newQueue();
    const N = 1500;
    await send(url, [...orders(0, N), ...POISON.map((b) => ({ MessageBody: b }))]);
    const lake = dirs.make("drain");
    const reports: BatchReport[] = [];
    const sink = new StreamSink(ordersContract, new SQSConnector({ queueUrl: url, visibilityTimeout: 30 }), {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: 200,
      maxWaitMs: 500,
      onBatch: (r) => void reports.push(r),
    });
    const summary = await sink.run("available_now");
    expect(summary.sourceCount).toBe(N + POISON.length);

    const { good, bad } = expectedOrders(N);
    const lakeRows = await readLake(lake);
    expect(sorted(lakeRows.goodIds)).toEqual(good);
    expect(sorted(lakeRows.badIds)).toEqual(bad);
    expect(lakeRows.poison.map((p) => p.raw).sort()).toEqual([...POISON].sort());
    for (const p of lakeRows.poison) expect(p.position).toMatchObject({ messageId: expect.any(String) });
    // Everything was deleted after its batch committed, poison included.
    expect(await sqs!.depth(url)).toMatchObject({ total: 0 });
    // Lag was reported with the batches: the backlog shrinks to nothing.
    expect(reports[0]!.lag?.records).toBeGreaterThan(0);
    expect(reports.at(-1)!.lag).toMatchObject({ records: 0, oldestAgeMs: expect.any(Number) });
    expect(summary.lag).toEqual(reports.at(-1)!.lag);
  });

  it("available_now ends at its snapshot while a producer keeps sending; later messages wait for the next run (I7)", async () => {
    const url = await newQueue();
    const N = 600;
    await send(url, orders(0, N));
    const lake = dirs.make("snapshot");
    // The producer starts once the first batch is in, so everything it sends is newer than the
    // run's snapshot; it sends faster than one receive drains, so the queue is never empty.
    let produced = 0;
    let producing: Promise<void> | undefined;
    let stopProducing = false;
    const produce = async () => {
      while (!stopProducing) {
        await send(url, orders(100_000 + produced, 20));
        produced += 20;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const options = { targetPath: lake, checkpoint: `${lake}/ckpt.sqlite`, batchSize: 100, maxWaitMs: 300 };
    const first = new StreamSink(ordersContract, new SQSConnector({ queueUrl: url, visibilityTimeout: 30 }), {
      ...options,
      onBatch: () => void (producing ??= produce()),
    });
    let summary;
    try {
      summary = await first.run("available_now");
    } finally {
      stopProducing = true;
      await producing;
    }
    expect(produced).toBeGreaterThan(0);
    expect(summary.sourceCount).toBe(N);
    expect(sorted((await readLake(lake)).goodIds)).toEqual(expectedOrders(N).good);
    // Nothing was lost: the newer messages are still queued, and the next run takes them all.
    expect(await sqs!.depth(url)).toMatchObject({ total: produced });
    const second = await new StreamSink(ordersContract, new SQSConnector({ queueUrl: url }), options).run("available_now");
    expect(second.sourceCount).toBe(produced);
    const expected = [...expectedOrders(N).good, ...expectedOrders(produced, 100_000).good];
    expect(sorted((await readLake(lake)).goodIds)).toEqual(sorted(expected));
  }, 120_000);

  it("deletes nothing when the batch fails before its commit, and gives the messages back at once (I8)", async () => {
    const url = await newQueue();
    const N = 120;
    await send(url, orders(0, N));
    const lake = dirs.make("fail");
    const failing = new StreamSink(ordersContract, new SQSConnector({ queueUrl: url, visibilityTimeout: 60 }), {
      targetPath: lake,
      checkpoint: `${lake}/ckpt.sqlite`,
      batchSize: 50,
      maxWaitMs: 500,
      hooks: {
        afterWrite: () => {
          throw new Error("disk on fire between write and commit");
        },
      },
    });
    await expect(failing.run("available_now")).rejects.toBeInstanceOf(StreamRunError);
    // Not deleted, and visible again right away (not after the 60 s visibility timeout).
    expect(await sqs!.depth(url)).toMatchObject({ visible: N, inFlight: 0 });

    const again = new StreamSink(ordersContract, new SQSConnector({ queueUrl: url }), {
      targetPath: lake,
      checkpoint: `${lake}/ckpt.sqlite`,
      batchSize: 50,
      maxWaitMs: 500,
    });
    const summary = await again.run("available_now");
    expect(summary.totals.sourceCount).toBe(N);
    const rows = await readLake(lake);
    expect(sorted(rows.goodIds)).toEqual(expectedOrders(N).good);
    expect(await sqs!.depth(url)).toMatchObject({ total: 0 });
  });

  it("extends visibility while a batch is in flight longer than the timeout", async () => {
    const url = await newQueue();
    const N = 30;
    await send(url, orders(0, N));
    const lake = dirs.make("extend");
    const seen: Array<{ visible: number; inFlight: number }> = [];
    const sink = new StreamSink(ordersContract, new SQSConnector({ queueUrl: url, visibilityTimeout: 2 }), {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: N,
      maxWaitMs: 1000,
      hooks: {
        // 5 s between write and commit: without extensions the 2 s timeout would expire twice.
        afterWrite: async () => {
          for (let i = 0; i < 5; i++) {
            await new Promise((r) => setTimeout(r, 1000));
            seen.push(await sqs!.depth(url));
          }
        },
      },
    });
    const summary = await sink.run("available_now");
    expect(seen.every((d) => d.visible === 0 && d.inFlight === N)).toBe(true);
    expect(summary.sourceCount).toBe(N);
    expect(summary.batches).toBe(1);
    expect(await sqs!.depth(url)).toMatchObject({ total: 0 });
  }, 30_000);

  it("keeps message-group order on a FIFO queue, across parallel receives and batches", async () => {
    const url = await newQueue(".fifo");
    const groups = ["a", "b", "c"];
    const PER = 40;
    // One sender per group, each in order (SQS FIFO orders within a group).
    await Promise.all(
      groups.map(async (g) => {
        for (let i = 0; i < PER; i += 10) {
          await send(
            url,
            Array.from({ length: 10 }, (_, k) => ({ MessageBody: JSON.stringify({ g, seq: i + k }), MessageGroupId: g })),
          );
        }
      }),
    );
    const source = new SQSConnector({ queueUrl: url, concurrency: 4, waitTimeSeconds: 1 });
    expect(source.isFifo).toBe(true);
    const order = new Map<string, number[]>(groups.map((g) => [g, []]));
    const stop = new AbortController();
    try {
      for (let round = 0; round < 50; round++) {
        const got = await source.receive(25, 1000, stop.signal);
        if (got.length === 0) break;
        for (const r of got) {
          const v = r.value as { g: string; seq: number };
          order.get(v.g)!.push(v.seq);
          expect((r.meta as unknown as SQSMessageMeta).groupId).toBe(v.g);
          expect((r.meta as unknown as SQSMessageMeta).sequenceNumber).toEqual(expect.any(String));
        }
        await source.ack(got.map((r) => r.ackToken));
      }
    } finally {
      await source.close();
    }
    for (const g of groups) expect(order.get(g)).toEqual(Array.from({ length: PER }, (_, i) => i));
  });

  it("keeps message attributes as metadata and unwraps SNS envelopes when asked", async () => {
    const url = await newQueue();
    const envelope = {
      Type: "Notification",
      MessageId: "sns-1",
      TopicArn: "arn:aws:sns:us-east-1:123456789012:orders",
      Subject: "order",
      Message: JSON.stringify(orderEvent(7)),
      Timestamp: "2026-01-01T00:00:00.000Z",
      MessageAttributes: { tenant: { Type: "String", Value: "acme" } },
    };
    await send(url, [
      {
        MessageBody: JSON.stringify(envelope),
        MessageAttributes: {
          source: { DataType: "String", StringValue: "shop" },
          priority: { DataType: "Number", StringValue: "3" },
          blob: { DataType: "Binary", BinaryValue: new Uint8Array([1, 2, 3]) },
        },
      },
    ]);
    const source = new SQSConnector({ queueUrl: url, unwrapSns: true, waitTimeSeconds: 1 });
    try {
      const [r] = await source.receive(10, 1000, new AbortController().signal);
      expect(r!.value).toEqual(orderEvent(7));
      const meta = r!.meta as unknown as SQSMessageMeta;
      expect(meta.attributes).toEqual({ source: "shop", priority: "3", blob: new Uint8Array([1, 2, 3]) });
      expect(meta.sns).toEqual({
        messageId: "sns-1",
        topicArn: envelope.TopicArn,
        subject: "order",
        timestamp: envelope.Timestamp,
        attributes: { tenant: "acme" },
      });
      expect(meta.receiveCount).toBe(1);
      expect(r!.position).toEqual({ messageId: meta.messageId });
      await source.ack([r!.ackToken]);
    } finally {
      await source.close();
    }
    expect(await sqs!.depth(url)).toMatchObject({ total: 0 });
  });

  it("iterator API: values one by one, acked once the caller moves on; a break gives back the one it held", async () => {
    const url = await newQueue();
    // ElasticMQ hands out a standard queue in send order: the poison message comes first.
    await send(url, [{ MessageBody: "poison!" }]);
    await send(url, orders(0, 25));
    const poisoned: unknown[] = [];
    const connector = new SQSConnector({ queueUrl: url, waitTimeSeconds: 1, concurrency: 1, onPoison: (r) => poisoned.push(r.raw) });
    const ids: number[] = [];
    for await (const v of connector.stream()) {
      ids.push((v as { order_id: number }).order_id);
      if (ids.length === 13) break; // in the middle of the second receive (10 per call)
    }
    await connector.close();
    expect(poisoned).toEqual(["poison!"]);
    // The poison message and 12 orders were finished and deleted; the 13th, held at the break,
    // and the rest of its receive are back in the queue at once.
    expect(await sqs!.depth(url)).toMatchObject({ visible: 13, inFlight: 0 });

    const rest = new SQSConnector({ queueUrl: url, waitTimeSeconds: 1 });
    const seen = new Set(ids.slice(0, 12));
    let last = -1;
    for await (const v of rest.stream()) {
      last = (v as { order_id: number }).order_id;
      expect(seen.has(last)).toBe(false);
      seen.add(last);
      if (seen.size === 25) break;
    }
    await rest.close();
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    // Only the value held at the second break is left.
    expect(await sqs!.depth(url)).toMatchObject({ visible: 1, inFlight: 0 });
  });

  it("is built from JSON config, with errors that name the option", async () => {
    const url = await newQueue();
    const source = await createSource({ type: "sqs", queue_url: url, visibility_timeout: 5, max_messages: 5 });
    expect(source).toBeInstanceOf(SQSConnector);
    expect(source.kind).toBe("ack");
    await source.close?.();
    await expect(createSource({ type: "sqs", queueUrl: url, maxMessages: 11 })).rejects.toThrow(/source sqs: maxMessages: expected a number <= 10/);
    await expect(createSource({ type: "sqs", queueUrl: "orders" })).rejects.toThrow(ConfigError);
    await expect(createSource({ type: "sqs", queueUrl: url, visibilityTimout: 5 })).rejects.toThrow(/did you mean "visibilityTimeout"/);
    expect(() => new SQSConnector({ queueUrl: url, waitTimeSeconds: 21 })).toThrow(/waitTimeSeconds/);
    expect(Object.keys(sqsSpec.options)).toEqual(
      expect.arrayContaining(["queueUrl", "region", "maxMessages", "waitTimeSeconds", "visibilityTimeout"]),
    );
  });

  it("says clearly when the queue does not exist", async () => {
    const source = new SQSConnector({ queueUrl: `${sqs!.endpoint}/000000000000/no-such-queue`, waitTimeSeconds: 0 });
    await expect(source.receive(10, 100, new AbortController().signal)).rejects.toThrow(/does not exist; check queueUrl/);
    await source.close();
  });

  it("reports lag: backlog from the queue, age of the oldest held message", async () => {
    const url = await newQueue();
    await send(url, orders(0, 50));
    await new Promise((r) => setTimeout(r, 50));
    const source = new SQSConnector({ queueUrl: url, concurrency: 1, waitTimeSeconds: 1 });
    try {
      const got = await source.receive(10, 1000, new AbortController().signal);
      expect(got).toHaveLength(10);
      const lag = await source.lag();
      expect(lag?.records).toBe(40);
      expect(lag?.oldestAgeMs).toBeGreaterThanOrEqual(0);
      expect(lag?.oldestAgeMs).toBeLessThan(60_000);
    } finally {
      await source.close();
    }
    // close() gave the unacknowledged ten back.
    expect(await sqs!.depth(url)).toMatchObject({ visible: 50, inFlight: 0 });
  });
});
