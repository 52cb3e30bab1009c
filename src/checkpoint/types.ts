/**
 * Cursors are whatever a source uses to say "where I am": a Kafka offset map, an SSE event id,
 * a composite (watermark, tie-breaker) key. They may hold bigint, Date and decimal strings,
 * which is why stores serialise them with `encodeCursor` (typed JSON) rather than JSON.stringify.
 */
export type Cursor = unknown;

/** Records read, rows written, rows quarantined, and rows superseded: sourceCount = goodCount + badCount + supersededCount. */
export interface Counts {
  sourceCount: number;
  /** Good rows written to the target (after supersession). */
  goodCount: number;
  badCount: number;
  /**
   * Good records not written because a later record of the same batch has the same primary key
   * (merge, overwrite with a key: the last one wins).
   */
  supersededCount: number;
}

export interface CheckpointRecord {
  key: string;
  cursor: Cursor;
  /** Monotonic across runs: 1 for the first committed batch. */
  batchId: number;
  committedAt: Date;
  /** Counts of the batch this commit closed. */
  batch: Counts;
  /** Running totals since the stream began. */
  totals: Counts;
  /** Who committed it (a sink run id or a Temporal workflow id), to tell a retry from a rival. */
  writerId: string;
}

export type CommitOutcome = "committed" | "already-committed";

export interface CheckpointStore {
  load(key: string): Promise<CheckpointRecord | undefined>;
  /**
   * Compare-and-set: succeeds when the stored batchId is `record.batchId - 1` (or nothing is
   * stored and `record.batchId === 1`). A repeat of the exact same commit by the same writer
   * (a retried activity) returns "already-committed". Anything else throws CheckpointConflictError.
   */
  commit(record: CheckpointRecord): Promise<CommitOutcome>;
  close(): Promise<void>;
  /**
   * Where the checkpoints live (a file path), when two store objects may share them: writers of
   * one key in one process then take turns through the same store, whichever object they hold.
   */
  readonly location?: string;
  /**
   * The batch id of a checkpoint for `key` that another program wrote beside this store's own
   * (the Python LakeLogic package's `stream_checkpoints` table in the same SQLite file), which
   * this store does not read as its own: a stream must not silently start over beside it.
   */
  foreignCheckpoint?(key: string): Promise<number | undefined>;
}
