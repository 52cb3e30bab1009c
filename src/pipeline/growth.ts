import type { SourceBacklog } from "../sources/core/types.js";
import type { BatchLimits, BatchSizer, CollectedBatch } from "./collect.js";

/**
 * How many records the next batch of a cursor source takes. Every batch pays a fixed cost (a
 * dozen engine and lake calls, a merge, a commit), so a source far behind its head is drained in
 * fewer, larger batches, and one at its head is cut small again, for freshness:
 *
 * - a batch starts at the base size (`maxRecords`);
 * - after a batch that filled up by count while the source reports at least another base batch
 *   waiting (`CursorSource.backlog`), the next takes twice as many, up to `growTo` records;
 *   `maxBytes` bounds every batch's bytes whatever its count, so a batch cut by bytes keeps its size;
 * - less than that waiting after a batch (the source is at its head), a batch that found nothing,
 *   or the end of a drain brings it back to the base size; a batch cut by time while a backlog
 *   remains (collecting it took `maxWaitMs`: a busy process) keeps its size.
 *
 * Without `growTo` (a `batchSize` the user set: the base and the cap) every batch is the base.
 *
 * Replays stay exact: a batch's records are fixed when it is cut, before its write, and its
 * commit covers exactly them. A pipeline starts at the base size, so a batch written but not
 * committed before a crash is read again no larger than it was (as large when bytes cut it),
 * unless `maxWaitMs` had cut it short: its remaining records come in the next batch.
 */
export class BatchGrowth implements BatchSizer {
  private size: number;

  constructor(
    private readonly base: number,
    private readonly most: number,
    private readonly backlog: () => SourceBacklog | undefined | Promise<SourceBacklog | undefined>,
  ) {
    this.size = base;
  }

  /** A growth for these limits and source, or undefined when batches keep the base size. */
  static of(limits: BatchLimits, backlog: (() => SourceBacklog | undefined | Promise<SourceBacklog | undefined>) | undefined): BatchGrowth | undefined {
    if (backlog === undefined || limits.growTo === undefined || limits.growTo <= limits.maxRecords) return undefined;
    return new BatchGrowth(limits.maxRecords, limits.growTo, backlog);
  }

  /** Records the next batch may take. */
  get records(): number {
    return this.size;
  }

  /** Size the next batch after `batch` was cut. */
  async after(batch: CollectedBatch): Promise<void> {
    const { cut, records } = batch;
    if (cut === "bytes" || cut === "deletes") return;
    if ((cut !== "records" && cut !== "time") || records.length === 0) {
      this.size = this.base;
      return;
    }
    let waiting: SourceBacklog | undefined;
    try {
      waiting = await this.backlog();
    } catch {
      waiting = undefined; // a source that cannot tell now: the base size, as without a report
    }
    if (!hasBatchMore(waiting, this.base, batch.bytes / records.length)) this.size = this.base;
    // Cut by time with a backlog: the records were there but collecting them took maxWaitMs (a
    // busy process), so the size stays; a batch that filled up doubles.
    else if (cut === "records") this.size = Math.min(this.most, this.size * 2);
  }
}

/** Whether at least `base` more records (or their bytes, at `recordBytes` each) wait. */
function hasBatchMore(waiting: SourceBacklog | undefined, base: number, recordBytes: number): boolean {
  if (!waiting) return false;
  return waiting.pageFull === true || (waiting.records ?? 0) >= base || (waiting.bytes ?? 0) >= base * recordBytes;
}
