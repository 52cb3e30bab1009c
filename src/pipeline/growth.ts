import type { SourceBacklog } from "../sources/core/types.js";
import type { BatchLimits, CollectedBatch } from "./collect.js";

/**
 * How many records the next batch of a cursor source takes. Every batch pays a fixed cost (a
 * dozen engine and lake calls, a merge, a commit), so a source far behind its head is drained in
 * fewer, larger batches, and one at its head is cut small again, for freshness:
 *
 * - a batch starts at the base size (`maxRecords`);
 * - after a batch that filled up by count while the source reports at least another base batch
 *   waiting (`CursorSource.backlog`), the next takes twice as many, up to `growTo` records;
 *   `maxBytes` bounds every batch's bytes whatever its count, so a batch cut by bytes keeps its size;
 * - anything else (a batch cut by time or idle: the source is at its head; the end of a drain; a
 *   source that reports no backlog) brings it back to the base size.
 *
 * Without `growTo` (a `batchSize` the user set: the base and the cap) every batch is the base.
 *
 * Replays stay exact: a batch's records are fixed when it is cut, before its write, and its
 * commit covers exactly them. A pipeline starts at the base size, so a batch written but not
 * committed before a crash is read again no larger than it was (as large when bytes cut it): its
 * remaining records come in the next batch, never skipped.
 */
export class BatchGrowth {
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
    if (batch.cut === "bytes" || batch.cut === "deletes") return;
    if (batch.cut !== "records" || batch.records.length < this.size) {
      this.size = this.base;
      return;
    }
    let waiting: SourceBacklog | undefined;
    try {
      waiting = await this.backlog();
    } catch {
      waiting = undefined; // a source that cannot tell now: the base size, as without a report
    }
    this.size = hasBatchMore(waiting, this.base, batch.bytes / batch.records.length) ? Math.min(this.most, this.size * 2) : this.base;
  }
}

/** Whether at least `base` more records (or their bytes, at `recordBytes` each) wait. */
function hasBatchMore(waiting: SourceBacklog | undefined, base: number, recordBytes: number): boolean {
  if (!waiting) return false;
  return waiting.pageFull === true || (waiting.records ?? 0) >= base || (waiting.bytes ?? 0) >= base * recordBytes;
}
