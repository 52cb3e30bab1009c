import type { CollectedBatch } from "./collect.js";
import type { ValidatedBatch } from "./validate.js";
import type { Cursor } from "../checkpoint/types.js";
import type { AckSource, CursorSource, SourceRecord } from "../sources/core/types.js";
import { SPANS, inStage } from "../observe/trace.js";

/** Validates a batch's records (the contract and engine of its stream). */
export type Validator = (records: readonly SourceRecord[]) => Promise<ValidatedBatch>;

/**
 * One batch on its way from the source to the commit. Its validation starts as soon as it is
 * collected (it overlaps the write of the batch before); what happens after the commit depends on
 * the source: a cursor source hears the committed cursor (e.g. Kafka's group commit), a queue's
 * messages are acknowledged (I8) — or handed back at once when the batch failed.
 */
export class PipelineBatch {
  private validation: Promise<ValidatedBatch> | undefined;

  constructor(
    readonly records: SourceRecord[],
    readonly bytes: number,
    /** Cursor just after the last record (cursor sources; undefined when nothing moved it). */
    readonly cursor: Cursor | undefined,
    /** The source has no more records (end snapshot reached, a finite source drained, a drained queue). */
    readonly exhausted: boolean,
    /** Why the batch was cut. */
    readonly cut: CollectedBatch["cut"],
    private readonly validator: Validator,
    private readonly settler: Settler,
    /** When the batch was collected (ms), for its report's duration. */
    readonly startedAt = Date.now(),
  ) {}

  /** Start validating now, so the result is ready when the write wants it. */
  startValidation(): this {
    if (this.records.length > 0) void this.validated().catch(() => undefined);
    return this;
  }

  /** The validation, started at collection or now; a failed one is not kept, so a retry validates again. */
  validated(): Promise<ValidatedBatch> {
    if (!this.validation) {
      const validation = this.validator(this.records);
      this.validation = validation;
      validation.catch(() => {
        if (this.validation === validation) this.validation = undefined;
      });
    }
    return this.validation;
  }

  /** A batch of no records (a commit that only moves the cursor). */
  static empty(validator: Validator): PipelineBatch {
    return new PipelineBatch([], 0, undefined, false, "idle", validator, { kind: "none" });
  }

  /**
   * How the source replays after a crash, as the lake needs to know it (WriteStream.replay):
   * a replayable cursor source gives back every record after the committed cursor.
   */
  get replay(): "cursor" | "redeliver" {
    return this.settler.kind === "cursor" && this.settler.source.replays === true ? "cursor" : "redeliver";
  }

  /** Whether the batch comes from a cursor source, whose position is the committed cursor. */
  get fromCursorSource(): boolean {
    return this.settler.kind === "cursor";
  }

  /** Whether the queue's messages still wait for an acknowledgement. */
  get needsAck(): boolean {
    return this.settler.kind === "ack" && this.settler.tokens.length > 0;
  }

  /** After the commit of a cursor source's batch: tell the source (e.g. Kafka's group commit). */
  async committed(cursor: Cursor): Promise<void> {
    const settler = this.settler;
    if (settler.kind === "cursor" && settler.isOpen()) {
      await inStage(SPANS.ack, { "lakelogic.source.kind": "cursor" }, async () => settler.source.committed?.(cursor));
    }
  }

  /** After the commit of a queue's batch: acknowledge its messages (I8). */
  async acknowledge(): Promise<void> {
    const settler = this.settler;
    if (settler.kind === "ack") {
      await inStage(SPANS.ack, { "lakelogic.source.kind": "ack", "lakelogic.records": settler.tokens.length }, () => settler.source.ack(settler.tokens));
    }
  }

  /** The batch failed: hand a queue's messages back at once, so a retry does not wait for their leases. */
  async release(): Promise<void> {
    if (this.settler.kind === "ack") await this.settler.source.nack?.(this.settler.tokens).catch(() => undefined);
  }
}

/** What a batch does after its commit, by source kind. */
export type Settler =
  | { kind: "cursor"; source: CursorSource; isOpen: () => boolean }
  | { kind: "ack"; source: AckSource; tokens: unknown[] }
  | { kind: "none" };
