import { resolve } from "node:path";
import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome, Counts, Cursor } from "../checkpoint/types.js";
import type { LakeWriter, WriteRequest, WriteResult, WriteStream } from "../lake/types.js";
import { SPANS, inStage, startStage, type StageSpan } from "../observe/trace.js";
import { defineLazy } from "../util/lazy.js";
import type { PipelineBatch } from "./batch.js";
import type { StreamTarget } from "./open.js";
import type { ValidatedBatch } from "./validate.js";

/** Where a stream stands: what the last commit said. */
export interface StreamPosition {
  cursor: Cursor | undefined;
  batchId: number;
  totals: Counts;
}

export const ZERO_COUNTS: Readonly<Counts> = Object.freeze({ sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 });

/** `a + b`, count by count. */
export function addCounts(a: Readonly<Counts>, b: Readonly<Counts>): Counts {
  return {
    sourceCount: a.sourceCount + b.sourceCount,
    goodCount: a.goodCount + b.goodCount,
    badCount: a.badCount + b.badCount,
    supersededCount: a.supersededCount + b.supersededCount,
  };
}

export function positionOf(record: CheckpointRecord | undefined): StreamPosition {
  return record
    ? { cursor: record.cursor, batchId: record.batchId, totals: { ...record.totals } }
    : { cursor: undefined, batchId: 0, totals: { ...ZERO_COUNTS } };
}

interface CommitTarget {
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
  /**
   * The stream's position is a cursor (not a queue's acknowledgements): the lake logs each
   * batch's cursor with its rows, so a checkpoint store that loses the stream is noticed.
   */
  logsCursor?: boolean;
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
 *
 * The stored checkpoint is read first, with the store's own compare-and-set decision: a batch
 * this writer already committed (a retried call whose answer was lost) is not written again —
 * for an append target that would duplicate rows — and a rival writer on this key (I3) fails
 * before it touches the lake, whose write may replace rows of batches the stream has not
 * committed (WriteStream), and those would be the rival's. `validated` is awaited only after that.
 */
function writeAndCommit(
  target: CommitTarget,
  previous: StreamPosition,
  cursor: Cursor | undefined,
  validated: () => Promise<ValidatedBatch>,
  hooks: CommitHooks = {},
): Promise<CommittedBatch> {
  return inTurn(turnOf(target.store, target.key), () => checkWriteCommit(target, previous, cursor, validated, hooks));
}

/**
 * Writers of one checkpoint key in this process take turns through check → write → commit, so a
 * rival's compare-and-set fails before it writes anything (I3) — not after its rows landed. Across
 * processes the lake's own single-writer lock (LakeBusyError) keeps writers of a table apart.
 */
const turns = new Map<string, Promise<void>>();
const storeIds = new WeakMap<CheckpointStore, string>();
let storesSeen = 0;

function turnOf(store: CheckpointStore, key: string): string {
  // An object-store URI names its object already; only a file path needs making absolute.
  const location = store.location;
  let where = location === undefined ? storeIds.get(store) : /^[a-z][a-z0-9+.-]*:\/\//i.test(location) ? location : `file:${resolve(location)}`;
  if (where === undefined) {
    where = `store:${++storesSeen}`;
    storeIds.set(store, where);
  }
  return `${where}\u0000${key}`;
}

async function inTurn<T>(turn: string, work: () => Promise<T>): Promise<T> {
  const before = turns.get(turn);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  turns.set(turn, mine);
  try {
    await before;
    return await work();
  } finally {
    release();
    if (turns.get(turn) === mine) turns.delete(turn);
  }
}

async function checkWriteCommit(
  target: CommitTarget,
  previous: StreamPosition,
  cursor: Cursor | undefined,
  validated: () => Promise<ValidatedBatch>,
  hooks: CommitHooks,
): Promise<CommittedBatch> {
  const next = {
    key: target.key,
    cursor: cursor === undefined ? previous.cursor ?? null : cursor,
    batchId: previous.batchId + 1,
    writerId: target.writerId,
  };
  const stored = await target.store.load(target.key);
  if (decideCommit(stored, { ...next, committedAt: new Date(0), batch: ZERO_COUNTS, totals: ZERO_COUNTS }) === "already-committed") {
    return { record: stored!, outcome: "already-committed", write: NOTHING_WRITTEN, position: positionAfter(stored!) };
  }
  const batch = await validated();
  const counts: Counts = {
    sourceCount: batch.sourceCount,
    goodCount: batch.goodCount,
    badCount: batch.bad.length,
    supersededCount: batch.supersededCount,
  };
  const record: CheckpointRecord = { ...next, committedAt: new Date(), batch: counts, totals: addCounts(previous.totals, counts) };
  // Built field by field, not spread: reading `good` could build rows the writer does not need.
  const request = { batchId: record.batchId, bad: batch.bad } as WriteRequest;
  defineLazy(request, "good", () => batch.good);
  if (batch.goodColumns) request.goodColumns = batch.goodColumns;
  if (batch.deletes) request.deletes = batch.deletes;
  // When the previous batch was committed, as the store holds it; null before the first commit.
  const previousCommittedAt =
    stored?.batchId === previous.batchId ? stored.committedAt : !stored && previous.batchId === 0 ? null : undefined;
  if (previousCommittedAt !== undefined) {
    request.stream = { key: target.key, replay: target.replay ?? "redeliver", previousCommittedAt };
    if (target.logsCursor) request.stream.cursor = record.cursor;
  }
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
  return { record, outcome, write, position: positionAfter(record) };
}

const NOTHING_WRITTEN: Readonly<WriteResult> = Object.freeze({ goodWritten: 0, badWritten: 0, badAlreadyPresent: 0 });

function positionAfter(record: CheckpointRecord): StreamPosition {
  return { cursor: record.cursor, batchId: record.batchId, totals: record.totals };
}

/** Where a stream's batches are committed, and by whom. */
export interface StreamDestination {
  target: StreamTarget;
  /** Checkpoint key of the stream. */
  key: string;
  /** Identifies this writer in checkpoint records (a sink run, a Temporal workflow). */
  writerId: string;
  /** @internal crash tests pause between write and commit. */
  hooks?: CommitHooks;
}

/**
 * Write a batch's good and bad rows, then commit its cursor with compare-and-set (I1, I3). A batch
 * that fails hands a queue's messages back at once, so a retry need not wait for their leases.
 * After the commit the caller tells the source (`batch.committed`) and acknowledges the queue
 * (`batch.acknowledge`): StreamSink at once, the Temporal runtime in the same writeBatches call.
 */
export async function commitBatch(
  dest: StreamDestination,
  previous: StreamPosition,
  batch: PipelineBatch,
  options: {
    /** The cursor to commit; default the batch's own (a queue's batch keeps the previous one). */
    cursor?: Cursor;
  } = {},
): Promise<CommittedBatch> {
  const { target, key, writerId, hooks } = dest;
  // Spans: validate (awaited inside), then write until the rows are durable, then commit.
  let write: StageSpan | undefined;
  let commit: StageSpan | undefined;
  const traced = async () => {
    const validated = await inStage(SPANS.validate, { "lakelogic.records": batch.records.length }, () => batch.validated());
    write = startStage(SPANS.write, { "lakelogic.records.good": validated.goodCount, "lakelogic.records.bad": validated.bad.length });
    return validated;
  };
  const tracedHooks: CommitHooks = {
    afterWrite: async (batchId) => {
      write?.end();
      write = undefined;
      commit = startStage(SPANS.commit, { "lakelogic.batch.id": batchId });
      await hooks?.afterWrite?.(batchId);
    },
  };
  try {
    const done = await writeAndCommit(
      {
        lake: target.lake,
        store: target.store,
        storeInTarget: target.inTarget,
        key,
        writerId,
        replay: batch.replay,
        logsCursor: batch.fromCursorSource,
      },
      previous,
      "cursor" in options ? options.cursor : batch.cursor,
      traced,
      tracedHooks,
    );
    // A store inside the target commits in the write's transaction (and a batch already committed
    // writes nothing): its commit span is that instant.
    write?.end();
    (commit ?? startStage(SPANS.commit, { "lakelogic.batch.id": done.record.batchId, "lakelogic.commit.in_target": target.inTarget })).end();
    return done;
  } catch (err) {
    write?.end(err);
    commit?.end(err);
    await batch.release();
    throw err;
  }
}
