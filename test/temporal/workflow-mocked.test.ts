/**
 * streamWorkflow under TestWorkflowEnvironment with mocked activities: the paths that a real
 * worker reaches only by accident or with a queue server — a batch whose worker was lost (resync
 * to the checkpoint store's position, refetch) and a queue source (ack after each commit).
 *
 * Not time-skipping: createTimeSkipping needs the Java test server (temporal-test-server), which
 * is neither provisioned here nor shipped in an npm package, and tests must not download it. So
 * createLocal runs the provisioned dev-server binary (scripts/provision-temporal.sh). None of
 * these paths waits on a timer: real time costs nothing.
 */
import { randomUUID } from "node:crypto";
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
  FetchBatchResult,
  SharedActivities,
  StreamWorkflowInput,
  StreamWorkflowResult,
  WriteBatchResult,
  WriteBatchesInput,
} from "../../workflows/types.js";
import { requireService } from "../support/services.js";
import { temporalBinary } from "../support/temporal.js";
import { workflowBundle } from "./support.js";

// Before the environment makes the runtime: warnings and errors only (workers log every state change at INFO).
Runtime.install({ logger: new DefaultLogger("WARN") });
const env = await requireService("temporal: stream workflow with mocked activities", () =>
  TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: "existing-path", path: temporalBinary() },
      ip: "127.0.0.1",
      log: { format: "pretty", level: "error" },
      // The workflow publishes these; an unregistered one fails its workflow task.
      extraArgs: Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ["--search-attribute", `${name}=${type}`]),
    },
  }),
);
afterAll(() => env?.teardown());

type Activities = SharedActivities & BatchActivities;

/** One batch of a writeBatches call, with the position it is written after. */
type OneWrite = WriteBatchesInput["batches"][number] & { previous: WriteBatchesInput["previous"] };

/** Records [from, to) of the mocked source, as the mock worker's spool holds them. */
interface Held {
  from: number;
  to: number;
}

const ZERO: Counts = { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 };
const isBad = (i: number) => i % 5 === 4;
const at = (offset: number) => encodeCursor({ offset });
const offsetOf = (cursor: string | null) => (cursor === null ? 0 : (decodeCursor(cursor) as { offset: number }).offset);

function countsOf({ from, to }: Held): Counts {
  let bad = 0;
  for (let i = from; i < to; i++) if (isBad(i)) bad++;
  return { sourceCount: to - from, goodCount: to - from - bad, badCount: bad, supersededCount: 0 };
}

function plus(a: Counts, b: Counts): Counts {
  return {
    sourceCount: a.sourceCount + b.sourceCount,
    goodCount: a.goodCount + b.goodCount,
    badCount: a.badCount + b.badCount,
    supersededCount: a.supersededCount + b.supersededCount,
  };
}

/** A call the workflow must never make: non-retryable, so the run fails at once instead of retrying. */
const misuse = (message: string) => ApplicationFailure.nonRetryable(message, "MockMisuse");

/** How the mocked source answers a fetch; `hold` puts a batch in the mock worker's spool. */
type MockSource = (input: FetchBatchInput, hold: (batch: Held) => string) => Omit<FetchBatchResult, "lag">;

interface MockOptions {
  source: MockSource;
  /**
   * How this worker's read-ahead answers takeReadAhead (the fetch served locally); by default it
   * holds nothing (null), and the workflow fetches through the server.
   */
  ahead?: (input: FetchBatchInput, hold: (batch: Held) => string) => Omit<FetchBatchResult, "lag"> | null;
  /** The n-th batch written (1-based) finds its spool gone: the worker that held the batch died. */
  loseSpoolAtWrite?: number;
  /** …after that worker had committed the batch (the checkpoint store has it, the workflow not). */
  lostAfterCommit?: boolean;
}

/**
 * One mocked worker: the activities the workflow calls, over an in-memory spool and checkpoint
 * store, logging each call as `name(detail)` so a test can assert the exact sequence. writeBatches
 * logs its steps instead: `write(from-to)` for each batch it commits, `ack(from-to)` for each it
 * acknowledges.
 */
function mockWorker(taskQueue: string, options: MockOptions) {
  const calls: string[] = [];
  const fetches: FetchBatchInput[] = [];
  const writes: OneWrite[] = [];
  const acked: number[] = [];
  const spool = new Map<string, Held>();
  /** Batches of an ack source: they stay in the spool until acknowledged (as in the real runtime). */
  const unacked = new Set<string>();
  const store = { cursor: null as string | null, batchId: 0, totals: ZERO };
  let writeCalls = 0;
  /** Batches whose spool was lost: a later write of one fails as on a real worker. */
  const lost = new Map<string, Held>();
  /** Batches asked of each writeBatches call. */
  const writeBatchesCalls: number[] = [];
  const range = ({ from, to }: Held) => `${from}-${to}`;
  const hold = (batch: Held) => {
    const ref = `fetched-${randomUUID()}`;
    spool.set(ref, batch);
    return ref;
  };
  const commit = (input: OneWrite, held: Held) => {
    // Optimistic concurrency as in the real store: the workflow must write from the store's position.
    if (input.previous.batchId !== store.batchId) throw ApplicationFailure.nonRetryable("stale position", "CheckpointConflictError");
    const batch = countsOf(held);
    Object.assign(store, { cursor: input.cursor, batchId: store.batchId + 1, totals: plus(store.totals, batch) });
    return batch;
  };

  /** One batch of a writeBatches call, as the runtime writes and commits it. */
  const writeOne = (input: OneWrite): WriteBatchResult => {
    writes.push(input);
    const held = input.fetched ? spool.get(input.fetched) : undefined;
    const gone = input.fetched ? lost.get(input.fetched) : undefined;
    if (gone) {
      calls.push(`write(${range(gone)}): spool gone`);
      throw ApplicationFailure.create({ type: "SpoolMissingError", message: `spool ${input.fetched} is not on this worker`, nonRetryable: true });
    }
    if (!held) throw misuse(`a write without a fetched batch: ${input.fetched}`);
    if (++writeCalls === options.loseSpoolAtWrite) {
      if (options.lostAfterCommit) commit(input, held);
      spool.delete(input.fetched!);
      lost.set(input.fetched!, held);
      calls.push(`write(${range(held)}): spool lost`);
      throw ApplicationFailure.create({ type: "SpoolMissingError", message: `spool ${input.fetched} is not on this worker`, nonRetryable: true });
    }
    const batch = commit(input, held);
    calls.push(`write(${range(held)})`);
    if (!unacked.has(input.fetched!)) spool.delete(input.fetched!);
    return { batchId: store.batchId, totals: store.totals, batch, committedAt: new Date(0).toISOString(), outcome: "committed" };
  };
  /** I8: a queue batch's messages, after its commit. */
  const ackOne = (ref: string) => {
    const held = spool.get(ref);
    if (!held || !unacked.delete(ref)) throw misuse(`an ack for a batch not held: ${ref}`);
    calls.push(`ack(${range(held)})`);
    for (let i = held.from; i < held.to; i++) acked.push(i);
    spool.delete(ref);
  };

  const activities: Activities = {
    async getWorkerQueue() {
      calls.push("getWorkerQueue");
      // The worker's own queue is the test's task queue: this one worker polls both.
      return taskQueue;
    },
    async openStream(spec) {
      calls.push(`openStream(${store.batchId})`);
      return { key: spec.checkpointKey!, dataset: "orders", cursor: store.cursor, batchId: store.batchId, totals: store.totals };
    },
    async fetchBatch(input) {
      fetches.push(input);
      const fetched = options.source(input, hold);
      const held = fetched.spool ? spool.get(fetched.spool) : undefined;
      if (fetched.ackSource && fetched.spool) unacked.add(fetched.spool);
      calls.push(`fetchBatch(${held ? range(held) : "empty"}${fetched.exhausted ? ", exhausted" : ""})`);
      return { ...fetched, lag: null };
    },
    async takeReadAhead(input) {
      const taken = options.ahead?.(input, hold) ?? null;
      const held = taken?.spool ? spool.get(taken.spool) : undefined;
      const more = (taken?.more ?? []).map((m) => range(spool.get(m.spool)!));
      calls.push(`takeReadAhead(${taken === null ? "none" : [held ? range(held) : "empty", ...more].join(", ")})`);
      return taken === null ? null : { ...taken, lag: null };
    },
    async writeBatches(input) {
      // As the runtime: each batch written then acknowledged; a failure of the first fails the
      // call, a later one ends it with the batches committed so far.
      writeBatchesCalls.push(input.batches.length);
      const written = [];
      let previous = input.previous;
      for (const b of input.batches) {
        try {
          const result = writeOne({ ...b, previous });
          if (input.ack && b.fetched) ackOne(b.fetched);
          written.push(result);
          previous = { cursor: b.cursor, batchId: result.batchId, totals: result.totals };
        } catch (err) {
          if (written.length === 0) throw err;
          break;
        }
      }
      return { written };
    },
  };
  return { activities, calls, fetches, writes, acked, store, writeBatchesCalls };
}

/** A cursor source of `total` records read `batchSize` at a time; its cursor is `{ offset }`. */
function cursorSource(total: number, batchSize: number): MockSource {
  return (input, hold) => {
    const from = offsetOf(input.cursor);
    const to = Math.min(from + batchSize, total);
    const drainStart = input.spec.mode === "available_now" && input.endCursor === undefined;
    return {
      spool: to > from ? hold({ from, to }) : null,
      count: to - from,
      bytes: (to - from) * 100,
      cursor: to > from ? at(to) : input.cursor,
      cursorMoved: to > from,
      exhausted: to >= total,
      ...(drainStart ? { endCursor: at(total) } : {}),
      ackSource: false,
    };
  };
}

/**
 * A queue whose fetches receive `received[n]` messages each (numbered on from 0); a fetch past
 * the list finds nothing. A queue has no cursor: every batch keeps `null`. In available_now an
 * empty receive is the end of the run, as the runtime reports it.
 */
function queueSource(received: number[]): MockSource {
  let next = 0;
  let fetch = 0;
  return (input, hold) => {
    const from = next;
    next += received[fetch++] ?? 0;
    return {
      spool: next > from ? hold({ from, to: next }) : null,
      count: next - from,
      bytes: (next - from) * 100,
      cursor: input.cursor,
      cursorMoved: false,
      exhausted: next === from && input.spec.mode === "available_now",
      ackSource: true,
    };
  };
}

function streamInput(name: string, extra: Partial<StreamWorkflowInput> = {}): StreamWorkflowInput {
  return {
    contract: "orders.yaml",
    source: { type: "mock" },
    mode: "available_now",
    checkpointKey: `mocked::${name}`,
    batchSize: 3,
    ...extra,
  };
}

/** Run one stream to its end on a fresh mock worker; the worker shuts down with the run. */
async function runStream(input: StreamWorkflowInput, options: MockOptions) {
  const taskQueue = `mocked-${randomUUID()}`;
  const mock = mockWorker(taskQueue, options);
  const worker = await Worker.create({
    connection: env!.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: mock.activities,
  });
  const handle = await env!.client.workflow.start<typeof streamWorkflow>("streamWorkflow", {
    taskQueue,
    workflowId: `lakelogic:${input.checkpointKey}`,
    args: [input],
  });
  const result: StreamWorkflowResult = await worker.runUntil(handle.result());
  return { ...mock, result, handle };
}

describe.skipIf(!env)("stream workflow with mocked activities", () => {
  describe("a batch whose worker was lost", () => {
    it("resyncs to the store and refetches the batch when the worker died before committing it", async () => {
      const run = await runStream(streamInput("lost-before-commit"), { source: cursorSource(8, 3), loseSpoolAtWrite: 2 });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        // The worker was asked to read ahead; this one holds nothing, so the fetch goes through the server.
        "takeReadAhead(none)",
        "fetchBatch(3-6)",
        "write(3-6): spool lost",
        // Resync: the store still has batch 1 only, so the same batch is fetched again, through
        // the queue of whichever worker now runs the workflow (never from a read-ahead).
        "openStream(1)",
        "getWorkerQueue",
        "fetchBatch(3-6)",
        "write(3-6)",
        "takeReadAhead(none)",
        "fetchBatch(6-8, exhausted)",
        "write(6-8)",
      ]);
      expect(run.fetches.map((f) => f.cursor)).toEqual([null, at(3), at(3), at(6)]);
      // The drain's end, captured by its first fetch, is kept across the resync.
      expect(run.fetches.map((f) => f.endCursor)).toEqual([undefined, at(8), at(8), at(8)]);
      expect(run.result).toMatchObject({
        batches: 3,
        sourceCount: 8,
        goodCount: 7,
        badCount: 1,
        cursor: { offset: 8 },
        resumedFrom: null,
        stoppedBy: "end",
        totals: { sourceCount: 8, goodCount: 7, badCount: 1 },
      });
      expect(run.store).toMatchObject({ cursor: at(8), batchId: 3 });
    });

    it("takes the store's position when the lost worker had committed the batch, and never writes it twice", async () => {
      const run = await runStream(streamInput("lost-after-commit"), {
        source: cursorSource(8, 3),
        loseSpoolAtWrite: 2,
        lostAfterCommit: true,
      });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        "takeReadAhead(none)",
        "fetchBatch(3-6)",
        "write(3-6): spool lost",
        // The store is a batch ahead of the workflow: it goes on after that batch.
        "openStream(2)",
        "getWorkerQueue",
        "fetchBatch(6-8, exhausted)",
        "write(6-8)",
      ]);
      expect(run.fetches.map((f) => f.cursor)).toEqual([null, at(3), at(6)]);
      // Each write starts from the position the store holds (the mock refuses any other).
      expect(run.writes.map((w) => w.previous.batchId)).toEqual([0, 1, 2]);
      // The batch the lost worker committed counts in this run's result, once.
      expect(run.result).toMatchObject({
        batches: 3,
        sourceCount: 8,
        goodCount: 7,
        badCount: 1,
        cursor: { offset: 8 },
        stoppedBy: "end",
        totals: { sourceCount: 8, goodCount: 7, badCount: 1 },
      });
      expect(run.store).toMatchObject({ cursor: at(8), batchId: 3 });
    });
  });

  describe("batches read ahead on the worker", () => {
    /**
     * The worker's read-ahead as takeReadAhead finds it, call by call: `2` hands over two batches
     * (one and one more), `1` one, `0` none (null).
     */
    function readAhead(source: MockSource, served: number[]): MockOptions["ahead"] {
      let call = 0;
      return (input, hold) => {
        const n = served[call++] ?? 0;
        if (n === 0) return null;
        const first = source(input, hold);
        if (n === 1 || first.exhausted) return first;
        const next = source({ ...input, cursor: first.cursor }, hold);
        return { ...first, more: [{ spool: next.spool!, count: next.count, bytes: next.bytes, cursor: next.cursor, exhausted: next.exhausted }] };
      };
    }

    it("takes them with a local activity, and fetches through the server when the worker holds none", async () => {
      const source = cursorSource(14, 3);
      const run = await runStream(streamInput("local-read-ahead"), { source, ahead: readAhead(source, [2, 0, 1]) });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        "takeReadAhead(3-6, 6-9)",
        "write(3-6)",
        "write(6-9)",
        "takeReadAhead(none)",
        "fetchBatch(9-12)",
        "write(9-12)",
        "takeReadAhead(12-14)",
        "write(12-14)",
      ]);
      // Each fetch, local or not, asks from the committed position, with the drain's end.
      expect(run.fetches.map((f) => f.cursor)).toEqual([null, at(9)]);
      expect(run.writes.map((w) => [w.previous.batchId, w.cursor])).toEqual([
        [0, at(3)],
        [1, at(6)],
        [2, at(9)],
        [3, at(12)],
        [4, at(14)],
      ]);
      // One writeBatches local activity per fetch writes all the batches it handed over.
      expect(run.writeBatchesCalls).toEqual([1, 2, 1, 1]);
      expect(run.result).toMatchObject({ batches: 5, sourceCount: 14, cursor: { offset: 14 }, stoppedBy: "end" });
      expect(run.store).toMatchObject({ cursor: at(14), batchId: 5 });
    });

    it("goes through the server after localFetchesPerRoundTrip local fetches in a row (signals arrive with that workflow task)", async () => {
      const source = cursorSource(15, 3);
      const run = await runStream(streamInput("local-read-ahead-cap", { localFetchesPerRoundTrip: 2 }), {
        source,
        ahead: readAhead(source, [1, 1, 1, 1]),
      });
      expect(run.calls.filter((c) => !c.startsWith("write("))).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "takeReadAhead(3-6)",
        "takeReadAhead(6-9)",
        "fetchBatch(9-12)",
        "takeReadAhead(12-15)",
      ]);
      expect(run.store).toMatchObject({ cursor: at(15), batchId: 5 });
    });

    it("keeps the batches of one writeBatches committed before one that failed, and restarts from that one", async () => {
      const source = cursorSource(12, 3);
      const run = await runStream(streamInput("write-batches-partial"), { source, ahead: readAhead(source, [2, 0]), loseSpoolAtWrite: 3 });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        "takeReadAhead(3-6, 6-9)",
        "write(3-6)",
        // The second batch of the call fails: the call returns the first, committed; the next call
        // starts with the failed one, whose failure then fails it (a lost worker here: resync).
        "write(6-9): spool lost",
        "write(6-9): spool gone",
        "openStream(2)",
        "getWorkerQueue",
        "fetchBatch(6-9)",
        "write(6-9)",
        "takeReadAhead(none)",
        "fetchBatch(9-12, exhausted)",
        "write(9-12)",
      ]);
      expect(run.writeBatchesCalls).toEqual([1, 2, 1, 1, 1]);
      expect(run.writes.filter((w) => w.fetched !== null).map((w) => w.previous.batchId)).toEqual([0, 1, 2, 2, 2, 3]);
      expect(run.result).toMatchObject({ batches: 4, sourceCount: 12, cursor: { offset: 12 }, stoppedBy: "end" });
      expect(run.store).toMatchObject({ cursor: at(12), batchId: 4 });
    });

    it("after a batch taken locally is lost with its worker, refetches it through the server", async () => {
      const source = cursorSource(8, 3);
      const run = await runStream(streamInput("local-read-ahead-lost"), { source, ahead: readAhead(source, [1, 1]), loseSpoolAtWrite: 2 });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        "takeReadAhead(3-6)",
        "write(3-6): spool lost",
        "openStream(1)",
        "getWorkerQueue",
        "fetchBatch(3-6)",
        "write(3-6)",
        "takeReadAhead(6-8)",
        "write(6-8)",
      ]);
      expect(run.store).toMatchObject({ cursor: at(8), batchId: 3 });
    });
  });

  describe("a queue (ack) source", () => {
    /** Every ack right after the write of the same batch; one per written batch. */
    function expectAckAfterEachWrite(run: Awaited<ReturnType<typeof runStream>>) {
      const written = run.calls.filter((c) => c.startsWith("write("));
      const acks = run.calls.filter((c) => c.startsWith("ack("));
      expect(acks).toEqual(written.map((w) => w.replace("write", "ack")));
      run.calls.forEach((c, i) => {
        if (c.startsWith("ack(")) expect(run.calls[i - 1]).toBe(c.replace("ack", "write"));
      });
    }

    it("available_now: acknowledges each batch after its commit and ends at the first empty receive", async () => {
      const run = await runStream(streamInput("queue-drain", { source: { type: "mock-queue" } }), {
        source: queueSource([3, 2]),
      });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        "ack(0-3)",
        "fetchBatch(3-5)",
        "write(3-5)",
        "ack(3-5)",
        "fetchBatch(empty, exhausted)",
      ]);
      expectAckAfterEachWrite(run);
      expect(run.acked).toEqual([0, 1, 2, 3, 4]);
      // A queue has no cursor: every fetch and write goes on from null.
      expect(run.fetches.map((f) => f.cursor)).toEqual([null, null, null]);
      expect(run.writes.map((w) => w.cursor)).toEqual([null, null]);
      expect(run.result).toMatchObject({ batches: 2, sourceCount: 5, goodCount: 4, badCount: 1, cursor: null, stoppedBy: "end" });
    });

    it("continuous: an empty (idle) fetch writes and acknowledges nothing", async () => {
      const run = await runStream(streamInput("queue-idle", { source: { type: "mock-queue" }, mode: "continuous", maxBatches: 2 }), {
        source: queueSource([3, 0, 0, 4]),
      });
      expect(run.calls).toEqual([
        "openStream(0)",
        "getWorkerQueue",
        "fetchBatch(0-3)",
        "write(0-3)",
        "ack(0-3)",
        "fetchBatch(empty)",
        "fetchBatch(empty)",
        "fetchBatch(3-7)",
        "write(3-7)",
        "ack(3-7)",
      ]);
      expectAckAfterEachWrite(run);
      expect(run.acked).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(run.result).toMatchObject({ batches: 2, sourceCount: 7, goodCount: 6, badCount: 1, cursor: null, stoppedBy: "max-batches" });
    });
  });
});
