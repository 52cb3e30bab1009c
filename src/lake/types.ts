import type { CheckpointRecord, CheckpointStore, CommitOutcome, Cursor } from "../checkpoint/types.js";
import type { GoodColumns, Row, RuleFailure } from "../engine/types.js";

/** A row on its way to quarantine: the original record and everything needed to explain it. */
export interface QuarantineRow {
  /** The original record (or, for a decode failure, undefined and `raw` set). */
  record: unknown;
  /** Raw payload when the source had one (bytes are stored base64). */
  raw?: string | Uint8Array;
  errors: RuleFailure[];
  /** Source position (offset, event id, …) — part of the quarantine row's identity. */
  position?: unknown;
  /**
   * A decode failure's message around its payload (SourceRecord.envelope): stored as the row's
   * record when `record` is undefined, and not part of its identity (the position is).
   */
  envelope?: Record<string, unknown>;
}

export interface WriteRequest {
  batchId: number;
  good: Row[];
  /**
   * The same good rows column by column, when the engine made them: a writer that can store
   * them as they are does so and never reads `good` (which may then never be built).
   */
  goodColumns?: GoodColumns;
  bad: QuarantineRow[];
  /**
   * Merge only: primary keys (rows holding the key fields, values canonical) whose rows the
   * batch deletes, after its good rows are written and in the same transaction — so a key the
   * batch writes and then deletes is gone.
   */
  deletes?: Row[];
  /**
   * When set, the target commits this checkpoint in the same transaction as the rows
   * (`checkpoint: "target"`, duckdb format only): exactly-once even with append.
   */
  checkpoint?: CheckpointRecord;
  /**
   * The stream this batch belongs to. Its quarantine rows are stored with `stream.key`, and how
   * a replayed batch is kept from duplicating them depends on `stream.replay` (docs/lake.md,
   * "Quarantine"). Without it every quarantine row of the table is checked, as for a stream
   * whose source may deliver a record again after its batch committed.
   */
  stream?: WriteStream;
}

export interface WriteStream {
  /** The stream's checkpoint key. */
  key: string;
  /**
   * `"cursor"`: the source gives back every record after the committed cursor, in order, when a
   * run resumes, and to this stream only (CursorSource.replays). Rows this stream stored for
   * batch ids from `batchId` on then belong to attempts that never committed, and are replaced
   * by this write instead of being looked up. `"redeliver"`: a record may come again after its
   * batch committed (queues, Kafka groups, push sources), so every quarantine row is checked.
   */
  replay: "cursor" | "redeliver";
  /**
   * When the stream's previous batch (`batchId - 1`) was committed; null when none was. Rows of
   * the stream this cannot account for are looked up rather than replaced.
   */
  previousCommittedAt: Date | null;
  /**
   * The cursor this batch commits, for a stream whose position is a cursor: the target logs the
   * batch with its rows (LakeCommit, `lastCommit`). Omitted for a queue's stream: not logged.
   */
  cursor?: Cursor;
}

/** The last batch of a stream a target holds, as its commit log says (written with the rows). */
export interface LakeCommit {
  batchId: number;
  /** Digest of the cursor that batch committed. */
  cursorDigest: string;
}

export interface WriteResult {
  goodWritten: number;
  badWritten: number;
  /** Quarantine rows skipped because the same row was already there (a replayed batch). */
  badAlreadyPresent: number;
  /**
   * Set when the request carried a checkpoint: "already-committed" means an identical commit by
   * the same writer was found (a retry) and nothing was written.
   */
  checkpointOutcome?: CommitOutcome;
}

export interface LakeWriter {
  write(request: WriteRequest): Promise<WriteResult>;
  /**
   * Present on targets that can hold checkpoints in their own database (format duckdb):
   * the store behind `checkpoint: "target"`, sharing this writer's database.
   */
  checkpointStore?(): CheckpointStore;
  /**
   * The newest batch of the stream with this checkpoint key that the target holds, or undefined
   * when it holds none: what the stream's checkpoint must not be behind of by more than one
   * batch (one written but not yet committed).
   */
  lastCommit?(key: string): Promise<LakeCommit | undefined>;
  close(): Promise<void>;
}

/** A quarantine row as stored (what `readQuarantine` returns). */
export interface StoredQuarantineRow {
  /** Deterministic id: hash of position (if any), raw payload and record, and the ordinal among identical rows. */
  quarantineId: string;
  batchId: number;
  /** The original record, parsed back from its JSON text (undefined for a decode failure). */
  record: unknown;
  /** Raw payload: text, or base64 when `rawEncoding` is "base64". */
  raw: string | null;
  rawEncoding: "text" | "base64" | null;
  /** Rule messages; empty when quarantine.include_error_reason is false (stored as NULL). */
  reasons: string[];
  ruleIds: string[];
  position: unknown;
  quarantinedAt: Date;
  /**
   * The checkpoint key of the stream that wrote the row (duckdb format); null for direct writes,
   * parquet, and rows a stream handed over to the table (docs/lake.md, "Quarantine").
   */
  streamKey: string | null;
}
