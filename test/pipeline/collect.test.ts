import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BatchCollector, recordBytes } from "../../src/pipeline/collect.js";
import { BatchGrowth } from "../../src/pipeline/growth.js";
import type { SourceRecord } from "../../src/sources/core/types.js";

/** A source whose records arrive when the test pushes them: a quiet stream on demand. */
function pushSource() {
  const queue: SourceRecord[] = [];
  // Every waiting read is woken, the earliest first, so a read the collector dropped would take
  // a record away from the next one.
  let waiting: Array<() => void> = [];
  const wake = () => {
    const w = waiting;
    waiting = [];
    for (const resolve of w) resolve();
  };
  let ended = false;
  let produced = 0;
  const iterator: AsyncIterator<SourceRecord> = {
    async next() {
      while (queue.length === 0 && !ended) await new Promise<void>((r) => waiting.push(r));
      const value = queue.shift();
      if (value === undefined) return { done: true, value: undefined };
      produced++;
      return { done: false, value };
    },
  };
  return {
    iterator,
    cursor: () => produced,
    push(...values: unknown[]) {
      for (const value of values) queue.push({ value });
      wake();
    },
    end() {
      ended = true;
      wake();
    },
  };
}

const never = new AbortController().signal;

/** A promise whose settling the test can look at without awaiting it. */
function watch<T>(promise: Promise<T>): { promise: Promise<T>; readonly settled: boolean } {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return {
    promise,
    get settled() {
      return settled;
    },
  };
}

// The timers are driven by vitest's fake clock: a busy machine cannot move a cut.
afterEach(() => {
  vi.useRealTimers();
});

describe("BatchCollector", () => {
  it("cuts by record count", async () => {
    const src = pushSource();
    src.push(1, 2, 3, 4, 5);
    const c = new BatchCollector(src.iterator, src.cursor);
    const b = await c.next({ maxRecords: 2, maxBytes: 1e9, maxWaitMs: 60_000 }, never);
    expect(b.records.map((r) => r.value)).toEqual([1, 2]);
    expect(b.cut).toBe("records");
    expect(b.cursor).toBe(2);
  });

  it("cuts by bytes before the record that would pass them, which starts the next batch with its cursor", async () => {
    const src = pushSource();
    src.push("a".repeat(100), "b".repeat(40), "c".repeat(100), "d", "e".repeat(300));
    const c = new BatchCollector(src.iterator, src.cursor);
    const limits = { maxRecords: 100, maxBytes: 150, maxWaitMs: 60_000 };
    const first = await c.next(limits, never);
    expect(first.records.map((r) => String(r.value)[0])).toEqual(["a", "b"]);
    expect(first).toMatchObject({ cut: "bytes", bytes: 144, cursor: 2 });
    const second = await c.next(limits, never);
    expect(second.records.map((r) => String(r.value)[0])).toEqual(["c", "d"]);
    expect(second).toMatchObject({ cut: "bytes", bytes: 105, cursor: 4 });
    // A record larger than the budget is a batch of its own.
    src.end();
    const third = await c.next(limits, never);
    expect(third.records.map((r) => String(r.value)[0])).toEqual(["e"]);
    expect(third.cursor).toBe(5);
  });

  it("flushes a quiet stream on its timer, and the pending read carries into the next batch", async () => {
    vi.useFakeTimers();
    const src = pushSource();
    src.push("first");
    const c = new BatchCollector(src.iterator, src.cursor);
    const first = watch(c.next({ maxRecords: 100, maxBytes: 1e9, maxWaitMs: 50 }, never));
    await vi.advanceTimersByTimeAsync(49);
    expect(first.settled).toBe(false); // still waiting for more within maxWaitMs
    await vi.advanceTimersByTimeAsync(1);
    const b1 = await first.promise;
    expect(b1.records.map((r) => r.value)).toEqual(["first"]);
    expect(b1.cut).toBe("time");
    expect(b1.cursor).toBe(1);
    // The next() issued while waiting is still pending; the record it gets must not be lost.
    const second = c.next({ maxRecords: 1, maxBytes: 1e9, maxWaitMs: 50, maxIdleMs: 1000 }, never);
    await vi.advanceTimersByTimeAsync(20);
    src.push("second");
    await vi.advanceTimersByTimeAsync(1000); // had the record gone astray, the batch would idle out empty
    const b2 = await second;
    expect(b2.records.map((r) => r.value)).toEqual(["second"]);
  });

  it("returns what it has when stopped, and reports the end of the source", async () => {
    const src = pushSource();
    src.push(1);
    const c = new BatchCollector(src.iterator, src.cursor);
    const stop = new AbortController();
    vi.useFakeTimers();
    const batch = watch(c.next({ maxRecords: 100, maxBytes: 1e9, maxWaitMs: 60_000 }, stop.signal));
    await vi.advanceTimersByTimeAsync(30);
    expect(batch.settled).toBe(false);
    stop.abort();
    const b = await batch.promise;
    expect(b.cut).toBe("stop");
    expect(b.records).toHaveLength(1);
    src.end();
    const e = await c.next({ maxRecords: 100, maxBytes: 1e9, maxWaitMs: 60_000 }, never);
    expect(e).toMatchObject({ records: [], exhausted: true, cut: "end" });
  });

  it("samples the cursor per record, not at cut time, so a read-ahead cannot leak into the commit", async () => {
    vi.useFakeTimers();
    let fetched = 0;
    const iterator: AsyncIterator<SourceRecord> = {
      async next() {
        fetched++; // the source advances its own position before the record is handed over
        await new Promise((r) => setTimeout(r, fetched === 1 ? 0 : 200));
        return { done: false, value: { value: fetched } };
      },
    };
    const c = new BatchCollector(iterator, () => fetched);
    const batch = c.next({ maxRecords: 10, maxBytes: 1e9, maxWaitMs: 30 }, never);
    await vi.advanceTimersByTimeAsync(30); // cut while the second read is under way
    const b = await batch;
    expect(fetched).toBe(2);
    expect(b.records).toHaveLength(1);
    expect(b.cut).toBe("time");
    expect(b.cursor).toBe(1);
  });

  it("gives up on a first record after maxIdleMs, and the idle wait does not cut a batch that started", async () => {
    vi.useFakeTimers();
    const src = pushSource();
    const c = new BatchCollector(src.iterator, src.cursor);
    const idle = watch(c.next({ maxRecords: 10, maxBytes: 1e9, maxWaitMs: 60_000, maxIdleMs: 30 }, never));
    await vi.advanceTimersByTimeAsync(29);
    expect(idle.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await idle.promise).toMatchObject({ records: [], cut: "idle" });
    // The first record arrives before the idle limit: from then on only maxWaitMs counts.
    const batch = watch(c.next({ maxRecords: 2, maxBytes: 1e9, maxWaitMs: 500, maxIdleMs: 40 }, never));
    await vi.advanceTimersByTimeAsync(10);
    src.push("a");
    await vi.advanceTimersByTimeAsync(50); // well past the idle limit, within maxWaitMs
    expect(batch.settled).toBe(false);
    src.push("b");
    const b = await batch.promise;
    expect(b.records.map((r) => r.value)).toEqual(["a", "b"]);
    expect(b.cut).toBe("records");
  });

  it("takes the records a source has at hand before its timer can cut, then cuts at the first wait", async () => {
    const src = pushSource();
    src.push(1, 2, 3, 4, 5);
    const c = new BatchCollector(src.iterator, src.cursor);
    const b = await c.next({ maxRecords: 100, maxBytes: 1e9, maxWaitMs: 0 }, never);
    expect(b.records.map((r) => r.value)).toEqual([1, 2, 3, 4, 5]);
    expect(b.cut).toBe("time");
  });

  it("lets the event loop run every yieldEvery records, while still taking every record at hand", async () => {
    const values = Array.from({ length: 1000 }, (_, i) => i);
    const turns = async (yieldEvery?: number) => {
      const src = pushSource();
      src.push(...values);
      const c = new BatchCollector(src.iterator, src.cursor);
      let ran = 0;
      const tick = () => {
        ran++;
        if (!done) setImmediate(tick);
      };
      let done = false;
      setImmediate(tick);
      const b = await c.next({ maxRecords: 1000, maxBytes: 1e9, maxWaitMs: 60_000, yieldEvery }, never);
      done = true;
      expect(b.records.map((r) => r.value)).toEqual(values);
      expect(b.cursor).toBe(1000);
      return ran;
    };
    // Records at hand are taken in one run of microtasks: nothing else gets a turn meanwhile.
    expect(await turns()).toBe(0);
    expect(await turns(100)).toBeGreaterThanOrEqual(9);
  });

  it("takes the records a source has at hand synchronously; a read left pending by a time cut comes first next batch", async () => {
    // A source whose records come in chunks: next() reads a chunk, takeBuffered() hands out the rest.
    const chunks = [[1, 2, 3], [4, 5], [6, 7, 8, 9]];
    let buffer: number[] = [];
    let taken = 0;
    let nextCalls = 0;
    let release: (() => void) | undefined;
    const iterator = {
      takeBuffered: () => {
        const v = buffer.shift();
        if (v === undefined) return undefined;
        taken++;
        return { value: v };
      },
      async next(): Promise<IteratorResult<SourceRecord>> {
        nextCalls++;
        if (buffer.length === 0) {
          const chunk = chunks.shift();
          if (!chunk) return { done: true, value: undefined };
          if (nextCalls === 3) await new Promise<void>((r) => (release = r)); // a slow read
          buffer = chunk;
        }
        taken++;
        return { done: false, value: { value: buffer.shift() } };
      },
    };
    const c = new BatchCollector(iterator, () => taken);
    const b1 = await c.next({ maxRecords: 4, maxBytes: 1e9, maxWaitMs: 60_000 }, never);
    expect(b1.records.map((r) => r.value)).toEqual([1, 2, 3, 4]);
    expect(b1.cursor).toBe(4);
    expect(nextCalls).toBe(2); // 1 and 4 by next(), 2 and 3 at hand
    // The third chunk's read is slow: the batch is cut by time while it is pending, and the next
    // batch must take that read's record first, then the rest of its chunk at hand.
    vi.useFakeTimers();
    const second = c.next({ maxRecords: 10, maxBytes: 1e9, maxWaitMs: 30 }, never);
    await vi.advanceTimersByTimeAsync(30);
    const b2 = await second;
    vi.useRealTimers();
    expect(b2.records.map((r) => r.value)).toEqual([5]);
    expect(b2.cut).toBe("time");
    release?.();
    const b3 = await c.next({ maxRecords: 10, maxBytes: 1e9, maxWaitMs: 60_000 }, never);
    expect(b3.records.map((r) => r.value)).toEqual([6, 7, 8, 9]);
    expect(b3.exhausted).toBe(true);
    expect(b3.cursor).toBe(9);
  });

  it("ends a batch before a record that follows a delete, and starts the next with it and its cursor", async () => {
    // u = a row, d = a delete: the batches are u u d d | u d | u, each with its deletes last.
    const kinds = ["u", "u", "d", "d", "u", "d", "u"];
    const records: SourceRecord[] = kinds.map((k, i) => (k === "d" ? { value: undefined, delete: { key: Buffer.from(String(i)) } } : { value: { i } }));
    let produced = 0;
    const iterator: AsyncIterator<SourceRecord> = {
      async next() {
        const value = records[produced];
        if (value === undefined) return { done: true, value: undefined };
        produced++;
        return { done: false, value };
      },
    };
    const c = new BatchCollector(iterator, () => produced);
    const limits = { maxRecords: 100, maxBytes: 1e9, maxWaitMs: 60_000 };
    const batches = [await c.next(limits, never), await c.next(limits, never), await c.next(limits, never)];
    expect(batches.map((b) => b.records.map((r) => (r.delete ? "d" : "u")).join(""))).toEqual(["uudd", "ud", "u"]);
    expect(batches.map((b) => b.cut)).toEqual(["deletes", "deletes", "end"]);
    // Each cursor stops just after the batch's own last record: the held one is not in it.
    expect(batches.map((b) => b.cursor)).toEqual([4, 6, 7]);
  });

  it("leaves no listener on the stop signal behind", async () => {
    const src = pushSource();
    const stop = new AbortController();
    const c = new BatchCollector(src.iterator, src.cursor);
    for (let i = 0; i < 5; i++) {
      src.push(i, i);
      await c.next({ maxRecords: 2, maxBytes: 1e9, maxWaitMs: 60_000 }, stop.signal);
    }
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });

  it("estimates bytes from raw payloads first", () => {
    expect(recordBytes({ value: {}, raw: "abcd" })).toBe(4);
    expect(recordBytes({ value: {}, raw: new Uint8Array(7) })).toBe(7);
    expect(recordBytes({ value: { a: "xy" } })).toBeGreaterThan(4);
  });
});

describe("BatchCollector with BatchGrowth", () => {
  const limits = { maxRecords: 10, growTo: 80, maxBytes: 1e9, maxWaitMs: 50 };
  const sizes = async (c: BatchCollector, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await c.next(limits, never)).records.length);
    return out;
  };

  it("doubles a batch while the source reports a base batch more waiting, up to growTo, and shrinks to the base at the head", async () => {
    vi.useFakeTimers();
    const src = pushSource();
    const waiting = () => ({ records: pushed - src.cursor() });
    let pushed = 0;
    const push = (n: number) => {
      src.push(...Array.from({ length: n }, (_, i) => pushed + i));
      pushed += n;
    };
    const c = new BatchCollector(src.iterator, src.cursor, BatchGrowth.of(limits, waiting));
    push(300);
    // 10, 20, 40, 80 (growTo), 80: then 70 left, taken by a batch of 80 that waits for more.
    expect(await sizes(c, 5)).toEqual([10, 20, 40, 80, 80]);
    const head = watch(c.next(limits, never));
    await vi.advanceTimersByTimeAsync(50);
    expect(await head.promise).toMatchObject({ cut: "time" });
    expect((await head.promise).records).toHaveLength(70);
    // At the head: the next batch is the base again, and grows again with a backlog.
    push(100);
    expect(await sizes(c, 3)).toEqual([10, 20, 40]);
    const tail = watch(c.next(limits, never));
    await vi.advanceTimersByTimeAsync(50);
    expect((await tail.promise).records).toHaveLength(30);
    // Less than a base batch waiting after a full batch: back to the base.
    push(15);
    expect(await sizes(c, 1)).toEqual([10]);
    expect(waiting().records).toBe(5);
    push(20);
    expect(await sizes(c, 1)).toEqual([10]);
  });

  it("keeps the base size without growTo (a batchSize the user set) or a backlog report", async () => {
    const src = pushSource();
    src.push(...Array.from({ length: 100 }, (_, i) => i));
    expect(BatchGrowth.of({ maxRecords: 10, maxBytes: 1e9, maxWaitMs: 50 }, () => ({ records: 1e6 }))).toBeUndefined();
    expect(BatchGrowth.of(limits, undefined)).toBeUndefined();
    const c = new BatchCollector(src.iterator, src.cursor, undefined);
    expect(await sizes(c, 3)).toEqual([10, 10, 10]);
  });

  it("grows by bytes waiting, and a batch's bytes stay within maxBytes whatever its count", async () => {
    const src = pushSource();
    src.push(...Array.from({ length: 200 }, () => "x".repeat(8))); // 10 bytes each (JSON quotes)
    const budget = { ...limits, maxBytes: 350 };
    const c = new BatchCollector(src.iterator, src.cursor, BatchGrowth.of(budget, () => ({ bytes: (200 - src.cursor()) * 10 })));
    const got: Array<{ n: number; bytes: number; cut: string }> = [];
    for (let i = 0; i < 6; i++) {
      const b = await c.next(budget, never);
      got.push({ n: b.records.length, bytes: b.bytes, cut: b.cut });
    }
    expect(got.map((b) => b.n)).toEqual([10, 20, 35, 35, 35, 35]);
    expect(got.slice(2).every((b) => b.cut === "bytes" && b.bytes <= 350)).toBe(true);
  });

  it("sizes each batch from the backlog after the one before, also when a pageFull source cannot count it", async () => {
    const src = pushSource();
    src.push(...Array.from({ length: 100 }, (_, i) => i));
    const c = new BatchCollector(src.iterator, src.cursor, BatchGrowth.of(limits, () => ({ records: 0, pageFull: src.cursor() < 60 })));
    expect(await sizes(c, 4)).toEqual([10, 20, 40, 10]);
  });
});
