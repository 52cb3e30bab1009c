/**
 * `npm run bench:temporal` — the same available_now drain in-process (StreamSink) and through
 * Temporal (one worker, a local dev server), printed as one JSON line:
 * events/s for each, their ratio (target >= 0.8) and history events per batch (target <= 12).
 *
 * Flags: --events N (default 1,000,000), --batch N (default 10,000), --batches-per-fetch N
 * (default: the workflow's, 4; 1 measures one fetch round trip per batch).
 * Needs the Temporal CLI: bash scripts/provision-temporal.sh.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { StreamSink } from "../src/sink/index.js";
import { FileSource } from "../src/sources/file/file-source.js";
import { StreamClient } from "../src/temporal/client.js";
import type { StreamWorkflowResult } from "../workflows/types.js";
import { createLakeLogicWorker } from "../src/temporal/worker.js";
import { startTemporal } from "../test/support/temporal.js";
import { ORDERS_CONTRACT, workflowBundle, writeOrders } from "../test/temporal/support.js";

const { values } = parseArgs({
  options: { events: { type: "string", default: "1000000" }, batch: { type: "string", default: "10000" }, "batches-per-fetch": { type: "string" } },
});
const events = Number(values.events);
const batchSize = Number(values.batch);
const batchesPerFetch = values["batches-per-fetch"] === undefined ? undefined : Number(values["batches-per-fetch"]);
const dir = mkdtempSync(join(tmpdir(), "ll-bench-temporal-"));
const file = join(dir, "events.ndjson");
writeOrders(file, 0, events);

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

// In-process.
const t0 = process.hrtime.bigint();
const inProcess = await new StreamSink(ORDERS_CONTRACT, new FileSource(file), {
  targetPath: join(dir, "lake-inprocess"),
  checkpoint: join(dir, "inprocess.sqlite"),
  batchSize,
  maxWaitMs: 5000,
}).run("available_now");
const inProcessSeconds = seconds(t0);

// Through Temporal.
const server = await startTemporal();
const worker = await createLakeLogicWorker({ address: server.address, workflowBundle: await workflowBundle(), shutdownGraceTimeMs: 1000 });
const running = worker.run();
const streams = await StreamClient.connect({ address: server.address });
let temporalSeconds = 0;
let result: StreamWorkflowResult;
let historyEvents = 0;
let fetches = 0;
try {
  const t1 = process.hrtime.bigint();
  const handle = await streams.start({
    contract: ORDERS_CONTRACT,
    source: { type: "file", path: file },
    mode: "available_now",
    checkpointKey: "bench::temporal",
    targetPath: join(dir, "lake-temporal"),
    checkpoint: join(dir, "temporal.sqlite"),
    batchSize,
    maxWaitMs: 5000,
    ...(batchesPerFetch === undefined ? {} : { batchesPerFetch }),
  });
  result = (await handle.result()) as StreamWorkflowResult;
  temporalSeconds = seconds(t1);
  const history = (await handle.fetchHistory()).events ?? [];
  historyEvents = history.length;
  fetches = history.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "fetchBatch").length;
} finally {
  worker.shutdown();
  await running;
  await streams.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

const inProcessRate = Math.round(events / inProcessSeconds);
const temporalRate = Math.round(events / temporalSeconds);
console.log(
  JSON.stringify({
    bench: "temporal-vs-inprocess",
    events,
    batchSize,
    mode: "available_now",
    strategy: "merge",
    inProcess: { seconds: +inProcessSeconds.toFixed(2), eventsPerSec: inProcessRate, batches: inProcess.batches },
    temporal: { seconds: +temporalSeconds.toFixed(2), eventsPerSec: temporalRate, batches: result.batches, fetches, historyEvents },
    ratio: +(temporalRate / inProcessRate).toFixed(3),
    historyEventsPerBatch: +(historyEvents / Math.max(1, result.batches)).toFixed(2),
  }),
);
