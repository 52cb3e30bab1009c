import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { BatchCollector, receiveBatch, type CollectedBatch } from "../batch/collect.js";
import { positionOf, replayOf, writeAndCommit, type CommitHooks, type StreamPosition } from "../batch/commit.js";
import { validateRecords, type ValidatedBatch } from "../batch/validate.js";
import { encodeCursor } from "../checkpoint/codec.js";
import type { Counts, Cursor } from "../checkpoint/types.js";
import { loadContract } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { createEngine } from "../engine/index.js";
import type { DatasetRuleResult, Engine, EngineName, RuleCount } from "../engine/types.js";
import { ConfigError, LakeLogicError } from "../errors.js";
import { toSource, type SourceInput } from "../sources/index.js";
import type { AckSource, CursorSource, RunMode, SourceLag, SourceRecord } from "../sources/core/types.js";
import { memoryProfile } from "../util/memory-profile.js";
import { openCheckpoint, type CheckpointOption } from "./checkpoint-option.js";
import { openLakeFor } from "./lake-option.js";

export const RUN_MODES: readonly RunMode[] = ["available_now", "continuous"];

export interface StreamSinkOptions {
  /** `duckdb` (default), `polars`, or an engine instance you own. */
  engine?: EngineName | Engine;
  /**
   * Where the cursor lives: a CheckpointStore, `"target"` (the lake's DuckDB file, committed in
   * the same transaction as the rows), `"memory"`, or a SQLite file path.
   * Default: `<targetPath>/_lakelogic/checkpoints.sqlite`.
   */
  checkpoint?: CheckpointOption;
  /** Default `stream::<dataset>`. */
  checkpointKey?: string;
  /** Records per batch. Default 1000. */
  batchSize?: number;
  /** Bytes per batch (raw payload, or an estimate). Default 16 MiB. */
  maxBatchBytes?: number;
  /** A batch is cut at most this long after its first record arrived. Default 1000 ms. */
  maxWaitMs?: number;
  /** Lake directory; overrides `materialization.target_path`. Default `./lake`. */
  targetPath?: string;
  /** Abort to stop gracefully: the batches already read (up to readAhead + 1) finish and commit. */
  signal?: AbortSignal;
  /** Called after every committed batch. Per-batch details go here, never into the summary. */
  onBatch?: (report: BatchReport) => void | Promise<void>;
  /** Stop gracefully on SIGTERM / SIGINT during `continuous` runs. Default true. */
  handleSignals?: boolean;
  /** Identifies this writer in checkpoint records. Default `sink:<host>:<pid>:<random>`. */
  writerId?: string;
  /**
   * Batches read and validated while the one before is written and committed. Default 2
   * (1 under `LAKELOGIC_MEMORY_PROFILE=lean`): more overlap, one more batch held in memory.
   * Queue sources (ack) handle one batch at a time whatever this says.
   */
  readAhead?: number;
  /** @internal test hooks (crash tests pause between write and commit). */
  hooks?: CommitHooks;
}

export interface RunOptions {
  /** Stop after this many committed batches. */
  maxBatches?: number;
}

export interface BatchReport {
  batchId: number;
  sourceCount: number;
  goodCount: number;
  badCount: number;
  /** Quarantine rows that were already there (a replayed batch). */
  badAlreadyPresent: number;
  cursor: Cursor;
  cut: CollectedBatch["cut"];
  ruleCounts: RuleCount[];
  datasetRules: DatasetRuleResult[];
  totals: Counts;
  lag?: SourceLag;
  /** The end snapshot of an available_now run, when the source has one. */
  endCursor?: Cursor;
  /** Fraction (0..1) of the way to the end snapshot, when the source can tell. */
  progress?: number;
  durationMs: number;
}

export type StopReason = "end" | "signal" | "max-batches";

export interface StreamRunSummary extends Counts {
  batches: number;
  cursor: Cursor;
  resumedFrom: Cursor;
  startedAt: Date;
  finishedAt: Date;
  stoppedBy: StopReason;
  checkpointKey: string;
  /** Totals since the stream began (across runs). */
  totals: Counts;
  /** The source's lag after the last committed batch, when it can tell (queues: backlog, oldest age). */
  lag?: SourceLag;
}

/** A run failed; `summary` says what was committed before it did. */
export class StreamRunError extends LakeLogicError {
  constructor(
    readonly summary: StreamRunSummary,
    cause: unknown,
  ) {
    super(
      "STREAM_RUN_FAILED",
      `stream "${summary.checkpointKey}" failed after ${summary.batches} committed batches ` +
        `(cursor ${JSON.stringify(summary.cursor ?? null)}): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

const DEFAULTS = { batchSize: 1000, maxBatchBytes: 16 * 1024 * 1024, maxWaitMs: 1000, readAhead: 2 };

/**
 * The in-process runtime: fetch → validate → write → commit, in a loop, with the cursor
 * committed only after the batch's rows are durable. See docs/streamsink.md.
 */
export class StreamSink {
  private readonly batchSize: number;
  private readonly maxBatchBytes: number;
  private readonly maxWaitMs: number;
  private readonly readAhead: number;

  constructor(
    private readonly contractInput: string | Contract | Record<string, unknown>,
    private readonly sourceInput: SourceInput,
    private readonly options: StreamSinkOptions = {},
  ) {
    this.batchSize = positiveInt("batchSize", options.batchSize ?? DEFAULTS.batchSize);
    this.maxBatchBytes = positiveInt("maxBatchBytes", options.maxBatchBytes ?? DEFAULTS.maxBatchBytes);
    this.maxWaitMs = positiveInt("maxWaitMs", options.maxWaitMs ?? DEFAULTS.maxWaitMs);
    this.readAhead = positiveInt("readAhead", options.readAhead ?? (memoryProfile() === "lean" ? 1 : DEFAULTS.readAhead));
    if (sourceInput === undefined || sourceInput === null) {
      throw new ConfigError("source", "expected a source, a connector with stream(), or an iterable; got nothing");
    }
  }

  async run(mode: RunMode, runOptions: RunOptions = {}): Promise<StreamRunSummary> {
    if (!RUN_MODES.includes(mode)) {
      throw new ConfigError("mode", `expected one of ${RUN_MODES.join(", ")}; got ${JSON.stringify(mode)}`);
    }
    if (runOptions.maxBatches !== undefined) positiveInt("maxBatches", runOptions.maxBatches);

    const contract = isContract(this.contractInput) ? this.contractInput : await loadContract(this.contractInput);
    const source = toSource(this.sourceInput);
    const key = this.options.checkpointKey ?? `stream::${contract.dataset}`;
    const writerId = this.options.writerId ?? `sink:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

    const stop = new AbortController();
    const detach = this.attachStopSignals(mode, stop);
    const resources: Array<() => Promise<void>> = [];
    const startedAt = new Date();
    let position: StreamPosition | undefined;
    let resumedFrom: Cursor = null;
    let batches = 0;
    const run: Counts = { sourceCount: 0, goodCount: 0, badCount: 0 };
    let stoppedBy: StopReason = "end";
    let lastLag: SourceLag | undefined;

    const summary = (): StreamRunSummary => ({
      batches,
      ...run,
      cursor: position?.cursor ?? null,
      resumedFrom,
      startedAt,
      finishedAt: new Date(),
      stoppedBy,
      checkpointKey: key,
      totals: position?.totals ?? { sourceCount: 0, goodCount: 0, badCount: 0 },
      ...(lastLag ? { lag: lastLag } : {}),
    });

    try {
      const engine = await this.openEngine(resources);
      const lake = await openLakeFor(contract, this.options.targetPath);
      resources.push(() => lake.close());
      const { store, inTarget } = await openCheckpoint(this.options.checkpoint, lake, contract, this.options.targetPath);
      if (!inTarget) resources.push(() => store.close());
      if (source.close) resources.push(() => source.close!());

      position = positionOf(await store.load(key));
      resumedFrom = position.cursor ?? null;
      const target = { lake, store, storeInTarget: inTarget, key, writerId, replay: replayOf(source) };

      const loop: LoopContext = {
        mode,
        stop: stop.signal,
        maxBatches: runOptions.maxBatches,
        committedCursor: () => position?.cursor ?? null,
        onCommitted: async (report) => {
          batches++;
          run.sourceCount += report.sourceCount;
          run.goodCount += report.goodCount;
          run.badCount += report.badCount;
          if (report.lag) lastLag = report.lag;
          await this.options.onBatch?.(report);
        },
        validate: (records) => validateRecords(engine, contract, records),
        write: async (cursor, validated, cut, endCursor, started) => {
          const committed = await writeAndCommit(target, position!, cursor, validated, this.options.hooks);
          position = committed.position;
          return {
            batchId: committed.record.batchId,
            sourceCount: validated.sourceCount,
            goodCount: validated.goodCount,
            badCount: validated.bad.length,
            badAlreadyPresent: committed.write.badAlreadyPresent,
            cursor: committed.record.cursor,
            cut,
            ruleCounts: validated.ruleCounts,
            datasetRules: validated.datasetRules,
            totals: committed.record.totals,
            lag: await source.lag?.().catch(() => undefined),
            endCursor,
            progress:
              endCursor !== undefined && source.kind === "cursor"
                ? source.progress?.(committed.record.cursor, endCursor)
                : undefined,
            durationMs: Date.now() - started,
          };
        },
        commit: async (cursor, records, cut, endCursor) => {
          const started = Date.now();
          return loop.write(cursor, await loop.validate(records), cut, endCursor, started);
        },
      };

      stoppedBy =
        source.kind === "cursor"
          ? await this.runCursorSource(source, position.cursor, loop)
          : await this.runAckSource(source, loop);
      return summary();
    } catch (err) {
      throw new StreamRunError(summary(), err);
    } finally {
      detach();
      for (const close of resources.reverse()) await close().catch(() => undefined);
    }
  }

  private async runCursorSource(source: CursorSource, cursor: Cursor | undefined, loop: LoopContext): Promise<StopReason> {
    await source.seek(cursor ?? undefined);
    // I7: the drain's end is fixed before the first read; later records wait for the next run.
    const endCursor = loop.mode === "available_now" ? await source.endCursor?.() : undefined;
    const collector = new BatchCollector(
      source.read({ mode: loop.mode, signal: loop.stop })[Symbol.asyncIterator](),
      () => source.currentCursor(),
    );
    // Reading and validation run ahead of the write: while batch N is written and committed,
    // up to `readAhead` later batches are read and validated (the engine encodes one while the
    // statement of the one before runs on DuckDB's thread). Each batch's write is chained onto
    // the one before, so writes stay one at a time and in order, a batch is written only after
    // the previous one committed, and nothing is written after a failure: every cursor is still
    // committed after its own rows and those before it (I1). At most readAhead + 1 batches are held.
    const pending: Array<Promise<void>> = []; // each read batch's write + commit, oldest first
    let tail: Promise<void> = Promise.resolve();
    const settle = async (): Promise<void> => {
      while (pending.length > 0) await pending.shift();
    };
    // A failed write cuts the batch being read (a quiet source could otherwise keep it waiting).
    const writeFailed = new AbortController();
    const cutSignal = AbortSignal.any([loop.stop, writeFailed.signal]);
    try {
      let batches = 0;
      let lastCursor = loop.committedCursor();
      while (true) {
        while (pending.length > this.readAhead) await pending.shift(); // throws a write's error
        const batch = await collector.next(this.limits(), cutSignal);
        if (writeFailed.signal.aborted) await settle(); // throws the write's error
        // An empty batch is committed only when it moves the cursor: the end of an iterable marks
        // it `exhausted`, which tells the next run that this one finished.
        const moves =
          batch.records.length > 0 || (batch.cursor !== undefined && encodeCursor(batch.cursor) !== encodeCursor(lastCursor));
        if (moves) {
          const started = Date.now();
          const validated = loop.validate(batch.records);
          validated.catch(() => undefined); // thrown where the chain reaches it
          tail = tail.then(async () => {
            const report = await loop.write(batch.cursor, await validated, batch.cut, endCursor, started);
            await source.committed?.(report.cursor);
            await loop.onCommitted(report);
          });
          // Observed now, thrown by settle(): a failure must not count as unhandled meanwhile.
          tail.catch(() => writeFailed.abort());
          pending.push(tail);
          if (batch.cursor !== undefined) lastCursor = batch.cursor;
          batches++;
        }
        if (batch.exhausted) return await settle().then(() => "end" as const);
        if (loop.stop.aborted) return await settle().then(() => "signal" as const);
        if (loop.maxBatches !== undefined && batches >= loop.maxBatches) return await settle().then(() => "max-batches" as const);
      }
    } finally {
      // Leaving on an error: let the writes in flight finish before the resources close.
      await Promise.allSettled(pending);
      await collector.close();
    }
  }

  private async runAckSource(source: AckSource, loop: LoopContext): Promise<StopReason> {
    let batches = 0;
    // I7 for queues: the run's snapshot is the moment it started; newer messages wait.
    const producedBefore = loop.mode === "available_now" ? Date.now() : undefined;
    while (!loop.stop.aborted) {
      const records = await receiveBatch(source, this.limits(), loop.stop, producedBefore);
      if (records.length === 0) {
        // Nothing (older than the snapshot) after a full wait: the queue is drained as far as it
        // can tell, up to the snapshot.
        if (loop.mode === "available_now") return "end";
        continue;
      }
      const tokens = records.map((r) => r.ackToken);
      const keepAlive = source.extend ? setInterval(() => void source.extend!(tokens).catch(() => undefined), 10_000) : undefined;
      let report: BatchReport;
      try {
        report = await loop.commit(null, records, records.length >= this.batchSize ? "records" : "time", undefined);
      } catch (err) {
        // Give the messages back at once rather than waiting out their leases.
        await source.nack?.(tokens).catch(() => undefined);
        throw err;
      } finally {
        if (keepAlive) clearInterval(keepAlive);
      }
      // I8: acknowledge only after the commit.
      await source.ack(tokens);
      await loop.onCommitted(report);
      batches++;
      if (loop.maxBatches !== undefined && batches >= loop.maxBatches) return "max-batches";
    }
    return "signal";
  }

  private limits() {
    return { maxRecords: this.batchSize, maxBytes: this.maxBatchBytes, maxWaitMs: this.maxWaitMs };
  }

  private async openEngine(resources: Array<() => Promise<void>>): Promise<Engine> {
    const e = this.options.engine ?? "duckdb";
    if (typeof e !== "string") return e;
    const engine = await createEngine(e);
    resources.push(() => engine.close());
    return engine;
  }

  /** In continuous mode, SIGTERM/SIGINT (and the caller's signal) stop after the batches in flight. */
  private attachStopSignals(mode: RunMode, stop: AbortController): () => void {
    const onStop = () => stop.abort();
    const external = this.options.signal;
    if (external?.aborted) stop.abort();
    external?.addEventListener("abort", onStop, { once: true });
    const handle = mode === "continuous" && (this.options.handleSignals ?? true);
    if (handle) {
      process.once("SIGTERM", onStop);
      process.once("SIGINT", onStop);
    }
    return () => {
      external?.removeEventListener("abort", onStop);
      if (handle) {
        process.removeListener("SIGTERM", onStop);
        process.removeListener("SIGINT", onStop);
      }
    };
  }
}

/** What the per-source loops need from run(): the mode, the stop signal, and how to commit. */
interface LoopContext {
  mode: RunMode;
  stop: AbortSignal;
  maxBatches: number | undefined;
  committedCursor(): Cursor;
  validate(records: readonly SourceRecord[]): Promise<ValidatedBatch>;
  /** Write and commit a validated batch; `started` is when its validation began. */
  write(
    cursor: Cursor | undefined,
    validated: ValidatedBatch,
    cut: BatchReport["cut"],
    endCursor: Cursor | undefined,
    started: number,
  ): Promise<BatchReport>;
  /** validate + write, one batch at a time (ack sources). */
  commit(
    cursor: Cursor | undefined,
    records: SourceRecord[],
    cut: BatchReport["cut"],
    endCursor: Cursor | undefined,
  ): Promise<BatchReport>;
  onCommitted(report: BatchReport): Promise<void>;
}

function positiveInt(option: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(option, `expected a whole number >= 1; got ${JSON.stringify(value)}`);
  }
  return value;
}

function isContract(x: unknown): x is Contract {
  return (
    typeof x === "object" &&
    x !== null &&
    "materialization" in x &&
    "rowRules" in x &&
    Array.isArray((x as Contract).fields)
  );
}
