import { dirname, join, resolve } from "node:path";
import { mkdirSync } from "node:fs";
import { DuckDBTimestampValue, type DuckDBConnection, type DuckDBValue } from "../util/duckdb.js";
import { decideCommit } from "../checkpoint/cas.js";
import { encodeCursor } from "../checkpoint/codec.js";
import { decodeStoredCursor } from "../checkpoint/stored-cursor.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome, Counts } from "../checkpoint/types.js";
import { quoteIdent } from "../util/sql-text.js";
import { CHECKPOINT_TABLE, DUCKDB_FILE } from "./config.js";
import { acquireDatabase, type Database } from "./duckdb-db.js";

const TABLE = quoteIdent(CHECKPOINT_TABLE);

const COLUMNS = [
  ...["key", "cursor", "batch_id", "committed_at", "batch_source", "batch_good", "batch_bad"],
  ...["total_source", "total_good", "total_bad", "writer_id", "batch_superseded", "total_superseded"],
];

export async function ensureCheckpointTable(conn: DuckDBConnection): Promise<void> {
  await conn.run(`CREATE TABLE IF NOT EXISTS ${TABLE} (
    key VARCHAR PRIMARY KEY,
    cursor VARCHAR NOT NULL,
    batch_id BIGINT NOT NULL,
    committed_at TIMESTAMP NOT NULL,
    batch_source BIGINT NOT NULL, batch_good BIGINT NOT NULL, batch_bad BIGINT NOT NULL,
    total_source BIGINT NOT NULL, total_good BIGINT NOT NULL, total_bad BIGINT NOT NULL,
    writer_id VARCHAR NOT NULL,
    batch_superseded BIGINT DEFAULT 0, total_superseded BIGINT DEFAULT 0
  )`);
}

const UPSERT = `INSERT INTO ${TABLE} (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})
  ON CONFLICT (key) DO UPDATE SET ${COLUMNS.filter((c) => c !== "key").map((c) => `${c} = excluded.${c}`).join(", ")}`;

function num(v: DuckDBValue | undefined): number {
  return typeof v === "bigint" ? Number(v) : Number(v ?? 0);
}

function countsOf(row: Record<string, DuckDBValue>, prefix: "batch" | "total"): Counts {
  return {
    sourceCount: num(row[`${prefix}_source`]),
    goodCount: num(row[`${prefix}_good`]),
    badCount: num(row[`${prefix}_bad`]),
    supersededCount: num(row[`${prefix}_superseded`]),
  };
}

/** Read a key's checkpoint inside the caller's transaction (if any). */
export async function loadCheckpoint(
  conn: DuckDBConnection,
  key: string,
  location = "the lake's checkpoint table",
): Promise<CheckpointRecord | undefined> {
  const reader = await conn.runAndReadAll(`SELECT * FROM ${TABLE} WHERE key = $1`, [key]);
  const row = reader.getRowObjects()[0];
  if (!row) return undefined;
  const at = row["committed_at"];
  return {
    key: String(row["key"]),
    cursor: decodeStoredCursor(String(row["cursor"]), key, location),
    batchId: num(row["batch_id"]),
    committedAt: new Date(at instanceof DuckDBTimestampValue ? Number(at.micros / 1000n) : 0),
    batch: countsOf(row, "batch"),
    totals: countsOf(row, "total"),
    writerId: String(row["writer_id"]),
  };
}

export async function upsertCheckpoint(conn: DuckDBConnection, r: CheckpointRecord): Promise<void> {
  // Encode first: a cursor that cannot be encoded must fail before anything is committed.
  const cursor = encodeCursor(r.cursor);
  await conn.run(UPSERT, [
    r.key,
    cursor,
    BigInt(r.batchId),
    new DuckDBTimestampValue(BigInt(r.committedAt.getTime()) * 1000n),
    BigInt(r.batch.sourceCount),
    BigInt(r.batch.goodCount),
    BigInt(r.batch.badCount),
    BigInt(r.totals.sourceCount),
    BigInt(r.totals.goodCount),
    BigInt(r.totals.badCount),
    r.writerId,
    BigInt(r.batch.supersededCount),
    BigInt(r.totals.supersededCount),
  ]);
}

/**
 * Compare-and-set inside the caller's open transaction: returns the outcome, writes the record
 * when it is "committed", throws CheckpointConflictError otherwise (the caller rolls back).
 */
export async function casCheckpoint(conn: DuckDBConnection, record: CheckpointRecord): Promise<CommitOutcome> {
  const outcome = decideCommit(await loadCheckpoint(conn, record.key), record);
  if (outcome === "committed") await upsertCheckpoint(conn, record);
  return outcome;
}

/**
 * Checkpoints in the lake's own DuckDB database (`<targetPath>/lakelogic.duckdb`, table
 * `_lakelogic_checkpoints`). The lake writer commits the same table in the batch's transaction
 * (WriteRequest.checkpoint), which makes even append exactly-once; this store reads it (`load`)
 * and can also commit on its own. Same compare-and-set rules as every CheckpointStore.
 */
export class DuckDBTargetCheckpointStore implements CheckpointStore {
  private opened: Promise<{ db: Database; conn: DuckDBConnection }> | undefined;
  private closed = false;

  readonly databasePath: string;

  /** `databasePath`: the DuckDB file (not the lake directory); see `forLake`. */
  constructor(databasePath: string) {
    // Absolute, so that it shares the process-wide instance with the lake writer.
    this.databasePath = resolve(databasePath);
  }

  get location(): string {
    return this.databasePath;
  }

  /** The store of the lake at `targetPath` (absolute or relative to the working directory). */
  static forLake(targetPath: string): DuckDBTargetCheckpointStore {
    return new DuckDBTargetCheckpointStore(join(targetPath, DUCKDB_FILE));
  }

  private open(): Promise<{ db: Database; conn: DuckDBConnection }> {
    if (this.closed) return Promise.reject(new Error("DuckDBTargetCheckpointStore is closed"));
    this.opened ??= (async () => {
      mkdirSync(dirname(this.databasePath), { recursive: true });
      const db = await acquireDatabase(this.databasePath);
      try {
        const conn = await db.connect();
        await db.exclusive(() => ensureCheckpointTable(conn));
        return { db, conn };
      } catch (e) {
        db.release();
        throw e;
      }
    })();
    return this.opened;
  }

  async load(key: string): Promise<CheckpointRecord | undefined> {
    const { conn } = await this.open();
    return loadCheckpoint(conn, key, `${this.databasePath} (_lakelogic_checkpoints)`);
  }

  async commit(record: CheckpointRecord): Promise<CommitOutcome> {
    const { db, conn } = await this.open();
    return db.exclusive(async () => {
      await conn.run("BEGIN TRANSACTION");
      try {
        const outcome = await casCheckpoint(conn, record);
        await conn.run("COMMIT");
        return outcome;
      } catch (e) {
        await conn.run("ROLLBACK").catch(() => undefined);
        throw e;
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const opened = this.opened;
    this.opened = undefined;
    if (opened) (await opened.catch(() => undefined))?.db.release();
  }
}
