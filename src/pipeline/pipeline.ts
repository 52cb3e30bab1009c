import { BatchCollector, receiveBatch, recordBytes, type BatchLimits, type CollectedBatch } from "./collect.js";
import { encodeCursor } from "../checkpoint/codec.js";
import type { Cursor } from "../checkpoint/types.js";
import type { AckSource, CursorSource, Source, SourceLag } from "../sources/core/types.js";
import { PipelineBatch, type Validator } from "./batch.js";
import { assertSourceServes, readModeOf, type StreamMode } from "./settings.js";
import { ReadAhead } from "./read-ahead.js";
import { BatchGrowth } from "./growth.js";
import { SPANS, loadTracing, startStage } from "../observe/trace.js";

/** How one stream is read, validated and written: everything a pipeline needs, opened. */
export interface PipelineOptions {
  source: Source;
  /** processing_time reads the source as continuous; its batches wait at most maxWaitMs for a first record. */
  mode: StreamMode;
  limits: BatchLimits;
  validate: Validator;
  /** Cuts the batch being collected (StreamSink's stop; the Temporal runtime cuts per call). */
  stop?: AbortSignal;
}

/**
 * A read-ahead lets the event loop run after this many records. Measured with 10k-record
 * batches: 64 best; file → lake (`bench:compare`'s case) 10–14 % faster than never yielding,
 * 256 in between; on the Temporal runtime 1024 was slower too.
 */
const READ_AHEAD_YIELD_EVERY = 64;

/**
 * The end of an available_now run, captured when the pipeline opens (I7): a cursor source's end
 * snapshot (Kafka end offsets, MAX(watermark), a file's size …), or for a queue the moment the
 * run started — messages the broker took later wait for the next run.
 */
export type DrainEnd = { kind: "cursor"; end: Cursor | undefined } | { kind: "ack"; producedBefore: number } | undefined;

/**
 * The reading half of the per-stream loop, once for both runtimes: open a source at a cursor,
 * capture the end snapshot (I7), cut batches, reading and validating ahead for cursor sources.
 * Each batch is then written and committed by `commitBatch` (./commit.ts), and afterwards tells
 * its source or acknowledges its queue (I1, I8). StreamSink drives the steps in a loop; the
 * Temporal runtime keeps the pipeline between activity calls and drives them step by step.
 */
export class StreamPipeline {
  private collector: BatchCollector | undefined;
  private ahead: ReadAhead<PipelineBatch> | undefined;
  private drainEnd: DrainEnd;
  /** Ends the source's read loop when the pipeline closes (not per call). */
  private readonly reading = new AbortController();
  private closed = false;

  constructor(private readonly o: PipelineOptions) {}

  get source(): Source {
    return this.o.source;
  }

  /**
   * Position the source at `cursor` and, in available_now, fix the drain's end: captured now, or
   * adopted from `snapshot` (the Temporal runtime captures it once per drain and hands it to
   * whichever worker reads next). A mode the source cannot serve (`Source.modes`) is refused
   * first, with a ConfigError (not retriable).
   */
  async open(cursor: Cursor | undefined, snapshot?: DrainEnd): Promise<DrainEnd> {
    const { source, mode } = this.o;
    // Before the seek: a push source refused here never starts listening (both runtimes open here).
    assertSourceServes(source, readModeOf(mode));
    await loadTracing();
    if (source.kind === "cursor") {
      await source.seek(cursor ?? undefined);
      if (mode === "available_now") {
        const adopted = snapshot?.kind === "cursor" ? snapshot.end : undefined;
        const end = snapshot === undefined ? await source.endCursor?.() : await source.endCursor?.(adopted ?? null);
        this.drainEnd = { kind: "cursor", end };
      }
    } else if (mode === "available_now") {
      this.drainEnd = { kind: "ack", producedBefore: snapshot?.kind === "ack" ? snapshot.producedBefore : Date.now() };
    }
    return this.drainEnd;
  }

  /**
   * The next batch: one read ahead when held (or being collected), else a fresh one. `idleMs`:
   * give up waiting for a first record after this long (an empty batch). `stop` cuts it.
   */
  async next(stop: AbortSignal, options: { idleMs?: number } = {}): Promise<PipelineBatch> {
    const span = startStage(SPANS.fetch, { "lakelogic.source.kind": this.o.source.kind });
    try {
      const batch = await this.nextBatch(stop, options);
      span.setAttributes({ "lakelogic.records": batch.records.length, "lakelogic.batch.cut": batch.cut, "lakelogic.exhausted": batch.exhausted });
      span.end();
      return batch;
    } catch (err) {
      span.end(err);
      throw err;
    }
  }

  private async nextBatch(stop: AbortSignal, options: { idleMs?: number }): Promise<PipelineBatch> {
    // A processing_time trigger takes what is there: with nothing within maxWaitMs, it is empty.
    const idleMs = options.idleMs ?? (this.o.mode === "processing_time" ? this.o.limits.maxWaitMs : undefined);
    const limits: BatchLimits = idleMs === undefined ? this.o.limits : { ...this.o.limits, maxIdleMs: idleMs };
    const { source } = this.o;
    if (source.kind === "ack") return this.receive(source, limits, stop);
    const ahead = this.ahead;
    if (ahead) {
      const got = await ahead.take(stop);
      if (ahead.held === 0 && !ahead.isCollecting) this.ahead = undefined;
      // An idle read-ahead batch (nothing arrived in time) says nothing: wait again, for this call.
      if (got && (got.records.length > 0 || got.exhausted)) return got;
    }
    const batch = await this.cursorCollector(source).next(limits, this.cutSignal(stop));
    return this.wrap(batch).startValidation();
  }

  /** A batch already collected ahead, never waiting (so one fetch can hand over several). */
  takeReady(): PipelineBatch | undefined {
    const got = this.ahead?.takeReady();
    if (got && got.records.length === 0 && !got.exhausted) return undefined;
    return got;
  }

  /**
   * Collect and validate up to `depth` next batches now, while the ones taken are written (cursor
   * sources; a queue's batches are received one at a time). Nothing is written ahead: writes stay
   * one at a time and in order (I1). `budget`: collect at most this many batches from now on.
   * The collection yields to the event loop every READ_AHEAD_YIELD_EVERY records, so the write
   * in flight (a chain of DuckDB calls, each resumed on this thread) is not kept waiting.
   */
  readAhead(depth: number, options: { idleMs?: number; budget?: number } = {}): void {
    const { source } = this.o;
    if (source.kind !== "cursor" || depth < 1 || this.collector?.isExhausted || this.closed) return;
    const limits: BatchLimits = {
      ...this.o.limits,
      ...(options.idleMs !== undefined ? { maxIdleMs: options.idleMs } : {}),
      yieldEvery: READ_AHEAD_YIELD_EVERY,
    };
    this.ahead ??= new ReadAhead(
      this.cursorCollector(source),
      (batch) => this.wrap(batch).startValidation(),
      (b) => b.records.length === 0,
      (b) => b.bytes,
      this.o.stop,
    );
    this.ahead.fill(limits, depth, options.budget);
  }

  /**
   * Whether the next batch read ahead is held with records, waiting at most `ms` for the one
   * being collected: then `next` hands it over at once.
   */
  readAheadReady(ms: number): Promise<boolean> {
    return this.ahead ? this.ahead.nextReady(ms) : Promise.resolve(false);
  }

  /** Batches held ahead, and whether one is being collected (for diagnostics and tests). */
  readAheadState(): { held: number; collecting: boolean } {
    return { held: this.ahead?.held ?? 0, collecting: this.ahead?.isCollecting ?? false };
  }

  /** What a batch report adds after the commit: the source's lag and the drain's progress. */
  async progressAfter(cursor: Cursor): Promise<{ lag?: SourceLag; endCursor?: Cursor; progress?: number }> {
    const { source } = this.o;
    const lag = await source.lag?.().catch(() => undefined);
    const end = this.drainEnd?.kind === "cursor" ? this.drainEnd.end : undefined;
    const progress = end !== undefined && source.kind === "cursor" ? source.progress?.(cursor, end) : undefined;
    return { lag, endCursor: end, progress };
  }

  /** Close the read-ahead (its batches are dropped unwritten), the read loop and the source. */
  async close(): Promise<void> {
    this.closed = true;
    await this.ahead?.stop();
    this.ahead = undefined;
    this.reading.abort();
    await this.collector?.close().catch(() => undefined);
    await this.o.source.close?.().catch(() => undefined);
  }

  private cursorCollector(source: CursorSource): BatchCollector {
    this.collector ??= new BatchCollector(
      source.read({ mode: readModeOf(this.o.mode), signal: this.reading.signal })[Symbol.asyncIterator](),
      () => source.currentCursor(),
      BatchGrowth.of(this.o.limits, source.backlog && (() => source.backlog!())),
    );
    return this.collector;
  }

  private cutSignal(stop: AbortSignal): AbortSignal {
    return this.o.stop && this.o.stop !== stop ? AbortSignal.any([stop, this.o.stop]) : stop;
  }

  private wrap(batch: CollectedBatch): PipelineBatch {
    const source = this.o.source as CursorSource;
    return new PipelineBatch(batch.records, batch.bytes, batch.cursor, batch.exhausted, batch.cut, this.o.validate, {
      kind: "cursor",
      source,
      isOpen: () => !this.closed,
    });
  }

  private async receive(source: AckSource, limits: BatchLimits, stop: AbortSignal): Promise<PipelineBatch> {
    const producedBefore = this.drainEnd?.kind === "ack" ? this.drainEnd.producedBefore : undefined;
    const records = await receiveBatch(source, limits, this.cutSignal(stop), producedBefore);
    const bytes = records.reduce((n, r) => n + recordBytes(r), 0);
    // Nothing (older than the snapshot) after a full wait: in available_now the queue is drained
    // as far as it can tell, up to the snapshot.
    const exhausted = records.length === 0 && this.o.mode === "available_now";
    const cut = records.length >= limits.maxRecords ? "records" : "time";
    return new PipelineBatch(records, bytes, undefined, exhausted, cut, this.o.validate, {
      kind: "ack",
      source,
      tokens: records.map((r) => r.ackToken),
    }).startValidation();
  }
}

/** Whether a batch must be committed: it has records, or it moves the cursor (e.g. an iterable's end). */
export function batchMoves(batch: PipelineBatch, lastCursor: Cursor | undefined): boolean {
  return batch.records.length > 0 || (batch.cursor !== undefined && encodeCursor(batch.cursor) !== encodeCursor(lastCursor ?? null));
}

