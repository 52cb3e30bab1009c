import { createHash } from "node:crypto";
import type { DuckDBConnection } from "../util/duckdb.js";
import { encodeCursor } from "../checkpoint/codec.js";
import type { Cursor } from "../checkpoint/types.js";
import { quoteIdent } from "../util/sql-text.js";
import { readPlanned } from "./duckdb-run.js";
import type { LakeCommit, WriteRequest } from "./types.js";

/**
 * The lake's own record of which batch of a stream it holds last, per table and checkpoint key:
 * written with the batch's rows (same transaction, same manifest), so a checkpoint store that
 * lost its record can be told apart from a stream that never ran.
 */
export const COMMITS_TABLE = "_lakelogic_commits";
const TABLE = quoteIdent(COMMITS_TABLE);

/** A short, stable fingerprint of a committed cursor (the cursor itself may be large). */
export function cursorDigest(cursor: Cursor): string {
  return createHash("sha256").update(encodeCursor(cursor)).digest("hex").slice(0, 32);
}

/**
 * The commit a write request leaves in the lake's log: one for a stream whose position is a
 * cursor (WriteStream.cursor); none for a write outside a stream, or a queue's.
 */
export function commitOf(req: WriteRequest): { key: string; commit: LakeCommit } | undefined {
  const stream = req.stream;
  if (!stream || !("cursor" in stream) || stream.cursor === undefined) return undefined;
  return { key: stream.key, commit: { batchId: req.batchId, cursorDigest: cursorDigest(stream.cursor) } };
}

export async function ensureCommitsTable(conn: DuckDBConnection): Promise<void> {
  await conn.run(`CREATE TABLE IF NOT EXISTS ${TABLE} (
    table_name VARCHAR NOT NULL,
    stream_key VARCHAR NOT NULL,
    batch_id BIGINT NOT NULL,
    cursor_digest VARCHAR NOT NULL,
    written_at TIMESTAMP NOT NULL,
    PRIMARY KEY (table_name, stream_key)
  )`);
}

/** Record a batch inside the caller's transaction: the newest write of a key replaces the last. */
export async function upsertCommit(conn: DuckDBConnection, table: string, key: string, commit: LakeCommit): Promise<void> {
  await readPlanned(
    conn,
    `INSERT INTO ${TABLE} VALUES ($1, $2, $3, $4, current_timestamp::TIMESTAMP)
     ON CONFLICT (table_name, stream_key) DO UPDATE SET batch_id = excluded.batch_id,
       cursor_digest = excluded.cursor_digest, written_at = excluded.written_at`,
    (p) => {
      p.bindVarchar(1, table);
      p.bindVarchar(2, key);
      p.bindBigInt(3, BigInt(commit.batchId));
      p.bindVarchar(4, commit.cursorDigest);
    },
  );
}

export async function loadCommit(conn: DuckDBConnection, table: string, key: string): Promise<LakeCommit | undefined> {
  const rows = await readPlanned(conn, `SELECT batch_id, cursor_digest FROM ${TABLE} WHERE table_name = $1 AND stream_key = $2`, (p) => {
    p.bindVarchar(1, table);
    p.bindVarchar(2, key);
  });
  const row = rows[0];
  if (!row) return undefined;
  return { batchId: Number(row[0]), cursorDigest: String(row[1]) };
}
