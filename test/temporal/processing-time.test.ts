/**
 * The stream workflow's processing_time mode: one batch per trigger, and between triggers a
 * durable timer in the workflow (TimerStarted in history), never a sleep in an activity. The
 * activities are mocked (they answer at once); the server is the provisioned dev server through
 * TestWorkflowEnvironment.createLocal (the time-skipping test server is not provisioned here, see
 * workflow-mocked.test.ts). No assertion depends on how fast the machine is: an interval of an
 * hour is waited on until the test stops the run, and the short one is only checked from below
 * (a trigger never starts before the one before it plus the interval: timers do not fire early).
 * Each history is replayed against the workflow code, as test/temporal/replay.test.ts does, and
 * so are the ones recorded from these runs in test/fixtures/histories/processing-time/ (recorded
 * again with LAKELOGIC_RECORD_HISTORIES=1; kept, they guard later changes to workflows/).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import type { temporal } from "@temporalio/proto";
import { ApplicationFailure } from "@temporalio/common";
import { TestWorkflowEnvironment } from "@temporalio/testing";
import { DefaultLogger, Runtime, Worker } from "@temporalio/worker";
import { afterAll, describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../../src/checkpoint/codec.js";
import { SEARCH_ATTRIBUTES } from "../../src/temporal/search-attributes.js";
import type { streamWorkflow } from "../../workflows/stream.js";
import type {
  BatchActivities,
  Counts,
  FetchBatchInput,
  SharedActivities,
  StreamWorkflowInput,
  WriteBatchResult,
  WriteBatchesInput,
} from "../../workflows/types.js";
import { waitFor } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { temporalBinary } from "../support/temporal.js";
import { recordableHistory, workflowBundle } from "./support.js";

Runtime.install({ logger: new DefaultLogger("WARN") });
const env = await requireService("temporal: processing_time workflow", () =>
  TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: "existing-path", path: temporalBinary() },
      ip: "127.0.0.1",
      log: { format: "pretty", level: "error" },
      extraArgs: Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ["--search-attribute", `${name}=${type}`]),
    },
  }),
);
afterAll(() => env?.teardown());

type History = temporal.api.history.v1.IHistory;
const ZERO: Counts = { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 };
const at = (offset: number) => encodeCursor({ offset });
const offsetOf = (cursor: string | null) => (cursor === null ? 0 : (decodeCursor(cursor) as { offset: number }).offset);

/**
 * Mocked activities over a cursor source whose n-th fetch finds `found[n]` records (0: an empty
 * trigger; past the list: empty). Every call is logged as `name(detail)`.
 */
function mockWorker(taskQueue: string, found: number[]) {
  const calls: string[] = [];
  const fetches: FetchBatchInput[] = [];
  const spool = new Map<string, { from: number; to: number }>();
  const store = { cursor: null as string | null, batchId: 0, totals: ZERO };
  /** One batch of a writeBatches call, committed to the store: logged as `write(from-to)`. */
  const writeOne = (b: WriteBatchesInput["batches"][number]): WriteBatchResult => {
    const held = b.fetched ? spool.get(b.fetched) : undefined;
    if (!held) throw ApplicationFailure.nonRetryable(`a write without a fetched batch (an empty trigger must write nothing)`, "MockMisuse");
    const batch = { ...ZERO, sourceCount: held.to - held.from, goodCount: held.to - held.from };
    const totals = { ...store.totals, sourceCount: store.totals.sourceCount + batch.sourceCount, goodCount: store.totals.goodCount + batch.goodCount };
    Object.assign(store, { cursor: b.cursor, batchId: store.batchId + 1, totals });
    calls.push(`write(${held.from}-${held.to})`);
    return { batchId: store.batchId, totals, batch, committedAt: new Date(0).toISOString(), outcome: "committed" as const };
  };
  const activities: SharedActivities & BatchActivities = {
    getWorkerQueue: async () => taskQueue,
    openStream: async (spec) => ({ key: spec.checkpointKey!, dataset: "orders", cursor: store.cursor, batchId: store.batchId, totals: store.totals }),
    async fetchBatch(input) {
      const from = offsetOf(input.cursor);
      const to = from + (found[fetches.length] ?? 0);
      fetches.push(input);
      calls.push(`fetchBatch(${to > from ? `${from}-${to}` : "empty"})`);
      const ref = `fetched-${randomUUID()}`;
      if (to > from) spool.set(ref, { from, to });
      return {
        spool: to > from ? ref : null,
        count: to - from,
        bytes: (to - from) * 100,
        cursor: to > from ? at(to) : input.cursor,
        cursorMoved: to > from,
        exhausted: false,
        lag: null,
        ackSource: false,
      };
    },
    async takeReadAhead() {
      throw ApplicationFailure.nonRetryable("processing_time reads nothing ahead", "MockMisuse");
    },
    async writeBatches(input) {
      // processing_time fetches one batch per trigger.
      if (input.batches.length !== 1) throw ApplicationFailure.nonRetryable(`a trigger wrote ${input.batches.length} batches`, "MockMisuse");
      if (input.ack) throw ApplicationFailure.nonRetryable("a cursor source is not acknowledged", "MockMisuse");
      return { written: [writeOne(input.batches[0]!)] };
    },
  };
  return { activities, calls, fetches, store };
}

function input(name: string, extra: Partial<StreamWorkflowInput>): StreamWorkflowInput {
  return { contract: "orders.yaml", source: { type: "mock" }, mode: "processing_time", checkpointKey: `ptime::${name}`, batchSize: 3, ...extra };
}

type Stamp = { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined;
/** A protobuf Timestamp or Duration (seconds may be a Long) in milliseconds. */
const ms = (t: Stamp) => Number((t?.seconds ?? 0).toString()) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
const durationMs = (d: Stamp) => ms(d);

/** The events that matter here, in order: fetches, timers and continue-as-new. */
function shape(history: History): string[] {
  return (history.events ?? []).flatMap((e) => {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === "fetchBatch") return ["fetch"];
    if (e.timerStartedEventAttributes) return ["timer"];
    if (e.timerFiredEventAttributes) return ["fired"];
    if (e.timerCanceledEventAttributes) return ["canceled"];
    if (e.workflowExecutionContinuedAsNewEventAttributes) return ["continued-as-new"];
    return [];
  });
}

/** For each fetch: the time of the workflow task that scheduled it (a lower bound of its trigger's start) and of its scheduling. */
function fetchTimes(history: History): Array<{ task: number; scheduled: number }> {
  let task = 0;
  const out: Array<{ task: number; scheduled: number }> = [];
  for (const e of history.events ?? []) {
    if (e.workflowTaskStartedEventAttributes) task = ms(e.eventTime);
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === "fetchBatch") out.push({ task, scheduled: ms(e.eventTime) });
  }
  return out;
}

const FIXTURES = fileURLToPath(new URL("../fixtures/histories/processing-time/", import.meta.url));
const RECORDED = ["processing-time-stop.json", "processing-time-first-run.json", "processing-time-last-run.json"];

/** Replay `history` against the current workflow code; with LAKELOGIC_RECORD_HISTORIES=1 also keep it. */
async function replay(history: History, name: string): Promise<void> {
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, name);
  if (process.env.LAKELOGIC_RECORD_HISTORIES !== "1") return;
  mkdirSync(FIXTURES, { recursive: true });
  writeFileSync(`${FIXTURES}${name}.json`, recordableHistory(history));
}

describe("recorded processing_time histories", () => {
  it.each(RECORDED)("replays %s deterministically", async (file) => {
    expect(readdirSync(FIXTURES).sort()).toEqual([...RECORDED].sort());
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURES + file, "utf8")));
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
  });
});

describe.skipIf(!env)("stream workflow, processing_time", () => {
  it("waits for the next trigger on a durable timer, with no activity running, until stopped", async () => {
    const taskQueue = `ptime-${randomUUID()}`;
    const mock = mockWorker(taskQueue, [3, 2]);
    const worker = await Worker.create({ connection: env!.nativeConnection, taskQueue, workflowBundle: await workflowBundle(), activities: mock.activities });
    const hour = 3_600_000;
    const stream = input("hour", { intervalMs: hour });
    const result = await worker.runUntil(async () => {
      const handle = await env!.client.workflow.start<typeof streamWorkflow>("streamWorkflow", { taskQueue, workflowId: `lakelogic:${stream.checkpointKey}`, args: [stream] });
      // The batch is committed, then the workflow starts its timer: from then on nothing runs.
      await waitFor("the timer to the next trigger", async () => shape(await handle.fetchHistory()).includes("timer"), 60_000, 50);
      const history = await handle.fetchHistory();
      const pending = await handle.describe();
      expect(pending.raw.pendingActivities ?? []).toEqual([]);
      const timer = (history.events ?? []).find((e) => e.timerStartedEventAttributes)!.timerStartedEventAttributes!;
      // What is left of the hour after the batch (which took far less than half of it).
      expect(durationMs(timer.startToFireTimeout)).toBeLessThanOrEqual(hour);
      expect(durationMs(timer.startToFireTimeout)).toBeGreaterThan(hour / 2);
      expect(await handle.query("status")).toMatchObject({ state: "running", mode: "processing_time", batchId: 1 });
      await handle.signal("stop");
      return (await handle.result());
    });
    expect(result).toMatchObject({ batches: 1, sourceCount: 3, stoppedBy: "stop" });
    // One trigger ran; the stop ended the wait (the timer was cancelled, never fired).
    expect(mock.calls).toEqual(["fetchBatch(0-3)", "write(0-3)"]);
    // The activity was asked for one batch, nothing read ahead, and no long wait of its own.
    expect(mock.fetches[0]).toMatchObject({ readAhead: false });
    expect(mock.fetches[0]!.idleMs).toBeUndefined();
    expect(mock.fetches[0]!.maxBatches).toBeUndefined();
    const history = await env!.client.workflow.getHandle(`lakelogic:${stream.checkpointKey}`).fetchHistory();
    expect(shape(history)).toEqual(["fetch", "timer", "canceled"]);
    await replay(history, "processing-time-stop");
  });

  it("runs one batch per trigger, commits nothing for an empty one, and continues as new between triggers", async () => {
    const taskQueue = `ptime-${randomUUID()}`;
    // Trigger 1 finds 3 records, trigger 2 none, trigger 3 (after continue-as-new) 2.
    const mock = mockWorker(taskQueue, [3, 0, 2]);
    const worker = await Worker.create({ connection: env!.nativeConnection, taskQueue, workflowBundle: await workflowBundle(), activities: mock.activities });
    const interval = 1_500;
    const stream = input("cycle", { intervalMs: interval, continueAsNewEvery: 2, maxBatches: 2 });
    const { result, first, last } = await worker.runUntil(async () => {
      const handle = await env!.client.workflow.start<typeof streamWorkflow>("streamWorkflow", { taskQueue, workflowId: `lakelogic:${stream.checkpointKey}`, args: [stream] });
      const result = (await handle.result());
      const first = await env!.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).fetchHistory();
      const last = await env!.client.workflow.getHandle(handle.workflowId).fetchHistory();
      return { result, first, last };
    });
    expect(mock.calls).toEqual(["fetchBatch(0-3)", "write(0-3)", "fetchBatch(empty)", "fetchBatch(3-5)", "write(3-5)"]);
    expect(result).toMatchObject({ batches: 2, sourceCount: 5, stoppedBy: "max-batches", cursor: { offset: 5 } });
    expect(mock.store.batchId).toBe(2); // the empty trigger made no batch
    // Two triggers, then continue-as-new (empty triggers count, so an idle stream's history
    // stays bounded); the last run's trigger ends the run at maxBatches without waiting again.
    expect(shape(first).filter((s) => s === "fetch" || s === "continued-as-new")).toEqual(["fetch", "fetch", "continued-as-new"]);
    expect(shape(last)).toEqual(["fetch"]);
    // No trigger started before the one before it plus the interval (a timer never fires early;
    // an activity sleeping would not show up here, the workflow's own wait does).
    const times = fetchTimes(first);
    expect(times[1]!.scheduled - times[0]!.task).toBeGreaterThanOrEqual(interval);
    expect(mock.fetches.every((f) => f.readAhead === false && f.idleMs === undefined)).toBe(true);
    await replay(first, "processing-time-first-run");
    await replay(last, "processing-time-last-run");
  });
});
