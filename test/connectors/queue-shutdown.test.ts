/**
 * A graceful stop of a queue stream hands back every message it received and did not commit, so
 * the next run (or another consumer) gets them at once instead of after their visibility timeout
 * or ack deadline. Against real servers: ElasticMQ (SQS) behind a proxy that holds the server's
 * answers, so the stop lands exactly when SQS has leased messages to a receive the client has not
 * heard back from; and pstest (Pub/Sub), whose streaming pull leases more than a batch takes (the
 * Pub/Sub client nacks what it holds when it closes; this proves the stream closes it so).
 * Visibility and deadlines are long (300 s, 600 s): nothing comes back by itself during a test.
 */
import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { PubSubConnector } from "../../src/sources/pubsub/connector.js";
import { SQSConnector } from "../../src/sources/sqs/connector.js";
import { StreamSink } from "../../src/sink/index.js";
import { startPubSub } from "../support/pubsub.js";
import { startSqs } from "../support/sqs.js";
import { requireService } from "../support/services.js";
import { silencingProxy } from "../support/silencing-proxy.js";
import { expectedOrders, ordersContract, readLake, sorted, tempDirs } from "./queue-lake.js";

process.env.METADATA_SERVER_DETECTION ??= "none";
const sqs = await requireService("connectors/queue-shutdown (ElasticMQ)", () => startSqs());
const ps = await requireService("connectors/queue-shutdown (pstest fake)", () => startPubSub());
const dirs = tempDirs("ll-queue-stop");
afterAll(async () => {
  await sqs?.stop();
  await ps?.stop();
  dirs.cleanup();
});

const N = 200;
const body = (i: number) => JSON.stringify(orderEvent(i));

/** Poll `ready` (bounded: the test's own timeout is the limit), without any timing assumption. */
async function until(ready: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 6000 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 10));
  if (!(await ready())) throw new Error("the condition never came true");
}

/** Every order exactly once, across the lake of both runs. */
async function expectAllOnce(lake: string): Promise<void> {
  const rows = await readLake(lake);
  const { good, bad } = expectedOrders(N);
  expect(sorted(rows.goodIds)).toEqual(good);
  expect(sorted(rows.badIds)).toEqual(bad);
}

describe.skipIf(!sqs)("SQS: a stop while receives are in flight", () => {
  it("gives back what the server leased to them: an available_now run right after takes every message left", async () => {
    const url = await sqs!.createQueue(`stop-${Date.now()}`);
    for (let i = 0; i < N; i += 10) {
      const entries = Array.from({ length: 10 }, (_, k) => ({ Id: String(k), MessageBody: body(i + k) }));
      await sqs!.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
    }
    const proxy = await silencingProxy(sqs!.endpoint);
    const lake = dirs.make("sqs");
    const stop = new AbortController();
    // Four receives of ten in parallel per batch; after the first commit the proxy keeps the
    // server's answers, and the stop comes once SQS has answered (leasing those messages).
    const connector = new SQSConnector({ queueUrl: url, endpoint: proxy.endpoint, visibilityTimeout: 300, waitTimeSeconds: 1 });
    const sink = new StreamSink(ordersContract, connector, {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: 40,
      maxWaitMs: 5000,
      handleSignals: false,
      signal: stop.signal,
      onBatch: () => proxy.hold(),
    });
    const running = sink.run("continuous");
    await until(() => proxy.heldBytes() > 0);
    stop.abort();
    setImmediate(() => proxy.release());
    const first = await running;
    await proxy.stop();

    expect(await sqs!.depth(url)).toMatchObject({ inFlight: 0, total: N - first.sourceCount });
    const second = await new StreamSink(ordersContract, new SQSConnector({ queueUrl: url, endpoint: sqs!.endpoint, waitTimeSeconds: 1 }), {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: 100,
      maxWaitMs: 1000,
    }).run("available_now");
    expect(first.sourceCount + second.sourceCount).toBe(N);
    await expectAllOnce(lake);
    expect(await sqs!.depth(url)).toMatchObject({ total: 0 });
  });
});

describe.skipIf(!ps)("Pub/Sub: a stop with messages pulled but not yet taken", () => {
  it("nacks them: an available_now run right after takes every message left", async () => {
    const { topic, subscription } = await ps!.createSubscription(`stop-${Date.now()}`, { ackDeadlineSeconds: 600 });
    const t = ps!.pubsub.topic(topic, { batching: { maxMessages: 500, maxMilliseconds: 5 } });
    await Promise.all(Array.from({ length: N }, (_, i) => t.publishMessage({ data: Buffer.from(body(i)) })));
    await t.flush();
    const lake = dirs.make("pubsub");
    const stop = new AbortController();
    // The streaming pull leases up to 100 messages; a batch takes 10, then the run stops.
    const connector = new PubSubConnector({ projectId: ps!.projectId, subscription, ackDeadlineSeconds: 600, maxMessages: 100 });
    const first = await new StreamSink(ordersContract, connector, {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: 10,
      maxWaitMs: 1000,
      handleSignals: false,
      signal: stop.signal,
      onBatch: () => stop.abort(),
    }).run("continuous");
    expect(first.sourceCount).toBeLessThan(N);

    const second = await new StreamSink(ordersContract, new PubSubConnector({ projectId: ps!.projectId, subscription, ackDeadlineSeconds: 600 }), {
      targetPath: lake,
      checkpoint: "memory",
      batchSize: 100,
      maxWaitMs: 2000,
    }).run("available_now");
    expect(first.sourceCount + second.sourceCount).toBe(N);
    await expectAllOnce(lake);
  });
});
