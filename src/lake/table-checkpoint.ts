import { encodeCursor } from "../checkpoint/codec.js";
import { CheckpointStoreError } from "../checkpoint/errors.js";
import { decodeStoredCursor } from "../checkpoint/stored-cursor.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome, Counts } from "../checkpoint/types.js";
import type { TableRecord } from "./table-contract.js";
import type { WriteResult } from "./types.js";

/**
 * Checkpoints kept in the table's own commits (`checkpoint: "target"`, the default for delta and
 * ducklake): the store reads the newest commit of the stream and writes an empty batch carrying a
 * record, through the writer.
 */

/** A checkpoint as a table commit holds it (JSON; the cursor in typed JSON). */
export interface EncodedCheckpoint {
  cursor: string;
  committedAt: string;
  batch: Counts;
  totals: Counts;
  writerId: string;
}

/**
 * What each LakeLogic commit of a Delta table records in its commit metadata (`lakelogic`): the
 * batch, the stream's key and cursor digest (the commit log), the checkpoint when it is kept in
 * the table, and the table's primary key and strategy (table-contract.ts).
 */
export interface DeltaCommitMeta {
  batchId: number;
  key?: string;
  cursorDigest?: string;
  checkpoint?: EncodedCheckpoint;
  table?: TableRecord;
}

export function encodeCommit(r: CheckpointRecord): EncodedCheckpoint {
  return { cursor: encodeCursor(r.cursor), committedAt: r.committedAt.toISOString(), batch: r.batch, totals: r.totals, writerId: r.writerId };
}

/**
 * The commit that set stream `key`'s transaction version to `version`, read back: its record
 * when it carried a checkpoint. A version whose commit the table's log no longer shows (cleaned
 * up) or that carried no checkpoint has none.
 */
export function decodeCommit(raw: unknown, key: string, version: number, uri: string): DeltaCommitMeta & { record?: CheckpointRecord } {
  const meta = (raw ?? undefined) as DeltaCommitMeta | undefined;
  if (!meta || typeof meta !== "object") return { batchId: version, key };
  const c = meta.checkpoint;
  if (!c) return { ...meta, batchId: version };
  return { ...meta, batchId: version, record: decodeCheckpoint(c, key, version, uri) };
}

/** A stored checkpoint of stream `key` at `batchId`, read back. */
export function decodeCheckpoint(c: EncodedCheckpoint, key: string, batchId: number, location: string): CheckpointRecord {
  return {
    key,
    cursor: decodeStoredCursor(c.cursor, key, location),
    batchId,
    committedAt: new Date(c.committedAt),
    batch: c.batch,
    totals: c.totals,
    writerId: c.writerId,
  };
}

/**
 * Checkpoints read from a table's own commits: on Delta a stream's batch is its transaction
 * version and its cursor the metadata of the commit that set it; on DuckLake, the stream's row in
 * the catalog, replaced in each batch's transaction. The writer commits them with the rows
 * (WriteRequest.checkpoint); `commit` here writes an empty batch carrying the record. Same
 * compare-and-set rules as every CheckpointStore.
 */
export class TableCheckpointStore implements CheckpointStore {
  constructor(
    readonly location: string,
    private readonly held: (key: string) => Promise<{ batchId: number; record?: CheckpointRecord } | undefined>,
    private readonly commitOnly: (record: CheckpointRecord) => Promise<WriteResult>,
  ) {}

  async load(key: string): Promise<CheckpointRecord | undefined> {
    const held = await this.held(key);
    if (held === undefined) return undefined;
    if (held.record === undefined) {
      throw new CheckpointStoreError(
        this.location,
        `the table holds batch ${held.batchId} of stream "${key}", but the commit that wrote it carries no LakeLogic checkpoint ` +
          "(written by another program with this transaction id, or its log entry was cleaned up): the stream cannot tell where to " +
          "resume. Keep the stream's checkpoint elsewhere (--checkpoint PATH) or use another --checkpoint-key",
        { code: "CHECKPOINT_MISSING", retriable: false },
      );
    }
    return held.record;
  }

  async commit(record: CheckpointRecord): Promise<CommitOutcome> {
    const result = await this.commitOnly(record);
    return result.checkpointOutcome ?? "committed";
  }

  close(): Promise<void> {
    // The writer owns the helper; it closes with the lake.
    return Promise.resolve();
  }
}
