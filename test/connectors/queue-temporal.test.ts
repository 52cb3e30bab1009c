/**
 * The queue connectors as JSON source configs in the Temporal stream workflow, on a real Temporal
 * dev server with a real worker: `{ "type": "sqs", ... }` against ElasticMQ and
 * `{ "type": "pubsub", ... }` against pstest. fetchBatch receives and keeps the ack tokens in the
 * worker; writeBatches acknowledges each batch after its commit. Afterwards the lake holds every
 * order once and the server has acknowledged every message.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { StreamClient } from "../../src/temporal/client.js";
import type { StreamWorkflowInput, StreamWorkflowResult } from "../../workflows/types.js";
import { createLakeLogicWorker, type LakeLogicWorker } from "../../src/temporal/worker.js";
import { startPubSub } from "../support/pubsub.js";
import { requireService } from "../support/services.js";
import { startSqs } from "../support/sqs.js";
import { startTemporal } from "../support/temporal.js";
import { ORDERS_CONTRACT, workflowBundle } from "../temporal/support.js";
import { expectedOrders, readLake, sorted } from "./queue-lake.js";

process.env.METADATA_SERVER_DETECTION ??= "none";
const temporal = await requireService("connectors/queues on Temporal (dev server)", () => startTemporal());
const sqs = temporal ? await requireService("connectors/queues on Temporal (ElasticMQ)", () => startSqs()) : undefined;
const ps = temporal ? await requireService("connectors/queues on Temporal (pstest)", () => startPubSub()) : undefined;
afterAll(async () => {
  await sqs?.stop();
  await ps?.stop();
  await temporal?.stop();
});

describe.skipIf(!temporal || !sqs || !ps)("queue sources in the Temporal stream workflow", () => {
  const dirs: string[] = [];
  let worker: LakeLogicWorker;
  let running: Promise<void>;
  let streams: StreamClient;

  beforeAll(async () => {
    worker = await createLakeLogicWorker({ address: temporal!.address, workflowBundle: await workflowBundle(), shutdownGraceTimeMs: 2000 });
    running = worker.run();
    streams = await StreamClient.connect({ address: temporal!.address });
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await streams?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  function input(name: string, source: StreamWorkflowInput["source"]): StreamWorkflowInput {
    const dir = mkdtempSync(join(tmpdir(), `ll-wf-queue-${name}-`));
    dirs.push(dir);
    return {
      contract: ORDERS_CONTRACT,
      source,
      mode: "available_now",
      checkpointKey: `test::queue-${name}`,
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "checkpoints.sqlite"),
      batchSize: 250,
      maxWaitMs: 500,
      timeouts: { idleFetchMs: 500 },
    };
  }

  it("drains an SQS queue from a JSON source config; deletes after each write", async () => {
    const url = await sqs!.createQueue(`wf-${Date.now()}`);
    const N = 1000;
    for (let i = 0; i < N; i += 10) {
      const entries = Array.from({ length: 10 }, (_, j) => ({ Id: String(j), MessageBody: JSON.stringify(orderEvent(i + j)) }));
      await sqs!.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
    }
    const wf = input("sqs", { type: "sqs", queue_url: url, visibility_timeout: 30 });
    const result = (await (await streams.start(wf)).result()) as StreamWorkflowResult;
    expect(result).toMatchObject({ sourceCount: N, stoppedBy: "end" });
    const rows = await readLake(wf.targetPath!);
    expect(sorted(rows.goodIds)).toEqual(expectedOrders(N).good);
    expect(sorted(rows.badIds)).toEqual(expectedOrders(N).bad);
    expect(await sqs!.depth(url)).toMatchObject({ total: 0 });
    // Lag reaches the workflow's status query: the backlog SQS reports, and the oldest age.
    const status = await streams.status(wf.checkpointKey!);
    expect(status.lag).toMatchObject({ records: expect.any(Number), oldestAgeMs: expect.any(Number) });
  });

  it("drains a Pub/Sub subscription from a JSON source config; acks after each write", async () => {
    const { topic, subscription } = await ps!.createSubscription(`wf-${Date.now()}`);
    const N = 600;
    const t = ps!.pubsub.topic(topic);
    await Promise.all(Array.from({ length: N }, (_, i) => t.publishMessage({ data: Buffer.from(JSON.stringify(orderEvent(i))) })));
    const wf = input("pubsub", { type: "pubsub", project_id: ps!.projectId, subscription });
    const result = (await (await streams.start(wf)).result()) as StreamWorkflowResult;
    expect(result).toMatchObject({ sourceCount: N, stoppedBy: "end" });
    expect(sorted((await readLake(wf.targetPath!)).goodIds)).toEqual(expectedOrders(N).good);
    await new Promise((r) => setTimeout(r, 500));
    const acked = (await ps!.messages()).filter((m) => m.topic.endsWith(`/topics/${topic}`) && m.acks > 0).length;
    expect(acked).toBe(N);
  });
  it("ends a Pub/Sub drain at the snapshot of its first fetch while a publisher keeps going; the next drain takes the rest (I7)", async () => {
    const { topic, subscription } = await ps!.createSubscription(`wf-snap-${Date.now()}`);
    const t = ps!.pubsub.topic(topic);
    const publish = (from: number, n: number) =>
      Promise.all(Array.from({ length: n }, (_, i) => t.publishMessage({ data: Buffer.from(JSON.stringify(orderEvent(from + i))) })));
    const N = 500;
    await publish(0, N);
    const wf = input("pubsub-snapshot", { type: "pubsub", project_id: ps!.projectId, subscription });
    const handle = await streams.start(wf);
    // Publish only once the first batch is committed, i.e. after the drain's snapshot.
    let produced = 0;
    let stop = false;
    const publisher = (async () => {
      // (The status query is answered once the workflow has opened the stream.)
      const committed = () => streams.status(wf.checkpointKey!).then((st) => st.batchId >= 1, () => false);
      while (!(await committed())) await new Promise((r) => setTimeout(r, 20));
      while (!stop) {
        await publish(100_000 + produced, 10);
        produced += 10;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    let result: StreamWorkflowResult;
    try {
      result = (await handle.result()) as StreamWorkflowResult;
    } finally {
      stop = true;
      await publisher;
    }
    expect(produced).toBeGreaterThan(0);
    // It ended although the publisher never paused, and took nothing published after its
    // snapshot. Streaming pull does not deliver in publish order, so a few older messages may
    // arrive only after the drain saw a full wait without any: they wait for the next drain too.
    expect(result.stoppedBy).toBe("end");
    expect(result.sourceCount).toBeGreaterThan(N / 2);
    expect(result.sourceCount).toBeLessThanOrEqual(N);
    expect((await readLake(wf.targetPath!)).goodIds.every((id) => id < N)).toBe(true);
    // Nothing was lost: later drains (the publisher has stopped) take all the rest. Now and then
    // the fake counts a redelivery of a handed-back message that never reaches the client's
    // message handler; it comes back when its 10 s ack deadline lapses. So: drain until
    // everything is in, within a budget well above that deadline.
    let taken = result.sourceCount;
    const budget = Date.now() + 45_000;
    while (taken < N + produced && Date.now() < budget) {
      const got = ((await (await streams.start(wf)).result()) as StreamWorkflowResult).sourceCount;
      taken += got;
      if (got === 0) await new Promise((r) => setTimeout(r, 2000));
    }
    expect(taken).toBe(N + produced);
    const all = [...expectedOrders(N).good, ...expectedOrders(produced, 100_000).good];
    expect(sorted((await readLake(wf.targetPath!)).goodIds)).toEqual(sorted(all));
  }, 150_000);
});
