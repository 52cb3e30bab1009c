import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { decodeCursor } from "../../src/checkpoint/codec.js";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { registerSource } from "../../src/sources/registry.js";
import { SpoolMissingError } from "../../src/temporal/spool.js";
import { StreamRuntime, type StreamRuntimeOptions } from "../../src/temporal/stream-runtime.js";
import type { FetchBatchInput, FetchBatchResult, StreamSpec } from "../../workflows/types.js";
import type { SourceRecord } from "../../src/sources/core/types.js";
import type { PipelineBatch } from "../../src/pipeline/batch.js";
import { ORDERS_CONTRACT, writeFetched, writeOrders } from "./support.js";
import { MemoryQueue } from "../support/memory-queue.js";

/**
 * The worker side of a stream, without a server: fetchBatch's read-ahead. After a fetch that the
 * workflow marks `readAhead`, the worker collects (and validates) the next batch at once; the next
 * fetch takes it only if it asks for the cursor where it starts, and any other cursor (a batch
 * restarted from the checkpoint, a stream resumed elsewhere) seeks the source afresh.
 *
 * No outcome here hangs on how fast the machine is: batches are cut by their record count or the
 * end of the file (the batch timer and the idle wait are far beyond any run), and a test that
 * needs the read-ahead in some state waits for that state rather than for a time.
 */
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const runtimes: StreamRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

/** Longer than any test runs: a batch is never cut by time unless a test asks for it. */
const NEVER_MS = 120_000;

function setup(
  records: number,
  mode: StreamSpec["mode"] = "available_now",
  overrides: Partial<StreamSpec> = {},
  runtimeOptions: StreamRuntimeOptions = { takeReadAheadWaitMs: NEVER_MS },
) {
  const dir = mkdtempSync(join(tmpdir(), "ll-runtime-"));
  dirs.push(dir);
  const events = join(dir, "events.ndjson");
  writeOrders(events, 0, records);
  const spec: StreamSpec = {
    contract: ORDERS_CONTRACT,
    source: { type: "file", path: events },
    mode,
    checkpointKey: "k",
    batchSize: 1000,
    maxWaitMs: NEVER_MS,
    targetPath: join(dir, "lake"),
    ...overrides,
  };
  const runtime = new StreamRuntime(runtimeOptions);
  runtimes.push(runtime);
  const never = new AbortController().signal;
  let endCursor: string | null | undefined;
  const fetch = async (cursor: string | null, extra: Partial<FetchBatchInput> = {}): Promise<FetchBatchResult> => {
    const r = await runtime.fetchBatch({ spec, key: "k", cursor, batchId: 0, endCursor, idleMs: NEVER_MS, ...extra }, never);
    if (r.endCursor !== undefined) endCursor = r.endCursor;
    return r;
  };
  /** Source line numbers of a fetched batch, as the spool holds them. */
  /** takeReadAhead, the fetch a workflow tries first as a local activity. */
  const take = (cursor: string | null, extra: Partial<FetchBatchInput> = {}): Promise<FetchBatchResult | null> =>
    runtime.takeReadAhead({ spec, key: "k", cursor, batchId: 0, endCursor, idleMs: NEVER_MS, ...extra });
  const lines = (r: FetchBatchResult): number[] =>
    r.spool ? runtime.spool.get<{ records: SourceRecord[] }>(r.spool).records.map((x) => (x.position as { line: number }).line) : [];
  return { dir, events, spec, runtime, fetch, take, lines };
}

/** Wait (however long it takes: the test's timeout bounds it) until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 10));
}

/** Wait until the read-ahead of stream "k" has stopped collecting (it holds what it may). */
async function aheadSettled(runtime: StreamRuntime): Promise<{ held: number; collecting: boolean }> {
  await until(() => !runtime.readAheadOf("k").collecting);
  return runtime.readAheadOf("k");
}
const linesOf = (runtime: StreamRuntime, spool: string): number[] =>
  runtime.spool.get<{ records: SourceRecord[] }>(spool).records.map((x) => (x.position as { line: number }).line);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i + 1);
const lineOf = (cursor: string | null) => (cursor === null ? 0 : (decodeCursor(cursor) as { line: number }).line);

describe("StreamRuntime read-ahead", () => {
  it("hands the batch read ahead to the fetch that continues from it, in order, nothing lost or repeated", async () => {
    const { fetch, lines } = setup(3500);
    const seen: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const r = await fetch(cursor, { readAhead: true });
      seen.push(...lines(r));
      cursor = r.cursor;
      if (r.exhausted) break;
    }
    expect(seen).toEqual(range(0, 3500));
    expect(lineOf(cursor)).toBe(3500);
  });

  it("drops the read-ahead and seeks when the workflow asks for another cursor (batch restarted from the checkpoint)", async () => {
    const { fetch, lines, runtime } = setup(3000);
    const first = await fetch(null, { readAhead: true });
    const second = await fetch(first.cursor, { readAhead: true });
    expect(lines(second)).toEqual(range(1000, 2000));
    // Batch 2 was not committed (say its worker's write failed): the workflow fetches it again
    // from the committed cursor, while the worker holds batch 3 read ahead.
    expect(runtime.hasReadAhead("k")).toBe(true);
    const again = await fetch(first.cursor, { readAhead: false });
    expect(runtime.hasReadAhead("k")).toBe(false);
    expect(lines(again)).toEqual(range(1000, 2000));
    expect(lineOf(again.cursor)).toBe(2000);
    // And from the very start, as after a resync to an empty checkpoint.
    const fromStart = await fetch(null, { readAhead: false });
    expect(lines(fromStart)).toEqual(range(0, 1000));
    const rest = await fetch(fromStart.cursor);
    expect(lines(rest)).toEqual(range(1000, 2000));
  });

  it("reads nothing ahead unless the workflow asks, nor after the end", async () => {
    const { fetch, lines, runtime } = setup(2500);
    const first = await fetch(null, { readAhead: false });
    expect(runtime.hasReadAhead("k")).toBe(false);
    const second = await fetch(first.cursor, { readAhead: true });
    expect(runtime.hasReadAhead("k")).toBe(true);
    const last = await fetch(second.cursor, { readAhead: true });
    expect(lines(last)).toEqual(range(2000, 2500));
    expect(last.exhausted).toBe(true);
    expect(runtime.hasReadAhead("k")).toBe(false);
  });

  it("lets a fetch wait afresh when the read-ahead found nothing in time (a quiet continuous source)", async () => {
    // Batches of 200, so each is cut by its count whenever its records come.
    const { fetch, lines, events, runtime } = setup(200, "continuous", { batchSize: 200 });
    const first = await fetch(null, { readAhead: true, idleMs: 300 });
    expect(lines(first)).toEqual(range(0, 200));
    // The read-ahead idles out with nothing to read before the next fetch comes: it holds one
    // empty batch.
    expect(await aheadSettled(runtime)).toEqual({ held: 1, collecting: false });
    const pending = fetch(first.cursor, { readAhead: true });
    // The fetch took the empty batch; it must wait afresh rather than return it.
    await until(() => !runtime.hasReadAhead("k"));
    writeOrders(events, 200, 400, true);
    const second = await pending;
    expect(lines(second)).toEqual(range(200, 400));
    expect(lineOf(second.cursor)).toBe(400);
  });

  it("hands over, with a fetch's first batch, the batches already read ahead (up to maxBatches), each with its own cursor", async () => {
    const { fetch, lines, runtime } = setup(7500);
    const first = await fetch(null, { readAhead: true, maxBatches: 4 });
    expect(first.more).toBeUndefined(); // nothing was read ahead yet
    // Give the worker time to read ahead as far as it may (4 batches), as it does while the
    // workflow writes.
    expect(await aheadSettled(runtime)).toEqual({ held: 4, collecting: false });
    const second = await fetch(first.cursor, { readAhead: true, maxBatches: 4 });
    expect(lines(second)).toEqual(range(1000, 2000));
    expect(second.more?.map((m) => [m.count, lineOf(m.cursor), m.exhausted])).toEqual([
      [1000, 3000, false],
      [1000, 4000, false],
      [1000, 5000, false],
    ]);
    expect(second.more!.map((m) => linesOf(runtime, m.spool)[0])).toEqual([2001, 3001, 4001]);
    // Validation of each was started when it was read: the write finds it.
    const v = await runtime.spool.get<PipelineBatch>(second.more![2]!.spool).validated();
    expect(v.sourceCount).toBe(1000);
    // The next fetch continues after the last batch handed over, to the end.
    const seen = [...lines(first), ...lines(second), ...second.more!.flatMap((m) => linesOf(runtime, m.spool))];
    let cursor = second.more!.at(-1)!.cursor;
    for (let i = 0; i < 10; i++) {
      const r = await fetch(cursor, { readAhead: true, maxBatches: 4 });
      seen.push(...lines(r), ...(r.more ?? []).flatMap((m) => linesOf(runtime, m.spool)));
      const last = r.more?.at(-1) ?? r;
      cursor = last.cursor;
      if (last.exhausted) break;
    }
    expect(seen).toEqual(range(0, 7500));
    expect(lineOf(cursor)).toBe(7500);
    expect(runtime.hasReadAhead("k")).toBe(false);
  });

  it("without maxBatches hands over one batch (processing_time, batchesPerFetch 1)", async () => {
    const { fetch, runtime } = setup(5000);
    const first = await fetch(null, { readAhead: true });
    expect(await aheadSettled(runtime)).toEqual({ held: 1, collecting: false });
    const second = await fetch(first.cursor, { readAhead: true });
    expect(second.more).toBeUndefined();
    expect(lineOf(second.cursor)).toBe(2000);
  });

  it("closes with a read-ahead still held (a stream stopped or paused after its last fetch)", async () => {
    const { fetch, runtime } = setup(3000);
    await fetch(null, { readAhead: true });
    await runtime.close();
    runtimes.splice(runtimes.indexOf(runtime), 1);
  });
});

describe("StreamRuntime.takeReadAhead (a fetch served by the worker's read-ahead, as a local activity)", () => {
  it("hands over the batches read ahead from the cursor they continue, and keeps reading ahead: every line once, in order", async () => {
    const { fetch, take, lines, runtime } = setup(7500);
    const first = await fetch(null, { readAhead: true, maxBatches: 4 });
    const seen = lines(first);
    let cursor = first.cursor;
    let taken = 0;
    for (let i = 0; i < 10; i++) {
      const r = await take(cursor, { readAhead: true, maxBatches: 4 });
      // The take waits for a batch being collected (here without a bound): never a round trip through the server.
      expect(r).not.toBeNull();
      taken++;
      seen.push(...lines(r!), ...(r!.more ?? []).flatMap((m) => linesOf(runtime, m.spool)));
      const last = r!.more?.at(-1) ?? r!;
      cursor = last.cursor;
      if (last.exhausted) break;
    }
    expect(seen).toEqual(range(0, 7500));
    expect(lineOf(cursor)).toBe(7500);
    expect(taken).toBeGreaterThan(1);
    expect(runtime.hasReadAhead("k")).toBe(false);
  });

  it("is null when this worker holds nothing for the stream at that cursor; the fetch through the server then serves it", async () => {
    const { fetch, take, lines, runtime } = setup(3000);
    // No pipeline for the stream on this worker (the workflow moved here from another one).
    expect(await take(null, { readAhead: true })).toBeNull();
    const first = await fetch(null, { readAhead: false });
    // Nothing read ahead: the previous fetch did not ask for it.
    expect(await take(first.cursor, { readAhead: true })).toBeNull();
    const second = await fetch(first.cursor, { readAhead: true });
    expect(runtime.hasReadAhead("k")).toBe(true);
    // A cursor the read-ahead does not continue (a batch restarted from the checkpoint): null,
    // and the read-ahead is left for the fetch through the server to drop.
    expect(await take(first.cursor, { readAhead: true })).toBeNull();
    const again = await fetch(first.cursor, { readAhead: true });
    expect(lines(again)).toEqual(lines(second));
    expect(lineOf(again.cursor)).toBe(2000);
  });

  it("is null when nothing came for the batch being read ahead (a quiet continuous source), and no record is lost", async () => {
    const { fetch, take, lines, events, runtime } = setup(200, "continuous", { batchSize: 200 }, { takeReadAheadWaitMs: 50 });
    const first = await fetch(null, { readAhead: true });
    expect(runtime.readAheadOf("k")).toEqual({ held: 0, collecting: true });
    // The read-ahead waits for records that are not written yet: the take gives up after its
    // wait (50 ms here) rather than keep the workflow task open.
    expect(await take(first.cursor, { readAhead: true })).toBeNull();
    writeOrders(events, 200, 400, true);
    const second = await fetch(first.cursor, { readAhead: true });
    expect(lines(second)).toEqual(range(200, 400));
  });
});

describe("StreamRuntime.writeBatches (the batches of one fetch in one local activity)", () => {
  const ZERO = { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 };

  it("writes and commits each batch in order, each on its own, and reports each commit", async () => {
    const committed: Array<[string, number, number]> = [];
    const { fetch, spec, runtime } = setup(5000, "available_now", {}, { onCommitted: (key, r) => committed.push([key, r.batchId, r.batch.sourceCount]) });
    const first = await fetch(null, { readAhead: true, maxBatches: 4 });
    await aheadSettled(runtime);
    const second = await fetch(first.cursor, { readAhead: true, maxBatches: 4 });
    const handed = [first, second, ...second.more!].map((b) => ({ fetched: b.spool, cursor: b.cursor }));
    expect(handed).toHaveLength(5);
    const { written } = await runtime.writeBatches({ spec, key: "k", writerId: "w", previous: { cursor: null, batchId: 0, totals: ZERO }, batches: handed, ack: false });
    expect(written.map((w) => [w.batchId, w.batch.sourceCount, w.totals.sourceCount, w.outcome])).toEqual([
      [1, 1000, 1000, "committed"],
      [2, 1000, 2000, "committed"],
      [3, 1000, 3000, "committed"],
      [4, 1000, 4000, "committed"],
      [5, 1000, 5000, "committed"],
    ]);
    expect(committed).toEqual(written.map((w) => ["k", w.batchId, 1000]));
    // The checkpoint store holds the last, as the workflow's resync would read it.
    const stored = await runtime.openStream(spec);
    expect([stored.batchId, lineOf(stored.cursor), stored.totals.sourceCount]).toEqual([5, 5000, 5000]);
  });

  it("returns the batches committed before one that failed; fails when the first fails", async () => {
    const { fetch, spec, runtime } = setup(3000);
    const first = await fetch(null, { readAhead: false });
    const second = await fetch(first.cursor, { readAhead: false });
    const previous = { cursor: null, batchId: 0, totals: ZERO };
    const partial = await runtime.writeBatches({
      spec,
      key: "k",
      writerId: "w",
      previous,
      batches: [
        { fetched: first.spool, cursor: first.cursor },
        { fetched: "fetched-not-on-this-worker", cursor: second.cursor },
      ],
      ack: false,
    });
    expect(partial.written.map((w) => w.batchId)).toEqual([1]);
    await expect(
      runtime.writeBatches({ spec, key: "k", writerId: "w", previous: { cursor: first.cursor, batchId: 1, totals: partial.written[0]!.totals }, batches: [{ fetched: "fetched-not-on-this-worker", cursor: second.cursor }], ack: false }),
    ).rejects.toBeInstanceOf(SpoolMissingError);
    const rest = await runtime.writeBatches({ spec, key: "k", writerId: "w", previous: { cursor: first.cursor, batchId: 1, totals: partial.written[0]!.totals }, batches: [{ fetched: second.spool, cursor: second.cursor }], ack: false });
    expect(rest.written.map((w) => [w.batchId, w.totals.sourceCount])).toEqual([[2, 2000]]);
  });
});

describe("StreamRuntime source cache", () => {
  it("gives each available_now drain its own end snapshot, on the worker that ran the last one (I7)", async () => {
    const { lines, events, spec, runtime } = setup(1500);
    /** One drain as the workflow runs it: from the store's cursor, capturing a new end first. */
    const drain = async () => {
      const open = await runtime.openStream(spec);
      let previous = { cursor: open.cursor, batchId: open.batchId, totals: open.totals };
      let endCursor: string | null | undefined;
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) {
        const input = { spec, key: "k", cursor: previous.cursor, batchId: previous.batchId, endCursor, idleMs: NEVER_MS, readAhead: true };
        const r = await runtime.fetchBatch(input, new AbortController().signal);
        if (r.endCursor !== undefined) endCursor = r.endCursor;
        seen.push(...lines(r));
        if (r.count > 0 || r.cursorMoved) {
          const w = await writeFetched(runtime, { spec, key: "k", writerId: "w", previous }, r);
          previous = { cursor: r.cursor, batchId: w.batchId, totals: w.totals };
        }
        if (r.exhausted) break;
      }
      return seen;
    };
    expect(await drain()).toEqual(range(0, 1500));
    writeOrders(events, 1500, 1700, true);
    expect(await drain()).toEqual(range(1500, 1700));
    expect(await drain()).toEqual([]);
  });

  it("opens the source again when the stream comes back in another mode", async () => {
    const { fetch, lines, events, spec, runtime } = setup(1000, "continuous");
    const first = await fetch(null, { readAhead: true });
    expect(lines(first)).toEqual(range(0, 1000));
    writeOrders(events, 1000, 1200, true);
    const drain = await runtime.fetchBatch(
      { spec: { ...spec, mode: "available_now" }, key: "k", cursor: first.cursor, batchId: 1, idleMs: NEVER_MS },
      new AbortController().signal,
    );
    expect(lines(drain)).toEqual(range(1000, 1200));
    expect(drain.exhausted).toBe(true);
  });
});

const queues: MemoryQueue[] = [];
registerSource({
  spec: { type: "test-memory-queue", kind: "ack", summary: "test only", options: {} },
  create: () => queues[queues.length - 1]!,
});

describe("StreamRuntime with a queue (ack source)", () => {
  it("hands a failed batch's messages back at once (nack), as StreamSink does, and the retry refetches instead of writing the spooled copy", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ll-runtime-queue-"));
    dirs.push(dir);
    const queue = new MemoryQueue(Array.from({ length: 10 }, (_, i) => ({ order_id: i + 1, amount: 1, currency: "EUR", status: "new", created_at: "2026-01-01T00:00:00Z" })));
    queues.push(queue);
    const checkpoint = join(dir, "checkpoints.sqlite");
    // A rival writer already committed batch 1 on this key: the write is refused (I3).
    const rival = new SQLiteCheckpointStore(checkpoint);
    const zero = { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 };
    await rival.commit({ key: "q", cursor: null, batchId: 1, committedAt: new Date(), batch: zero, totals: zero, writerId: "rival" });
    await rival.close();
    const spec: StreamSpec = { contract: ORDERS_CONTRACT, source: { type: "test-memory-queue" }, mode: "available_now", checkpointKey: "q", batchSize: 100, maxWaitMs: 50, targetPath: join(dir, "lake"), checkpoint };
    const runtime = new StreamRuntime();
    runtimes.push(runtime);
    const fetched = await runtime.fetchBatch({ spec, key: "q", cursor: null, batchId: 0, idleMs: 300 }, new AbortController().signal);
    expect(fetched.count).toBe(10);
    const write = () => writeFetched(runtime, { spec, key: "q", writerId: "w", previous: { cursor: null, batchId: 0, totals: zero } }, fetched);
    await expect(write()).rejects.toBeInstanceOf(CheckpointConflictError);
    expect(queue.nacked).toHaveLength(10);
    expect(queue.acked).toEqual([]);
    await expect(write()).rejects.toBeInstanceOf(SpoolMissingError);
  });

  it("writeBatches acknowledges a batch's messages after its commit (I8)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ll-runtime-queue-"));
    dirs.push(dir);
    const queue = new MemoryQueue(Array.from({ length: 10 }, (_, i) => ({ order_id: i + 1, amount: 1, currency: "EUR", status: "new", created_at: "2026-01-01T00:00:00Z" })));
    queues.push(queue);
    const spec: StreamSpec = { contract: ORDERS_CONTRACT, source: { type: "test-memory-queue" }, mode: "available_now", checkpointKey: "q", batchSize: 100, maxWaitMs: 50, targetPath: join(dir, "lake"), checkpoint: join(dir, "checkpoints.sqlite") };
    const runtime = new StreamRuntime();
    runtimes.push(runtime);
    const fetched = await runtime.fetchBatch({ spec, key: "q", cursor: null, batchId: 0, idleMs: 300 }, new AbortController().signal);
    const zero = { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 };
    const { written } = await runtime.writeBatches({ spec, key: "q", writerId: "w", previous: { cursor: null, batchId: 0, totals: zero }, batches: [{ fetched: fetched.spool, cursor: fetched.cursor }], ack: true });
    expect(written.map((w) => [w.batchId, w.batch.sourceCount])).toEqual([[1, 10]]);
    expect(queue.acked).toHaveLength(10);
    expect(queue.nacked).toEqual([]);
    // Acknowledged, the batch left the spool.
    expect(runtime.spool.peek(fetched.spool!)).toBeUndefined();
  });
});
