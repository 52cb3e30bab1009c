/**
 * `npm run bench:temporal` — StreamSink in-process against the stream workflow (one worker in
 * this process, a local dev server), one JSON line per case:
 *
 * - `drain`: the same available_now file drain; events/s for each, their ratio and history
 *   events per batch. Flags: --events N (default 1,000,000), --batch N (default 10,000),
 *   --batches-per-fetch N (default: the workflow's, 4; 1 measures one fetch round trip per batch).
 * - `continuous`: a loopback SSE feed offering order events at --rate per second (default
 *   30,000) for --seconds (default 20), consumed continuously by each in turn (batch
 *   --continuous-batch, default 1,000; --max-wait-ms, default 250): sustained committed events/s,
 *   their ratio, offer-to-commit latency p50/p99, history events per batch (bench/temporal/).
 *
 * --batches-per-fetch and --local-fetches (the workflow's localFetchesPerRoundTrip; 0 sends every
 * fetch through the server) apply to both cases. --case drain|continuous|both (default both); --rounds N repeats the continuous case, alternating
 * which side runs first; --only sink|temporal runs one side of it (for profiling). Needs the Temporal CLI: bash scripts/provision-temporal.sh.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { StreamSink } from "../src/sink/index.js";
import { FileSource } from "../src/sources/file/source.js";
import { StreamClient } from "../src/temporal/client.js";
import type { StreamWorkflowResult } from "../workflows/types.js";
import { createLakeLogicWorker } from "../src/temporal/worker.js";
import { startTemporal, type TemporalServer } from "../test/support/temporal.js";
import { ORDERS_CONTRACT, workflowBundle, writeOrders } from "../test/temporal/support.js";
import { localFetchServed, streamSinkContinuous, temporalContinuous } from "./temporal/continuous.js";

const { values } = parseArgs({
  options: {
    case: { type: "string", default: "both" },
    only: { type: "string" },
    events: { type: "string", default: "1000000" },
    batch: { type: "string", default: "10000" },
    "batches-per-fetch": { type: "string" },
    "local-fetches": { type: "string" },
    rate: { type: "string", default: "30000" },
    seconds: { type: "string", default: "20" },
    "continuous-batch": { type: "string", default: "1000" },
    "max-wait-ms": { type: "string", default: "250" },
    rounds: { type: "string", default: "1" },
  },
});
if (!["drain", "continuous", "both"].includes(values.case)) throw new Error(`--case: drain, continuous or both; got ${values.case}`);
if (values.only !== undefined && !["sink", "temporal"].includes(values.only)) throw new Error(`--only: sink or temporal; got ${values.only}`);
const dir = mkdtempSync(join(tmpdir(), "ll-bench-temporal-"));
const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

async function drain(server: TemporalServer): Promise<void> {
  const events = Number(values.events);
  const batchSize = Number(values.batch);
  const batchesPerFetch = values["batches-per-fetch"] === undefined ? undefined : Number(values["batches-per-fetch"]);
  const localFetchesPerRoundTrip = values["local-fetches"] === undefined ? undefined : Number(values["local-fetches"]);
  const file = join(dir, "events.ndjson");
  writeOrders(file, 0, events);

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
  const worker = await createLakeLogicWorker({ address: server.address, workflowBundle: await workflowBundle(), shutdownGraceTimeMs: 1000 });
  const running = worker.run();
  const streams = await StreamClient.connect({ address: server.address });
  let temporalSeconds = 0;
  let result: StreamWorkflowResult;
  let historyEvents = 0;
  let fetches = 0;
  let localFetches = 0;
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
      ...(localFetchesPerRoundTrip === undefined ? {} : { localFetchesPerRoundTrip }),
    });
    result = (await handle.result()) as StreamWorkflowResult;
    temporalSeconds = seconds(t1);
    const history = (await handle.fetchHistory()).events ?? [];
    historyEvents = history.length;
    fetches = history.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "fetchBatch").length;
    localFetches = history.filter((e) => localFetchServed(e)).length;
  } finally {
    worker.shutdown();
    await running;
    await streams.close();
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
      temporal: { seconds: +temporalSeconds.toFixed(2), eventsPerSec: temporalRate, batches: result.batches, fetches, localFetches, historyEvents },
      ratio: +(temporalRate / inProcessRate).toFixed(3),
      historyEventsPerBatch: +(historyEvents / Math.max(1, result.batches)).toFixed(2),
    }),
  );
}

async function continuous(server: TemporalServer): Promise<void> {
  const common = {
    rate: Number(values.rate),
    seconds: Number(values.seconds),
    batchSize: Number(values["continuous-batch"]),
    maxWaitMs: Number(values["max-wait-ms"]),
    ...(values["batches-per-fetch"] === undefined ? {} : { batchesPerFetch: Number(values["batches-per-fetch"]) }),
    ...(values["local-fetches"] === undefined ? {} : { localFetchesPerRoundTrip: Number(values["local-fetches"]) }),
  };
  for (let round = 1; round <= Number(values.rounds); round++) {
    // Alternate which runs first: the machine's speed drifts within minutes.
    const temporalFirst = round % 2 === 0;
    // Fresh lakes, checkpoints and feeds every round.
    const o = { ...common, dir: join(dir, `round-${round}`) };
    let inProcess: Awaited<ReturnType<typeof streamSinkContinuous>> | undefined;
    let temporal: Awaited<ReturnType<typeof temporalContinuous>> | undefined;
    if (temporalFirst && values.only !== "sink") temporal = await temporalContinuous(o, server);
    if (values.only !== "temporal") inProcess = await streamSinkContinuous(o);
    if (!temporalFirst && values.only !== "sink") temporal = await temporalContinuous(o, server);
    console.log(
      JSON.stringify({
        bench: "temporal-vs-inprocess-continuous",
        round,
        first: temporalFirst ? "temporal" : "sink",
        source: "sse",
        offeredPerSec: o.rate,
        seconds: o.seconds,
        batchSize: o.batchSize,
        maxWaitMs: o.maxWaitMs,
        strategy: "merge",
        inProcess,
        temporal,
        ...(inProcess && temporal ? { ratio: +(temporal.sustainedPerSec / inProcess.sustainedPerSec).toFixed(3) } : {}),
        ...(temporal ? { historyEventsPerBatch: temporal.historyEventsPerBatch } : {}),
      }),
    );
  }
}

const server = await startTemporal();
try {
  if (values.case !== "continuous") await drain(server);
  if (values.case !== "drain") await continuous(server);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
