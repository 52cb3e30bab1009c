import type { CheckpointRecord } from "../checkpoint/types.js";
import { CheckpointForeignError, CheckpointLostError } from "./errors.js";
import type { StreamTarget } from "./target.js";

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
 * Where a stream starts, as both runtimes open it: the checkpoint store's record, checked against
 * the commit log the lake keeps with the rows. The lake may hold one batch more than the store (a
 * batch written whose commit did not happen: it is written again, harmlessly); more than that
 * means the store lost the stream's record, and the stream does not start (CheckpointLostError)
 * unless `resetCheckpoint` says to. A checkpoint kept in the lake itself commits with the rows,
 * so it cannot fall behind them.
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
