import type { CheckpointRecord, CheckpointStore, CommitOutcome, Counts, Cursor } from "../checkpoint/types.js";
import type { LakeWriter, WriteRequest, WriteResult } from "../lake/types.js";
import { defineLazy } from "../util/lazy.js";
import type { ValidatedBatch } from "./validate.js";

/** Where a stream stands: what the last commit said. */
export interface StreamPosition {
  cursor: Cursor | undefined;
  batchId: number;
  totals: Counts;
}

export const ZERO_COUNTS: Readonly<Counts> = Object.freeze({ sourceCount: 0, goodCount: 0, badCount: 0 });

export function positionOf(record: CheckpointRecord | undefined): StreamPosition {
  return record
    ? { cursor: record.cursor, batchId: record.batchId, totals: { ...record.totals } }
    : { cursor: undefined, batchId: 0, totals: { ...ZERO_COUNTS } };
}

export interface CommitTarget {
  lake: LakeWriter;
  store: CheckpointStore;
  /** The store lives in the lake's own database: data and cursor commit in one transaction. */
  storeInTarget: boolean;
  key: string;
  writerId: string;
}

export interface CommittedBatch {
  record: CheckpointRecord;
  outcome: CommitOutcome;
  write: WriteResult;
  position: StreamPosition;
}

/** Hooks for crash tests: a place to stop the world between the write and the commit. */
export interface CommitHooks {
  afterWrite?: (batchId: number) => Promise<void> | void;
}

/**
 * Steps 5 and 6 of the batch lifecycle: write good and bad rows, then commit the cursor with
 * compare-and-set. The cursor is never durable before the rows are (I1); a replay of the same
 * batch is harmless because merge targets and quarantine are idempotent (I2).
 */
export async function writeAndCommit(
  target: CommitTarget,
  previous: StreamPosition,
  cursor: Cursor | undefined,
  batch: ValidatedBatch,
  hooks: CommitHooks = {},
): Promise<CommittedBatch> {
  const counts: Counts = {
    sourceCount: batch.sourceCount,
    goodCount: batch.goodCount,
    badCount: batch.bad.length,
  };
  const record: CheckpointRecord = {
    key: target.key,
    cursor: cursor === undefined ? previous.cursor ?? null : cursor,
    batchId: previous.batchId + 1,
    committedAt: new Date(),
    batch: counts,
    totals: {
      sourceCount: previous.totals.sourceCount + counts.sourceCount,
      goodCount: previous.totals.goodCount + counts.goodCount,
      badCount: previous.totals.badCount + counts.badCount,
    },
    writerId: target.writerId,
  };
  // Built field by field, not spread: reading `good` could build rows the writer does not need.
  const request = { batchId: record.batchId, bad: batch.bad } as WriteRequest;
  defineLazy(request, "good", () => batch.good);
  if (batch.goodColumns) request.goodColumns = batch.goodColumns;
  let write: WriteResult;
  let outcome: CommitOutcome;
  if (target.storeInTarget) {
    request.checkpoint = record;
    write = await target.lake.write(request);
    outcome = write.checkpointOutcome ?? "committed";
  } else {
    write = await target.lake.write(request);
    await hooks.afterWrite?.(record.batchId);
    outcome = await target.store.commit(record);
  }
  return {
    record,
    outcome,
    write,
    position: { cursor: record.cursor, batchId: record.batchId, totals: record.totals },
  };
}
