/**
 * Opening a stream, once for both runtimes and the CLI: from its resolved settings (./settings.ts)
 * the lake target and its checkpoint store, the position to start from (checked against the
 * lake's own commit log) and the validator. StreamSink and the Temporal runtime read, write and
 * commit through what this hands them; neither opens any of it on its own.
 */
import { openCheckpointLocation } from "../checkpoint/location.js";
import { MemoryCheckpointStore } from "../checkpoint/memory.js";
import type { CheckpointRecord, CheckpointStore } from "../checkpoint/types.js";
import type { Contract } from "../contract/types.js";
import type { Engine } from "../engine/types.js";
import { ConfigError } from "../errors.js";
import { openLake } from "../lake/index.js";
import type { LakeWriter } from "../lake/types.js";
import type { SourceRecord } from "../sources/core/types.js";
import type { Validator } from "./batch.js";
import { CheckpointForeignError, CheckpointLostError, LakeNotSharedError } from "./errors.js";
import type { CheckpointOption, StreamSettings } from "./settings.js";
import { validateRecords, type ValidatedBatch } from "./validate.js";

/** Where a stream's batches go: the lake writer and the checkpoint store that closes each batch. */
export interface StreamTarget {
  lake: LakeWriter;
  store: CheckpointStore;
  /** The store lives in the lake's own database: data and cursor commit in one transaction. */
  inTarget: boolean;
  close(): Promise<void>;
}

/** A stream, opened: its settings, target and validator, and where it starts. */
export interface OpenedStream {
  readonly settings: StreamSettings;
  readonly target: StreamTarget;
  /** Validates a batch's records with the stream's contract, engine and record limits. */
  readonly validate: Validator;
  /** Where the stream starts: the store's record, checked against the lake (see `loadStart`). */
  start(options?: { onWarning?: (message: string) => void }): Promise<CheckpointRecord | undefined>;
  /** Closes the target when this stream opened it (not one it was handed). */
  close(): Promise<void>;
}

/**
 * Open a stream from its settings. `target`: a target already open for the same lake and
 * checkpoint (a worker shares one among its streams: a DuckDB file opens once per process).
 */
export async function openStream(settings: StreamSettings, engine: Engine, shared?: StreamTarget): Promise<OpenedStream> {
  const target = shared ?? (await openTarget(settings.contract, settings));
  const { contract, record, key, resetCheckpoint } = settings;
  return {
    settings,
    target,
    validate: (records: readonly SourceRecord[]): Promise<ValidatedBatch> => validateRecords(engine, contract, records, record),
    start: (options = {}) => loadStart(target, key, { resetCheckpoint, ...options }),
    close: () => (shared ? Promise.resolve() : target.close()),
  };
}

/** Open a contract's lake at `targetPath` and its checkpoint store. */
export async function openTarget(contract: Contract, where: { targetPath: string; checkpoint: CheckpointOption }): Promise<StreamTarget> {
  const lake = await openLake(contract, { targetPath: where.targetPath });
  try {
    const { store, inTarget } = await openCheckpoint(where.checkpoint, lake, contract);
    return {
      lake,
      store,
      inTarget,
      async close() {
        if (!inTarget) await store.close().catch(() => undefined);
        await lake.close().catch(() => undefined);
      },
    };
  } catch (err) {
    await lake.close().catch(() => undefined);
    throw err;
  }
}

/** A lake writer that can keep checkpoints in its own database (duckdb format). */
interface CheckpointingWriter extends LakeWriter {
  checkpointStore(): CheckpointStore;
}

function canCheckpoint(lake: LakeWriter): lake is CheckpointingWriter {
  return typeof (lake as Partial<CheckpointingWriter>).checkpointStore === "function";
}

export async function openCheckpoint(option: CheckpointOption, lake: LakeWriter, contract: Contract): Promise<{ store: CheckpointStore; inTarget: boolean }> {
  if (option === "memory") return { store: new MemoryCheckpointStore(), inTarget: false };
  if (option === "target") {
    if (contract.materialization.format === "parquet" || !canCheckpoint(lake)) {
      throw new ConfigError(
        "checkpoint",
        `"target" keeps the cursor in the lake's own commits, so it needs materialization.format duckdb or delta; ` +
          `this contract writes ${contract.materialization.format}. Use a SQLite path or a CheckpointStore instead.`,
      );
    }
    return { store: lake.checkpointStore(), inTarget: true };
  }
  if (typeof option === "string") {
    // An object-store URI (s3://, abfss://, gs://, an Azure Blob URL) or a local SQLite path;
    // any other URI is refused, never taken for a file name.
    return { store: await openCheckpointLocation(option), inTarget: false };
  }
  if (typeof option.load !== "function" || typeof option.commit !== "function") {
    throw new ConfigError("checkpoint", 'expected a CheckpointStore (load/commit/close), "target", "memory", an object-store URI (s3://, abfss://, gs://) or a SQLite file path');
  }
  return { store: option, inTarget: false };
}

export interface StartOptions {
  /**
   * Start from the checkpoint store's position even though the lake holds later batches of the
   * stream (a checkpoint lost or deleted on purpose): those batches are written again.
   */
  resetCheckpoint?: boolean;
  /** Where the notice of a reset goes. Default `process.emitWarning`. */
  onWarning?: (message: string) => void;
}

/**
 * Where a stream starts: the checkpoint store's record, checked against the commit log the lake
 * keeps with the rows. The lake may hold one batch more than the store (a batch written whose
 * commit did not happen: it is written again, harmlessly); more than that means the store lost
 * the stream's record, and the stream does not start (CheckpointLostError) unless
 * `resetCheckpoint` says to. A checkpoint kept in the lake itself commits with the rows, so it
 * cannot fall behind them.
 */
export async function loadStart(target: StreamTarget, key: string, options: StartOptions = {}): Promise<CheckpointRecord | undefined> {
  const stored = await target.store.load(key);
  if (stored === undefined && !options.resetCheckpoint) {
    const foreign = await target.store.foreignCheckpoint?.(key);
    if (foreign !== undefined) throw new CheckpointForeignError(key, foreign, target.store.location ?? "the checkpoint store");
  }
  if (target.inTarget || !target.lake.lastCommit) return stored;
  const held = await target.lake.lastCommit(key);
  if (!held || held.batchId <= (stored?.batchId ?? 0) + 1) return stored;
  const where = target.store.location === undefined ? "the checkpoint store" : `the checkpoint store ${target.store.location}`;
  if (!options.resetCheckpoint) throw new CheckpointLostError(key, held.batchId, stored?.batchId, where);
  const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, { code: "LAKELOGIC_CHECKPOINT_RESET" }));
  warn(
    `checkpoint "${key}": starting over from ${stored ? `batch ${stored.batchId}` : "the beginning"} as resetCheckpoint asks, ` +
      `though the lake holds batch ${held.batchId} of this stream: those batches are read and written again`,
  );
  return stored;
}

/**
 * The Temporal runtime's check before a worker writes a batch after `committedBatchId`: a local
 * lake (duckdb, parquet) on this worker must hold the stream's batches up to there, as its commit
 * log says (streams whose position is a cursor log every batch). A lake on another machine's
 * disk fails with LakeNotSharedError instead of receiving the rest of the stream. A shared
 * format, or a checkpoint kept in the table, needs no check: its commits are the checkpoint.
 */
export async function assertLakeHolds(target: StreamTarget, key: string, committedBatchId: number, logsCursor: boolean): Promise<void> {
  if (committedBatchId === 0) return;
  // A checkpoint in the lake is the lake's own record of the stream.
  if (target.inTarget) return assertStoreHolds(key, committedBatchId, await target.store.load(key), "the lake");
  if (!logsCursor || !target.lake.lastCommit) return;
  const held = await target.lake.lastCommit(key);
  const found = held?.batchId ?? 0;
  if (found < committedBatchId) throw new LakeNotSharedError(key, committedBatchId, found, "the lake");
}

/** The stream's start as a worker's store has it must not be behind what the workflow committed. */
export function assertStoreHolds(key: string, committedBatchId: number, stored: CheckpointRecord | undefined, what = "the checkpoint store"): void {
  const found = stored?.batchId ?? 0;
  if (found < committedBatchId) throw new LakeNotSharedError(key, committedBatchId, found, what);
}

