import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Counts, Cursor } from "../checkpoint/types.js";
import { checkContractSql, loadContract, parseProcessingTime } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { createEngine } from "../engine/index.js";
import type { Engine, EngineName } from "../engine/types.js";
import { ConfigError } from "../errors.js";
import { StreamRunError } from "./errors.js";
import type { BatchReport, RunOptions, StopReason, StreamRunSummary } from "./types.js";
import { addCounts, commitBatch, positionOf, ZERO_COUNTS, type CommitHooks, type StreamDestination, type StreamPosition } from "../pipeline/commit.js";
import { openStream } from "../pipeline/open.js";
import { streamStart, type StreamStart } from "../pipeline/start.js";
import { addRules, failedDatasetRules, noRules, type RuleTotals } from "../pipeline/rule-tally.js";
import { StreamPipeline, batchMoves } from "../pipeline/pipeline.js";
import {
  assertSourceServes,
  batchLimits,
  checkRunMode,
  positiveInt,
  readAheadDepth,
  readModeOf,
  resolveStreamSettings,
  RUN_MODES,
  type BatchOptions,
  type CheckpointOption,
  type StreamMode,
} from "../pipeline/settings.js";
import { assertTargetTakesDeletes } from "../pipeline/deletes.js";
import { SYSTEM_CLOCK, TriggerSchedule, type TriggerClock } from "../pipeline/trigger.js";
import { CursorFnSource, toSource, type CursorFn, type ResumableIterable, type SourceInput } from "../sources/index.js";
import type { Source, SourceLag } from "../sources/core/types.js";
import { optionNames, refuseUnknownOptions } from "../sources/core/unknown-options.js";
import { PYTHON_SINK_OPTIONS } from "../python/sink-options.js";
import { defaultLogger, type Logger } from "../observe/logger.js";
import type { StreamLabels, StreamMetrics } from "../observe/metrics.js";
import { SPANS, inStage, type StageSpan } from "../observe/trace.js";

export { StreamRunError, RUN_MODES };
export type { BatchReport, RunOptions, StopReason, StreamRunSummary, StreamMode, StreamStart };

/** What `run()` takes: RunOptions and, for processing_time, the interval. */
export interface SinkRunOptions extends RunOptions {
  /**
   * processing_time: a batch starts every interval — `"30 seconds"`, `"30s"` or milliseconds.
   * Default: the contract's `processing_time`; without one, 0 (each batch right after the last).
   */
  interval?: string | number;
}

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
  /**
   * Called once the checkpoint is loaded and the source is open, before the first batch: the
   * source, the cursor the run goes on from, the target (`lakelogic run` logs it as `stream started`).
   */
  onStart?: (start: StreamStart) => void | Promise<void>;
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
  /**
   * For a source given as a function `(after) => iterable`: the cursor of a record. After each
   * batch the checkpoint stores `cursorFn(last record of the batch)`, and a new run calls the
   * function with the stored cursor (undefined on the first run), so it resumes after it.
   */
  cursorFn?: CursorFn;
  /**
   * Where the sink logs (a checkpoint reset at warn, each committed batch at debug). Default: the
   * process logger (`defaultLogger()`, text at info on stderr). See docs/observability.md.
   */
  logger?: Logger;
  /** Prometheus metrics to record each committed batch into (labels: the dataset and checkpoint key). */
  metrics?: StreamMetrics;
  /** @internal test hooks (crash tests pause between write and commit). */
  hooks?: CommitHooks;
  /** @internal the clock processing_time waits on (tests drive one by hand). */
  clock?: TriggerClock;
}

/** Every option name, for the refusal of unknown ones (the compiler keeps it complete). */
const SINK_OPTIONS = optionNames<StreamSinkOptions>()([
  "batchSize",
  "maxBatchBytes",
  "maxWaitMs",
  "maxRecordBytes",
  "engine",
  "checkpoint",
  "checkpointKey",
  "resetCheckpoint",
  "targetPath",
  "signal",
  "onStart",
  "onBatch",
  "handleSignals",
  "writerId",
  "readAhead",
  "cursorFn",
  "logger",
  "metrics",
  "hooks",
  "clock",
]);
const RUN_OPTIONS = optionNames<SinkRunOptions>()(["maxBatches", "interval"]);
/** What the loop of one run carries from batch to batch. */
interface Turn {
  pipeline: StreamPipeline;
  dest: StreamDestination;
  state: RunState;
  stop: AbortSignal;
  maxBatches: number | undefined;
  labels: StreamLabels;
  taken: number;
  lastCursor: Cursor | undefined;
  /** processing_time: when triggers start (one batch each, no read-ahead). */
  schedule: TriggerSchedule | undefined;
}

/** What StreamSink reads from: a source, or with `cursorFn` a function that resumes after a cursor. */
export type StreamSinkSource = SourceInput | ResumableIterable;

/** What one run keeps while it goes: the committed position and the run's counts. */
interface RunState {
  position: StreamPosition | undefined;
  batches: number;
  counts: Counts;
  rules: RuleTotals;
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
    private readonly sourceInput: StreamSinkSource,
    private readonly options: StreamSinkOptions = {},
  ) {
    refuseUnknownOptions("StreamSink", options, SINK_OPTIONS, PYTHON_SINK_OPTIONS);
    batchLimits(options); // a bad value fails here, not at run()
    this.readAhead = readAheadDepth(options.readAhead);
    if (sourceInput === undefined || sourceInput === null) {
      throw new ConfigError("source", "expected a source, a connector with stream(), or an iterable; got nothing");
    }
    checkCursorFn(sourceInput, options.cursorFn);
  }

  /**
   * Run the stream. Without a mode, the contract's trigger decides (`available_now`/`once` drain,
   * `continuous`/`micro_batch` keep running, `processing_time` runs a batch every interval);
   * without a trigger, available_now.
   */
  async run(mode?: StreamMode, runOptions: SinkRunOptions = {}): Promise<StreamRunSummary> {
    if (mode !== undefined) checkRunMode(mode);
    refuseUnknownOptions("run", runOptions, RUN_OPTIONS);
    if (runOptions.maxBatches !== undefined) positiveInt("maxBatches", runOptions.maxBatches);
    if (runOptions.interval !== undefined && mode !== undefined && mode !== "processing_time") {
      throw new ConfigError("interval", `goes with the processing_time mode; got mode ${JSON.stringify(mode)}`);
    }

    const contract = isContract(this.contractInput) ? this.contractInput : await loadContract(this.contractInput);
    // A contract built by parseContract or by hand: its sql rules bind before anything opens.
    await checkContractSql(contract);
    const { checkpoint, checkpointKey, targetPath, resetCheckpoint, batchSize, maxBatchBytes, maxWaitMs, maxRecordBytes, readAhead } = this.options;
    const intervalMs = runOptions.interval === undefined ? undefined : intervalOf(runOptions.interval);
    const settings = resolveStreamSettings(contract, {
      ...(mode !== undefined ? { mode } : {}),
      ...(intervalMs !== undefined ? { intervalMs } : {}),
      checkpoint,
      checkpointKey,
      targetPath,
      resetCheckpoint,
      batchSize,
      maxBatchBytes,
      maxWaitMs,
      maxRecordBytes,
      readAhead,
    });
    const source = this.openSource();
    // Before anything opens: a push source in available_now is refused, not run for a moment.
    assertSourceServes(source, readModeOf(settings.mode));
    assertTargetTakesDeletes(source, contract);
    const { key } = settings;
    const writerId = this.options.writerId ?? `sink:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

    const stop = new AbortController();
    const detach = this.attachStopSignals(settings.mode, stop);
    const resources: Array<() => Promise<void>> = [];
    const startedAt = new Date();
    const state: RunState = { position: undefined, batches: 0, counts: { ...ZERO_COUNTS }, rules: noRules(), lastLag: undefined };
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
      rules: state.rules,
      ...(state.lastLag ? { lag: state.lastLag } : {}),
    });

    try {
      const stream = await openStream(settings, await this.openEngine(resources));
      resources.push(() => stream.close());
      const pipeline = new StreamPipeline({ source, mode: settings.mode, limits: settings.limits, validate: stream.validate, stop: stop.signal });
      resources.push(() => pipeline.close());
      state.position = positionOf(await stream.start(this.warnTo()));
      resumedFrom = state.position.cursor ?? null;
      await pipeline.open(state.position.cursor);
      await this.options.onStart?.(streamStart(settings, source, state.position));
      const dest: StreamDestination = { target: stream.target, key, writerId, hooks: this.options.hooks };
      const labels = { stream: contract.dataset, checkpointKey: key };
      const schedule = settings.intervalMs === undefined ? undefined : new TriggerSchedule(settings.intervalMs, this.options.clock ?? SYSTEM_CLOCK);
      stoppedBy = await this.loop(pipeline, dest, state, stop.signal, runOptions.maxBatches, labels, schedule);
      return summary();
    } catch (err) {
      stoppedBy = "error";
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
    labels: StreamLabels,
    schedule?: TriggerSchedule,
  ): Promise<StopReason> {
    const turn: Turn = { pipeline, dest, state, stop, maxBatches, labels, taken: 0, lastCursor: state.position!.cursor, schedule };
    while (true) {
      if (stop.aborted && (pipeline.source.kind === "ack" || schedule)) return "signal";
      // One span per batch: its fetch, validate, write, commit and ack are its children.
      const stopped = await inStage(SPANS.batch, { "lakelogic.checkpoint_key": dest.key }, (span) => this.step(turn, span));
      if (stopped) return stopped;
      // processing_time: wait for the next trigger (an empty one committed nothing: batchMoves).
      await schedule?.waitForNext(stop);
    }
  }

  /** One turn of the loop: take a batch, write and commit it; a StopReason when the run ends. */
  private async step(loop: Turn, span: StageSpan): Promise<StopReason | undefined> {
    const { pipeline, dest, state, stop, maxBatches, labels } = loop;
    const batch = await pipeline.next(stop);
    const taken = ++loop.taken;
    // processing_time reads nothing ahead: each trigger's batch is cut when the trigger starts.
    if (!loop.schedule && !batch.exhausted && !stop.aborted) {
      const budget = maxBatches === undefined ? undefined : maxBatches - taken - pipeline.readAheadState().held;
      pipeline.readAhead(this.readAhead, budget === undefined ? {} : { budget });
    }
    if (batchMoves(batch, loop.lastCursor)) {
      const committed = await commitBatch(dest, state.position!, batch);
      state.position = committed.position;
      await batch.committed(committed.record.cursor);
      await batch.acknowledge(); // I8: only after the commit
      const validated = await batch.validated();
      const after = await pipeline.progressAfter(committed.record.cursor);
      const report: BatchReport = {
        batchId: committed.record.batchId,
        sourceCount: validated.sourceCount,
        bytes: batch.bytes,
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
      state.rules = addRules(state.rules, report);
      if (report.lag) state.lastLag = report.lag;
      span.setAttributes({ "lakelogic.batch.id": report.batchId, "lakelogic.records": report.sourceCount });
      this.options.metrics?.recordBatch(labels, report);
      this.logger().debug("batch committed", { key: dest.key, batch: report.batchId, records: report.sourceCount, durationMs: report.durationMs });
      for (const failed of failedDatasetRules(report)) this.logger().warn("dataset rule failed", { key: dest.key, batch: report.batchId, ...failed });
      await this.options.onBatch?.(report);
      if (batch.cursor !== undefined) loop.lastCursor = batch.cursor;
    } else if (!batch.exhausted) {
      // Polled, nothing new: the stream is caught up, which its checkpoint age must not count.
      this.options.metrics?.recordCaughtUp(labels);
    }
    if (batch.exhausted) return "end";
    if (stop.aborted) {
      const ahead = pipeline.readAheadState();
      if (ahead.held === 0 && !ahead.collecting) return "signal";
    }
    if (maxBatches !== undefined && state.batches >= maxBatches) return "max-batches";
    return undefined;
  }

  private logger(): Logger {
    return this.options.logger ?? defaultLogger();
  }

  /** A checkpoint reset is reported through the logger when one was given (else a process warning). */
  private warnTo(): { onWarning?: (message: string) => void } {
    const logger = this.options.logger;
    return logger ? { onWarning: (message) => logger.warn(message, { code: "LAKELOGIC_CHECKPOINT_RESET" }) } : {};
  }

  private openSource(): Source {
    const { cursorFn } = this.options;
    if (cursorFn) return new CursorFnSource(this.sourceInput as ResumableIterable, cursorFn);
    return toSource(this.sourceInput as SourceInput);
  }

  private async openEngine(resources: Array<() => Promise<void>>): Promise<Engine> {
    const e = this.options.engine ?? "duckdb";
    if (typeof e !== "string") return e;
    const engine = await createEngine(e);
    resources.push(() => engine.close());
    return engine;
  }

  /** In continuous and processing_time runs, SIGTERM/SIGINT (and the caller's signal) stop after the batches in flight. */
  private attachStopSignals(mode: StreamMode, stop: AbortController): () => void {
    const onStop = () => stop.abort();
    const external = this.options.signal;
    if (external?.aborted) stop.abort();
    external?.addEventListener("abort", onStop, { once: true });
    const handle = mode !== "available_now" && (this.options.handleSignals ?? true);
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

/** A run's `interval` in ms: a number of ms, or text such as "30 seconds" / "30s". */
function intervalOf(interval: string | number): number {
  const ms = typeof interval === "number" ? interval : parseProcessingTime(interval);
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
    throw new ConfigError("interval", `expected an interval such as "30 seconds", "30s" or milliseconds; got ${JSON.stringify(interval)}`);
  }
  return ms;
}

/**
 * `cursorFn` goes with a function that resumes after a cursor, and only with one: a plain
 * iterable cannot be told where to resume (it keeps its own rules, see IterableSource), and a
 * cursor or ack source has a position of its own that a cursorFn would contradict.
 */
function checkCursorFn(source: StreamSinkSource, cursorFn: CursorFn | undefined): void {
  if (cursorFn === undefined) {
    if (typeof source === "function") {
      throw new ConfigError(
        "cursorFn",
        "the source is a function (after) => iterable, which needs cursorFn: (record) => cursor to say where each record sits",
      );
    }
    return;
  }
  if (typeof cursorFn !== "function") throw new ConfigError("cursorFn", `expected a function (record) => cursor; got ${typeof cursorFn}`);
  const kind = (source as { kind?: unknown }).kind;
  if (typeof source === "object" && (kind === "cursor" || kind === "ack")) {
    const described = (source as { description?: unknown }).description;
    const name = typeof described === "string" ? described : "the source";
    throw new ConfigError("cursorFn", `${name} has a cursor of its own (a ${kind} source); cursorFn is for a function (after) => iterable`);
  }
  if (typeof source !== "function") {
    throw new ConfigError(
      "source",
      "with cursorFn, expected a function (after) => iterable that resumes after the stored cursor; " +
        "a plain iterable cannot be told where to resume; pass (after) => iterable, or drop cursorFn",
    );
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
