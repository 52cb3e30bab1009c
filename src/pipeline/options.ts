import type { BatchLimits } from "../batch/collect.js";
import { DEFAULT_MAX_RECORD_BYTES, type RecordLimits } from "../batch/limits.js";
import { ConfigError } from "../errors.js";
import { memoryProfile } from "../util/memory-profile.js";

/** How a stream cuts its batches and how far it reads ahead: the options both runtimes take. */
export interface BatchOptions {
  /** Records per batch. Default 1000. */
  batchSize?: number;
  /** Bytes per batch (raw payload, or an estimate). Default 16 MiB. */
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

/** The one set of defaults, for StreamSink and the Temporal runtime alike. */
export const PIPELINE_DEFAULTS = Object.freeze({
  batchSize: 1000,
  maxBatchBytes: 16 * 1024 * 1024,
  maxWaitMs: 1000,
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  /** Batches read and validated while the one before is written (1 under the lean memory profile). */
  readAhead: 2,
  leanReadAhead: 1,
});

/** Batch limits from the options, defaults filled in; a ConfigError names a bad value. */
export function batchLimits(options: BatchOptions): BatchLimits {
  recordLimits(options); // every stream option is checked together, when the runtime is set up
  return {
    maxRecords: positiveInt("batchSize", options.batchSize ?? PIPELINE_DEFAULTS.batchSize),
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
