/**
 * A stream's settings, resolved in one place for every front door — StreamSink, `lakelogic run`,
 * `lakelogic start` and the Temporal workers: the defaults, then what the contract declares (its
 * trigger, a `type: stream` source's run options, `materialization.target_path`), then what the
 * caller says (options, flags, the workflow input). Nothing here opens anything (./open.ts does).
 */
import { join } from "node:path";
import type { CheckpointStore } from "../checkpoint/types.js";
import { defaultCheckpointKey } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import type { RunMode, Source } from "../sources/core/types.js";
import type { Environment } from "../sources/core/spec.js";
import { streamRunSettings } from "../sources/index.js";
import { checkLakeLocation, DEFAULT_TARGET_PATH, SHARED_FORMATS } from "../lake/index.js";
import { memoryProfile } from "../util/memory-profile.js";
import type { TriggerRunMode } from "../contract/normalise/trigger.js";
import { DEFAULT_MAX_RECORD_BYTES, type RecordLimits } from "./limits.js";
import type { BatchLimits } from "./collect.js";

/**
 * How a run goes: `available_now` drains to the end snapshot and stops; `continuous` cuts the
 * next batch as soon as the one before is committed; `processing_time` starts a batch every
 * interval (Spark's Trigger.ProcessingTime). A source sees only how it is read (`RunMode`):
 * processing_time reads it as continuous (see `readModeOf`).
 */
export type StreamMode = TriggerRunMode;

export const RUN_MODES: readonly StreamMode[] = ["available_now", "continuous", "processing_time"];

/** Where the cursor lives: a store, `"target"` (in the lake's own commit), `"memory"`, an object-store URI or a SQLite path. */
export type CheckpointOption = CheckpointStore | "target" | "memory" | string;

export { DEFAULT_TARGET_PATH };

/** How a stream cuts its batches: the options every front door takes. */
export interface BatchOptions {
  /**
   * Records per batch, a hard cap. Unset: batches start at 1000 records and grow, while the
   * source reports a backlog, up to 100,000 and `maxBatchBytes` (docs/streamsink.md, "Batch size").
   */
  batchSize?: number;
  /** Bytes per batch (raw payload, or an estimate), whatever its count: the memory budget. Default 2 MiB. */
  maxBatchBytes?: number;
  /** A batch is cut at most this long after its first record arrived. Default 1000 ms. */
  maxWaitMs?: number;
  /**
   * Largest record: its raw payload in bytes, or for an object without one, its JSON text
   * (estimated from below). A larger record is quarantined (rule `limit`) before validation,
   * and the stream goes on. Default 16 MiB.
   */
  maxRecordBytes?: number;
}

/** What a caller may say about a stream; anything left out comes from the contract, then the defaults. */
export interface StreamOverrides extends BatchOptions {
  mode?: StreamMode;
  /** processing_time: a batch starts every this many ms. */
  intervalMs?: number;
  checkpointKey?: string;
  checkpoint?: CheckpointOption;
  /** Lake directory or URI; overrides `materialization.target_path`. */
  targetPath?: string;
  readAhead?: number;
  resetCheckpoint?: boolean;
}

/** A stream's settings, every one decided. */
export interface StreamSettings {
  contract: Contract;
  /** Checkpoint key: the caller's, else `stream::<dataset>`. */
  key: string;
  mode: StreamMode;
  /** processing_time: the interval between batch starts (ms); undefined in the other modes. */
  intervalMs: number | undefined;
  /** The caller's, else the contract's `materialization.target_path`, else `./lake`. */
  targetPath: string;
  /**
   * The caller's, else the contract's (`type: stream`), else `"target"` for a shared format (delta)
   * and `<targetPath>/_lakelogic/checkpoints.sqlite` for a local one.
   */
  checkpoint: CheckpointOption;
  limits: BatchLimits;
  record: RecordLimits;
  /** Batches read and validated while the one before is written. */
  readAhead: number;
  resetCheckpoint: boolean;
  /** The contract's source config (with the run's defaults, e.g. a Kafka consumer group), if it has one. */
  source: { type: string; [option: string]: unknown } | undefined;
}

/** The one set of defaults, for every front door. */
export const PIPELINE_DEFAULTS = Object.freeze({
  /** Records per batch: where a batch starts, and at a source's head. */
  batchSize: 1000,
  /** The most records a batch grows to under a backlog when the user sets no `batchSize`. */
  grownBatchSize: 100_000,
  /**
   * A batch's bytes, the bound of batches that grow: a record in memory (parsed, its raw text,
   * validated) costs several times its raw bytes, and a file → lake drain at this budget peaks
   * about where fixed 10,000-record batches of order events did (docs/benchmarks.md).
   */
  maxBatchBytes: 2 * 1024 * 1024,
  maxWaitMs: 1000,
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  /** Batches read and validated while the one before is written (1 under the lean memory profile). */
  readAhead: 2,
  leanReadAhead: 1,
});

export interface ResolveOptions {
  /** The mode when neither the caller nor the contract's trigger names one. Default available_now. */
  fallbackMode?: StreamMode;
  /** `LAKELOGIC_CHECKPOINT_ROOT` and the `env:` references of run options. Default process.env. */
  env?: Environment;
}

/** Resolve a stream's settings: defaults ← contract ← caller. A bad value is a ConfigError naming it. */
export function resolveStreamSettings(contract: Contract, caller: StreamOverrides = {}, options: ResolveOptions = {}): StreamSettings {
  const declared = streamRunSettings(contract, options.env);
  const mode = caller.mode === undefined ? (declared.mode ?? options.fallbackMode ?? "available_now") : checkRunMode(caller.mode);
  const targetPath = caller.targetPath ?? contract.materialization.targetPath ?? DEFAULT_TARGET_PATH;
  // Before any path is made absolute (the CLI does for the workers): a URI is never a directory name.
  checkLakeLocation(targetPath, contract.materialization.format);
  const batch: BatchOptions = {
    ...caller,
    batchSize: caller.batchSize ?? declared.batchSize,
    maxWaitMs: caller.maxWaitMs ?? declared.maxWaitMs,
  };
  return {
    contract,
    key: caller.checkpointKey ?? defaultCheckpointKey(contract),
    mode,
    intervalMs: mode === "processing_time" ? nonNegative("interval", caller.intervalMs ?? declared.intervalMs ?? 0) : undefined,
    targetPath,
    checkpoint: caller.checkpoint ?? declared.checkpoint ?? defaultCheckpoint(contract, targetPath),
    limits: batchLimits(batch),
    record: recordLimits(batch),
    readAhead: readAheadDepth(caller.readAhead),
    resetCheckpoint: caller.resetCheckpoint === true,
    source: declared.source,
  };
}

/**
 * Where a stream keeps its checkpoints when neither the caller nor the contract says: in the
 * table itself for a shared format (its commits carry the stream's batch, on whichever machine
 * writes it), else a SQLite file beside the lake.
 */
export function defaultCheckpoint(contract: Contract, targetPath: string): CheckpointOption {
  return SHARED_FORMATS.includes(contract.materialization.format) ? "target" : defaultCheckpointPath(targetPath);
}

/** The SQLite checkpoint file beside a local lake. */
export function defaultCheckpointPath(targetPath: string): string {
  return join(targetPath, "_lakelogic", "checkpoints.sqlite");
}

/** `mode` is one of RUN_MODES; a ConfigError naming it otherwise. */
export function checkRunMode(mode: unknown): StreamMode {
  if (!RUN_MODES.includes(mode as StreamMode)) {
    throw new ConfigError("mode", `expected one of ${RUN_MODES.join(", ")}; got ${JSON.stringify(mode)}`);
  }
  return mode as StreamMode;
}

/** How the source is read in `mode`: a processing_time run keeps reading between its triggers. */
export function readModeOf(mode: StreamMode): RunMode {
  return mode === "available_now" ? "available_now" : "continuous";
}

/**
 * Refuse a mode the source declares it cannot serve (`Source.modes`), before anything is opened:
 * a push endpoint in available_now would listen for a moment, call that a drain, and turn away
 * the deliveries that come after.
 */
export function assertSourceServes(source: Source, mode: RunMode): void {
  const declared = source.modes === undefined && source.continuousOnly === true;
  const modes = declared ? ["continuous"] : source.modes;
  if (modes === undefined || modes.includes(mode)) return;
  const only = modes.join(", ");
  const how = `Run it "continuous" (a signal, stop or maxBatches ends the run)`;
  let why = `it serves only ${only}`;
  if (mode === "available_now") {
    why = declared
      ? `it declares continuousOnly: it follows a feed that has no end, so a drain would never finish. ${how}`
      : "it receives only what is pushed to it while it runs, so there is no backlog to drain and no end to stop at. " +
        `${how}, or let the sender write to a queue or Kafka topic and drain that on a schedule`;
  }
  throw new ConfigError("mode", `${source.description} cannot run ${mode} (it runs ${only} only): ${why}`);
}

/** Batch limits from the options, defaults filled in; a ConfigError names a bad value. */
export function batchLimits(options: BatchOptions): BatchLimits {
  recordLimits(options); // every stream option is checked together, when the runtime is set up
  return {
    maxRecords: positiveInt("batchSize", options.batchSize ?? PIPELINE_DEFAULTS.batchSize),
    // A batchSize of the user's is a hard cap: only the default grows.
    ...(options.batchSize === undefined ? { growTo: PIPELINE_DEFAULTS.grownBatchSize } : {}),
    maxBytes: positiveInt("maxBatchBytes", options.maxBatchBytes ?? PIPELINE_DEFAULTS.maxBatchBytes),
    maxWaitMs: positiveInt("maxWaitMs", options.maxWaitMs ?? PIPELINE_DEFAULTS.maxWaitMs),
  };
}

/** Per-record limits from the options, defaults filled in; a ConfigError names a bad value. */
export function recordLimits(options: BatchOptions): RecordLimits {
  return { maxRecordBytes: positiveInt("maxRecordBytes", options.maxRecordBytes ?? PIPELINE_DEFAULTS.maxRecordBytes) };
}

/** The read-ahead depth: the caller's, else the memory profile's default. */
export function readAheadDepth(readAhead: number | undefined): number {
  const fallback = memoryProfile() === "lean" ? PIPELINE_DEFAULTS.leanReadAhead : PIPELINE_DEFAULTS.readAhead;
  return positiveInt("readAhead", readAhead ?? fallback);
}

export function positiveInt(option: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(option, `expected a whole number >= 1; got ${JSON.stringify(value)}`);
  }
  return value;
}

function nonNegative(option: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new ConfigError(option, `expected milliseconds >= 0; got ${JSON.stringify(value)}`);
  return value;
}
