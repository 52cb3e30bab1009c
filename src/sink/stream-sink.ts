import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { addCounts, positionOf, ZERO_COUNTS, type CommitHooks, type StreamPosition } from "../batch/commit.js";
import { validateRecords } from "../batch/validate.js";
import type { Counts, Cursor } from "../checkpoint/types.js";
import { loadContract } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { createEngine } from "../engine/index.js";
import type { Engine, EngineName } from "../engine/types.js";
import { ConfigError } from "../errors.js";
import { StreamRunError } from "./errors.js";
import type { BatchReport, RunOptions, StopReason, StreamRunSummary } from "./types.js";
import type { CheckpointOption } from "../pipeline/checkpoint-option.js";
import { batchLimits, positiveInt, readAheadDepth, recordLimits, type BatchOptions } from "../pipeline/options.js";
import { commitBatch, type StreamDestination } from "../pipeline/commit.js";
import { StreamPipeline, batchMoves } from "../pipeline/pipeline.js";
import { loadStart } from "../pipeline/start.js";
import { openTarget } from "../pipeline/target.js";
import { toSource, type SourceInput } from "../sources/index.js";
import type { RunMode, SourceLag } from "../sources/core/types.js";

export { StreamRunError };
export type { BatchReport, RunOptions, StopReason, StreamRunSummary };

export const RUN_MODES: readonly RunMode[] = ["available_now", "continuous"];

export interface StreamSinkOptions extends BatchOptions {
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
  /**
   * Start from the checkpoint store's position even when the lake already holds later batches
   * of this stream (its checkpoint was lost or deleted): without it such a run fails with
   * CheckpointLostError rather than write those batches again. The reset is reported with
   * `process.emitWarning`.
   */
  resetCheckpoint?: boolean;
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

/** What one run keeps while it goes: the committed position and the run's counts. */
interface RunState {
  position: StreamPosition | undefined;
  batches: number;
  counts: Counts;
  lastLag: SourceLag | undefined;
}

/**
 * The in-process runtime: fetch → validate → write → commit, in a loop over the stream pipeline
 * (src/pipeline), with the cursor committed only after the batch's rows are durable, and signal
 * handling for graceful stops. See docs/streamsink.md.
 */
export class StreamSink {
  private readonly readAhead: number;

  constructor(
    private readonly contractInput: string | Contract | Record<string, unknown>,
    private readonly sourceInput: SourceInput,
    private readonly options: StreamSinkOptions = {},
  ) {
    batchLimits(options); // a bad value fails here, not at run()
    this.readAhead = readAheadDepth(options.readAhead);
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
    const state: RunState = { position: undefined, batches: 0, counts: { ...ZERO_COUNTS }, lastLag: undefined };
    let resumedFrom: Cursor = null;
    let stoppedBy: StopReason = "end";

    const summary = (): StreamRunSummary => ({
      batches: state.batches,
      ...state.counts,
      cursor: state.position?.cursor ?? null,
      resumedFrom,
      startedAt,
      finishedAt: new Date(),
      stoppedBy,
      checkpointKey: key,
      totals: state.position?.totals ?? { ...ZERO_COUNTS },
      ...(state.lastLag ? { lag: state.lastLag } : {}),
    });

    try {
      const engine = await this.openEngine(resources);
      const target = await openTarget(contract, { targetPath: this.options.targetPath, checkpoint: this.options.checkpoint });
      resources.push(() => target.close());
      const perRecord = recordLimits(this.options);
      const pipeline = new StreamPipeline({
        source,
        mode,
        limits: batchLimits(this.options),
        validate: (records) => validateRecords(engine, contract, records, perRecord),
        stop: stop.signal,
      });
      resources.push(() => pipeline.close());
      state.position = positionOf(await loadStart(target, key, { resetCheckpoint: this.options.resetCheckpoint }));
      resumedFrom = state.position.cursor ?? null;
      await pipeline.open(state.position.cursor);
      const dest: StreamDestination = { target, key, writerId, hooks: this.options.hooks };
      stoppedBy = await this.loop(pipeline, dest, state, stop.signal, runOptions.maxBatches);
      return summary();
    } catch (err) {
      throw new StreamRunError(summary(), err);
    } finally {
      detach();
      for (const close of resources.reverse()) await close().catch(() => undefined);
    }
  }

  /**
   * Take a batch, write and commit it, repeat. For cursor sources the next `readAhead` batches
   * are read and validated meanwhile (at most readAhead + 1 held); writes stay one at a time and
   * in order, so every cursor is committed after its own rows and those before it (I1). After a
   * stop, the batches already read are written and committed first.
   */
  private async loop(
    pipeline: StreamPipeline,
    dest: StreamDestination,
    state: RunState,
    stop: AbortSignal,
    maxBatches: number | undefined,
  ): Promise<StopReason> {
    let taken = 0;
    let lastCursor = state.position!.cursor;
    while (true) {
      if (stop.aborted && pipeline.source.kind === "ack") return "signal";
      const batch = await pipeline.next(stop);
      taken++;
      if (!batch.exhausted && !stop.aborted) {
        const budget = maxBatches === undefined ? undefined : maxBatches - taken - pipeline.readAheadState().held;
        pipeline.readAhead(this.readAhead, budget === undefined ? {} : { budget });
      }
      if (batchMoves(batch, lastCursor)) {
        const committed = await commitBatch(dest, state.position!, batch);
        state.position = committed.position;
        await batch.committed(committed.record.cursor);
        await batch.acknowledge(); // I8: only after the commit
        const validated = await batch.validated();
        const after = await pipeline.progressAfter(committed.record.cursor);
        const report: BatchReport = {
          batchId: committed.record.batchId,
          sourceCount: validated.sourceCount,
          goodCount: validated.goodCount,
          badCount: validated.bad.length,
          supersededCount: validated.supersededCount,
          badAlreadyPresent: committed.write.badAlreadyPresent,
          cursor: committed.record.cursor,
          cut: batch.cut,
          ruleCounts: validated.ruleCounts,
          datasetRules: validated.datasetRules,
          totals: committed.record.totals,
          lag: after.lag,
          endCursor: after.endCursor,
          progress: after.progress,
          durationMs: Date.now() - batch.startedAt,
        };
        state.batches++;
        state.counts = addCounts(state.counts, report);
        if (report.lag) state.lastLag = report.lag;
        await this.options.onBatch?.(report);
        if (batch.cursor !== undefined) lastCursor = batch.cursor;
      }
      if (batch.exhausted) return "end";
      if (stop.aborted) {
        const ahead = pipeline.readAheadState();
        if (ahead.held === 0 && !ahead.collecting) return "signal";
      }
      if (maxBatches !== undefined && state.batches >= maxBatches) return "max-batches";
    }
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

function isContract(x: unknown): x is Contract {
  return (
    typeof x === "object" &&
    x !== null &&
    "materialization" in x &&
    "rowRules" in x &&
    Array.isArray((x as Contract).fields)
  );
}
