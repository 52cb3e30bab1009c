import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome, Counts, Cursor } from "../checkpoint/types.js";
import type { LakeWriter, WriteRequest, WriteResult, WriteStream } from "../lake/types.js";
import type { Source } from "../sources/core/types.js";
import { defineLazy } from "../util/lazy.js";
import type { ValidatedBatch } from "./validate.js";

/** Where a stream stands: what the last commit said. */
export interface StreamPosition {
  cursor: Cursor | undefined;
  batchId: number;
  totals: Counts;
  /** When `batchId` was committed; null before the first commit, undefined when not known. */
  committedAt?: Date | null;
}

export const ZERO_COUNTS: Readonly<Counts> = Object.freeze({ sourceCount: 0, goodCount: 0, badCount: 0 });

export function positionOf(record: CheckpointRecord | undefined): StreamPosition {
  return record
    ? { cursor: record.cursor, batchId: record.batchId, totals: { ...record.totals }, committedAt: record.committedAt }
    : { cursor: undefined, batchId: 0, totals: { ...ZERO_COUNTS }, committedAt: null };
}

/** How a source replays after a crash, as the lake needs to know it (CommitTarget.replay). */
export function replayOf(source: Source | undefined): WriteStream["replay"] {
  return source?.kind === "cursor" && source.replays === true ? "cursor" : "redeliver";
}

export interface CommitTarget {
  lake: LakeWriter;
  store: CheckpointStore;
  /** The store lives in the lake's own database: data and cursor commit in one transaction. */
  storeInTarget: boolean;
  key: string;
  writerId: string;
  /**
   * Whether the source gives back every record after the committed cursor when a run resumes
   * (`"cursor"`) or may deliver a record again after its batch committed (`"redeliver"`): how
   * the lake keeps quarantine rows unique (WriteStream). Omitted: as "redeliver".
   */
  replay?: WriteStream["replay"];
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
  if (previous.committedAt !== undefined) {
    request.stream = { key: target.key, replay: target.replay ?? "redeliver", previousCommittedAt: previous.committedAt };
  }
  let write: WriteResult;
  let outcome: CommitOutcome;
  if (target.storeInTarget) {
    request.checkpoint = record;
    write = await target.lake.write(request);
    outcome = write.checkpointOutcome ?? "committed";
  } else {
    // Compare-and-set before the write as well as at the commit: a rival writer on this key (I3)
    // then fails without touching the lake — the write may replace rows of batches the stream
    // has not committed (WriteStream), and those would be the rival's.
    if (decideCommit(await target.store.load(target.key), record) === "already-committed") {
      return { record, outcome: "already-committed", write: NOTHING_WRITTEN, position: positionAfter(record) };
    }
    write = await target.lake.write(request);
    await hooks.afterWrite?.(record.batchId);
    outcome = await target.store.commit(record);
  }
  return { record, outcome, write, position: positionAfter(record) };
}

const NOTHING_WRITTEN: Readonly<WriteResult> = Object.freeze({ goodWritten: 0, badWritten: 0, badAlreadyPresent: 0 });

function positionAfter(record: CheckpointRecord): StreamPosition {
  return { cursor: record.cursor, batchId: record.batchId, totals: record.totals, committedAt: record.committedAt };
}
