/**
 * Regenerate the workflow histories that test/temporal/replay.test.ts replays on every run:
 *
 *   npx tsx scripts/record-histories.ts
 *
 * Needs the Temporal CLI (bash scripts/provision-temporal.sh). Each path of the stream workflow
 * runs for real against a dev server and a worker: an available_now drain, continuous with a
 * continue-as-new, pause/resume, stop, an activity retry, a batch whose worker was lost (resync
 * and refetch), a queue (ack) source, and per-rule counts carried over continue-as-new. Name
 * scenarios to record only those, e.g.
 * `npx tsx scripts/record-histories.ts lost-worker-resync queue-ack`. The scenarios run in a scratch
 * directory with relative paths, so the histories name no path of the machine that recorded them.
 * The processing_time histories in test/fixtures/histories/processing-time/ are recorded by their
 * own test instead (LAKELOGIC_RECORD_HISTORIES=1 npx vitest run test/temporal/processing-time.test.ts).
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { historyToJSON } from "@temporalio/common/lib/proto-utils.js";
import type { WorkflowHandle } from "@temporalio/client";
import { orderEvent } from "../examples/orders.js";
import { registerSource } from "../src/sources/registry.js";
import { StreamClient } from "../src/temporal/client.js";
import type { StreamWorkflowInput } from "../workflows/types.js";
import { createLakeLogicWorker } from "../src/temporal/worker.js";
import { startTemporal } from "../test/support/temporal.js";
import { waitFor } from "../test/support/proc.js";
import { writeOrders } from "../test/temporal/support.js";
import { MemoryQueue } from "../test/support/memory-queue.js";

const only = process.argv.slice(2);
const wanted = (scenario: string) => only.length === 0 || only.includes(scenario);

const queues = new Map<string, MemoryQueue>();
registerSource({
  spec: {
    type: "memory-queue",
    kind: "ack",
    summary: "record-histories only",
    options: {
      name: { type: "string", description: "queue name", required: true },
      messages: { type: "integer", description: "order events in the queue", required: true },
    },
  },
  // One queue per name: whichever pipeline the worker opens reads on where the last one stopped.
  create: (o) => {
    const name = String(o.name);
    if (!queues.has(name)) queues.set(name, new MemoryQueue(Array.from({ length: Number(o.messages) }, (_, i) => orderEvent(i))));
    return queues.get(name)!;
  },
});

const outDir = fileURLToPath(new URL("../test/fixtures/histories/", import.meta.url));
const contractSource = fileURLToPath(new URL("../examples/orders.yaml", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "ll-record-"));
mkdirSync(outDir, { recursive: true });
process.chdir(scratch);
copyFileSync(contractSource, "orders.yaml");

const server = await startTemporal();
// Fixed names, so the histories say nothing about the machine that recorded them.
const worker = await createLakeLogicWorker({
  address: server.address,
  shutdownGraceTimeMs: 2000,
  workerQueue: "lakelogic@recorder",
  identity: "recorder",
});
const running = worker.run();
const streams = await StreamClient.connect({ address: server.address });

function input(name: string, extra: Partial<StreamWorkflowInput> = {}): StreamWorkflowInput {
  mkdirSync(name, { recursive: true });
  return {
    contract: "orders.yaml",
    source: { type: "file", path: `${name}/events.ndjson` },
    mode: "available_now",
    checkpointKey: `replay::${name}`,
    targetPath: `${name}/lake`,
    checkpoint: `${name}/checkpoints.sqlite`,
    batchSize: 400,
    maxWaitMs: 200,
    timeouts: { idleFetchMs: 300 },
    ...extra,
  };
}

async function save(name: string, handle: WorkflowHandle): Promise<void> {
  const history = await handle.fetchHistory();
  // Stack traces name source paths and identities name hosts; replay reads neither.
  const scrub = (k: string, v: unknown) => (k === "stackTrace" ? "" : k === "identity" ? "recorder" : v);
  const json = JSON.parse(historyToJSON(history), scrub) as unknown;
  writeFileSync(join(outDir, `${name}.json`), JSON.stringify(json, null, 1) + "\n");
  console.log(`recorded ${name}: ${history.events?.length ?? 0} events`);
}

const total = (key: string) => streams.status(key).then((s) => s.sourceCount);

try {
  if (wanted("available-now")) {
    const i = input("available-now");
    writeOrders(i.source.path as string, 0, 1000);
    const h = await streams.start(i);
    await h.result();
    await save("available-now", h);
  }
  if (wanted("continuous-can")) {
    const i = input("continuous-can", { mode: "continuous", continueAsNewEvery: 2 });
    writeOrders(i.source.path as string, 0, 1000);
    const h = await streams.start(i);
    await waitFor("continuous drained", async () => (await total(i.checkpointKey!)) === 1000, 60_000);
    await streams.signal(i.checkpointKey!, "stop");
    await streams.result(i.checkpointKey!);
    // The first run ends in continue-as-new; the last one in the graceful stop.
    await save("continuous-can-first-run", streams.client.workflow.getHandle(h.workflowId, h.firstExecutionRunId));
    await save("continuous-can-last-run", streams.handle(i.checkpointKey!));
  }
  if (wanted("rules-can")) {
    // Per-rule counts in every writeBatches result, summed in the workflow and carried over
    // continue-as-new in its input: the last run starts from the first run's sums.
    const i = input("rules-can", { mode: "continuous", continueAsNewEvery: 2 });
    writeOrders(i.source.path as string, 0, 1200);
    const h = await streams.start(i);
    await waitFor("continuous drained", async () => (await total(i.checkpointKey!)) === 1200, 60_000);
    await streams.signal(i.checkpointKey!, "stop");
    await streams.result(i.checkpointKey!);
    await save("rules-can-first-run", streams.client.workflow.getHandle(h.workflowId, h.firstExecutionRunId));
    await save("rules-can-last-run", streams.handle(i.checkpointKey!));
  }
  if (wanted("pause-resume")) {
    const i = input("pause-resume", { mode: "continuous" });
    writeOrders(i.source.path as string, 0, 400);
    await streams.start(i);
    const key = i.checkpointKey!;
    await waitFor("first batch", async () => (await total(key)) === 400, 60_000);
    await streams.signal(key, "pause");
    await waitFor("paused", async () => (await streams.status(key)).state === "paused", 30_000);
    writeOrders(i.source.path as string, 400, 800, true);
    await streams.signal(key, "resume");
    await waitFor("second batch", async () => (await total(key)) === 800, 60_000);
    await streams.signal(key, "stop");
    await streams.result(key);
    await save("pause-resume", streams.handle(key));
  }
  if (wanted("stop")) {
    const i = input("stop", { mode: "continuous" });
    writeOrders(i.source.path as string, 0, 400);
    await streams.start(i);
    await waitFor("first batch", async () => (await total(i.checkpointKey!)) === 400, 60_000);
    await streams.signal(i.checkpointKey!, "stop");
    await streams.result(i.checkpointKey!);
    await save("stop", streams.handle(i.checkpointKey!));
  }
  if (wanted("activity-retry")) {
    const i = input("activity-retry");
    const h = await streams.start(i);
    await waitFor(
      "a failed attempt",
      async () => ((await h.describe()).raw.pendingActivities ?? []).some((a) => a.lastFailure),
      30_000,
      50,
    );
    writeOrders(i.source.path as string, 0, 600);
    await h.result();
    await save("activity-retry", h);
  }
  if (wanted("lost-worker-resync")) {
    const i = input("lost-worker-resync");
    writeOrders(i.source.path as string, 0, 1000);
    // The batch of the second fetch is gone from the spool before writeBatches runs, as when the
    // worker that fetched it died and another runs the workflow on: writeBatches fails with
    // SpoolMissingError, and the workflow resyncs from the checkpoint store and fetches again.
    const runtime = worker.runtime;
    const fetchBatch = runtime.fetchBatch.bind(runtime);
    const takeReadAhead = runtime.takeReadAhead.bind(runtime);
    let fetches = 0;
    // Through the server or from the worker's read-ahead, the second fetch loses its batch.
    const losingSecond = <T extends { spool: string | null } | null>(req: { key: string }, fetched: T): T => {
      if (fetched && req.key === i.checkpointKey && ++fetches === 2 && fetched.spool) runtime.spool.drop(fetched.spool);
      return fetched;
    };
    runtime.fetchBatch = async (req, stop) => losingSecond(req, await fetchBatch(req, stop));
    runtime.takeReadAhead = async (req) => losingSecond(req, await takeReadAhead(req));
    try {
      const h = await streams.start(i);
      await h.result();
      await save("lost-worker-resync", h);
    } finally {
      runtime.fetchBatch = fetchBatch;
      runtime.takeReadAhead = takeReadAhead;
    }
  }
  if (wanted("queue-ack")) {
    // Two batches, each acknowledged after its commit, then the empty receive that ends the drain.
    const i = input("queue-ack", { source: { type: "memory-queue", name: "queue-ack", messages: 700 } });
    const h = await streams.start(i);
    await h.result();
    await save("queue-ack", h);
  }
} finally {
  worker.shutdown();
  await running;
  await streams.close();
  await server.stop();
  process.chdir(tmpdir());
  rmSync(scratch, { recursive: true, force: true });
}
