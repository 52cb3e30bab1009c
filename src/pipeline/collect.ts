import type { Cursor } from "../checkpoint/types.js";
import type { AckSource, BufferedRecordIterator, ReceivedRecord, SourceRecord } from "../sources/core/types.js";

export interface BatchLimits {
  /** Records per batch: the base a batch starts from, and with no `growTo` the cap. */
  maxRecords: number;
  /**
   * The most records a cursor source's batch grows to while its source reports a backlog
   * (BatchGrowth); unset when the user set `batchSize`, which is then a hard cap.
   */
  growTo?: number;
  /** A batch's bytes (recordBytes): a record that would take it past them starts the next batch. */
  maxBytes: number;
  /** Time from the batch's first record until it is cut, whatever else arrives. */
  maxWaitMs: number;
  /** Give up waiting for a first record after this long and return an empty batch (default: wait). */
  maxIdleMs?: number;
  /**
   * Let the event loop run other callbacks after every this many records (default: never). A
   * source with records at hand otherwise fills a whole batch in one run of microtasks, and
   * nothing else in the process (timers, I/O, a Temporal worker's tasks) runs meanwhile.
   */
  yieldEvery?: number;
}

export interface CollectedBatch {
  records: SourceRecord[];
  bytes: number;
  /** Cursor just after the last record of this batch (undefined when the batch is empty). */
  cursor: Cursor | undefined;
  /** The source has no more records (end snapshot reached, or a finite source drained). */
  exhausted: boolean;
  /**
   * Why the batch was cut. `bytes`: the next record would take it past `maxBytes` (it starts the
   * next batch; a record larger than the budget makes a batch of its own). `deletes`: the next
   * record writes a key after this batch's deletes (`SourceRecord.delete`), so it starts the next
   * batch: in a batch every delete comes after every other record, and the lake applies the
   * deletes last.
   */
  cut: "records" | "bytes" | "time" | "end" | "stop" | "idle" | "deletes";
}

const TIMEOUT = Symbol("timeout");
const STOPPED = Symbol("stopped");

/** What sizes each batch (./growth.ts's BatchGrowth): the next batch's records, told of each batch cut. */
export interface BatchSizer {
  readonly records: number;
  after(batch: CollectedBatch): Promise<void>;
}

/**
 * Cuts an async stream of records into batches by count, bytes and a real timer.
 *
 * A `next()` that is still pending when a batch is cut by time is kept and reused by the next
 * batch, so no record is lost between batches. Because the source may already be fetching that
 * record, its cursor can run ahead of what was yielded; hence the cursor is sampled right after
 * each record arrives (`cursorNow`), never at cut time.
 */
export class BatchCollector {
  private pending: Promise<IteratorResult<SourceRecord>> | undefined;
  /** A record that starts the next batch (cut `deletes`, or `bytes`), with the cursor sampled when it arrived. */
  private held: { record: SourceRecord; cursor: Cursor | undefined } | undefined;
  private exhausted = false;
  /** The source's synchronous way to the records it has at hand, when it has one. */
  private readonly takeBuffered: (() => SourceRecord | undefined) | undefined;

  constructor(
    private readonly iterator: AsyncIterator<SourceRecord>,
    private readonly cursorNow: () => Cursor | undefined,
    /** Sizes each batch from the one before and the source's backlog; absent: `maxRecords` each. */
    private readonly growth?: BatchSizer,
  ) {
    const buffered = (iterator as Partial<BufferedRecordIterator>).takeBuffered;
    this.takeBuffered = buffered ? () => buffered.call(iterator) : undefined;
  }

  get isExhausted(): boolean {
    return this.exhausted;
  }

  async next(limits: BatchLimits, stop: AbortSignal): Promise<CollectedBatch> {
    const batch = await this.collect(limits, this.growth?.records ?? limits.maxRecords, stop);
    await this.growth?.after(batch);
    return batch;
  }

  private async collect(limits: BatchLimits, maxRecords: number, stop: AbortSignal): Promise<CollectedBatch> {
    const records: SourceRecord[] = [];
    let bytes = 0;
    let cursor: Cursor | undefined;
    let cut: CollectedBatch["cut"] = "records";
    let deletes = false;
    // One wait per record, woken by the read, the stop signal or a timer. (A Promise.race per
    // record against the long-lived stop and timer promises left 10k reactions on each of them
    // per batch: measured as a good share of a 10k-record batch's garbage.)
    let wake: ((why: typeof TIMEOUT | typeof STOPPED) => void) | undefined;
    let timedOut = false;
    const onTimer = () => {
      timedOut = true;
      wake?.(TIMEOUT);
    };
    const onAbort = () => wake?.(STOPPED);
    stop.addEventListener("abort", onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    let idleTimer = limits.maxIdleMs === undefined ? undefined : setTimeout(onTimer, limits.maxIdleMs);

    try {
      while (true) {
        if (records.length >= maxRecords) {
          cut = "records";
          break;
        }
        if (bytes >= limits.maxBytes) {
          cut = "bytes";
          break;
        }
        if (this.exhausted) {
          cut = "end";
          break;
        }
        if (stop.aborted) {
          cut = "stop";
          break;
        }
        // A record held back by the previous batch comes first; then one the source has at hand
        // is taken at once (unless a read is already pending: it comes first), like a read that
        // is already done.
        const held = this.held;
        this.held = undefined;
        let record = held?.record ?? (this.pending === undefined ? this.takeBuffered?.() : undefined);
        if (record === undefined) {
          const pending = (this.pending ??= this.iterator.next());
          const result = await new Promise<IteratorResult<SourceRecord> | typeof TIMEOUT | typeof STOPPED>((resolve, reject) => {
            pending.then(resolve, reject);
            wake = resolve;
            // A timer that already fired loses to a read that is already done (its reaction is
            // queued first), as it did in a race: a source with records at hand fills the batch.
            if (timedOut) queueMicrotask(() => resolve(stop.aborted ? STOPPED : TIMEOUT));
          });
          wake = undefined;
          if (result === TIMEOUT) {
            cut = records.length === 0 ? "idle" : "time";
            break;
          }
          if (result === STOPPED) {
            cut = "stop";
            break;
          }
          this.pending = undefined;
          if (result.done) {
            this.exhausted = true;
            // The source has finished, so nothing runs ahead of us: its cursor now is final.
            cursor = this.cursorNow();
            cut = "end";
            break;
          }
          record = result.value;
        }
        const now = held ? held.cursor : this.cursorNow();
        if (deletes && record.delete === undefined) {
          this.held = { record, cursor: now };
          cut = "deletes";
          break;
        }
        const size = recordBytes(record);
        if (records.length > 0 && bytes + size > limits.maxBytes) {
          // Held for the next batch, so a batch's bytes stay within the budget (I5).
          this.held = { record, cursor: now };
          cut = "bytes";
          break;
        }
        deletes ||= record.delete !== undefined;
        records.push(record);
        bytes += size;
        cursor = now;
        if (limits.yieldEvery && records.length % limits.yieldEvery === 0) await new Promise((r) => setImmediate(r));
        if (timer === undefined) {
          // The first record: the idle wait is over, the batch's own clock starts.
          if (idleTimer) clearTimeout(idleTimer);
          idleTimer = undefined;
          timedOut = false;
          timer = setTimeout(onTimer, limits.maxWaitMs);
        }
      }
    } finally {
      if (timer) clearTimeout(timer);
      if (idleTimer) clearTimeout(idleTimer);
      stop.removeEventListener("abort", onAbort);
    }
    return { records, bytes, cursor, exhausted: this.exhausted, cut };
  }

  /** Release the iterator without waiting forever on a pending read. */
  async close(graceMs = 1000): Promise<void> {
    const ret = this.iterator.return?.();
    if (!ret) return;
    await Promise.race([ret.catch(() => undefined), delay(graceMs)]);
  }
}

/**
 * Fill one batch from an ack source: receive until `maxRecords`, `maxBytes` or `maxWaitMs`,
 * or until a receive comes back empty (the queue has nothing more right now).
 *
 * With `producedBefore` (an available_now run's snapshot, ms since the epoch on the broker's
 * clock), messages the broker accepted at or after it are not taken but handed back (`nack`):
 * they wait for the next run (I7). A batch that finds nothing older within its full wait is
 * empty — the end of the run — even on a queue fed faster than it drains.
 */
export async function receiveBatch<T>(
  source: AckSource<T>,
  limits: BatchLimits,
  stop: AbortSignal,
  producedBefore?: number,
): Promise<Array<ReceivedRecord<T>>> {
  const out: Array<ReceivedRecord<T>> = [];
  const deadline = Date.now() + limits.maxWaitMs;
  let bytes = 0;
  while (out.length < limits.maxRecords && bytes < limits.maxBytes && !stop.aborted) {
    const got = await source.receive(limits.maxRecords - out.length, Math.max(0, deadline - Date.now()), stop);
    const newer: T[] = [];
    for (const r of got) {
      if (producedBefore !== undefined && r.producedAt !== undefined && r.producedAt >= producedBefore) {
        newer.push(r.ackToken);
        continue;
      }
      out.push(r);
      bytes += recordBytes(r);
    }
    // Handed back at once rather than held: a held message counts against the connector's
    // flow control (Pub/Sub stops streaming), which would hide older messages behind newer ones.
    // A queue that sends them straight back only repeats them within this batch's wait.
    if (newer.length > 0) await source.nack?.(newer).catch(() => undefined);
    if (got.length === 0 || Date.now() >= deadline) break;
  }
  return out;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Size used for byte-based cuts: the raw payload when there is one, else a cheap estimate. */
export function recordBytes(record: SourceRecord): number {
  if (record.bytes !== undefined) return record.bytes;
  if (typeof record.raw === "string") return record.raw.length;
  if (record.raw instanceof Uint8Array) return record.raw.byteLength;
  return estimateBytes(record.value, 0);
}

function estimateBytes(value: unknown, depth: number): number {
  switch (typeof value) {
    case "string":
      return value.length + 2;
    case "number":
    case "bigint":
      return 8;
    case "boolean":
      return 4;
    case "object": {
      if (value === null) return 4;
      if (depth > 4) return 64;
      let n = 2;
      if (Array.isArray(value)) {
        for (const v of value) n += estimateBytes(v, depth + 1) + 1;
      } else if (value instanceof Date) {
        n = 24;
      } else {
        for (const k in value as Record<string, unknown>) {
          n += k.length + 4 + estimateBytes((value as Record<string, unknown>)[k], depth + 1);
        }
      }
      return n;
    }
    default:
      return 0;
  }
}
