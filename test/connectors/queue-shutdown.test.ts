/**
 * A graceful stop of a queue stream hands back every message it received and did not commit, so
 * the next run (or another consumer) gets them at once instead of after their visibility timeout
 * or ack deadline. Against a real server: ElasticMQ (SQS) behind a proxy that holds the server's
 * answers, so the stop lands exactly when SQS has leased messages to a receive the client has not
 * heard back from. The visibility timeout is long (300 s): nothing comes back by itself during
 * the test.
 */
import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { SQSConnector } from "../../src/sources/sqs/source.js";
import { StreamSink } from "../../src/sink/index.js";
import { startSqs } from "../support/sqs.js";
import { requireService } from "../support/services.js";
import { silencingProxy } from "../support/silencing-proxy.js";
import { expectedOrders, ordersContract, readLake, sorted, tempDirs } from "./queue-lake.js";

const sqs = await requireService("connectors/queue-shutdown (ElasticMQ)", () => startSqs());
const dirs = tempDirs("ll-queue-stop");
afterAll(async () => {
  await sqs?.stop();
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
