import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { decideCommit } from "./cas.js";
import { encodeCursor } from "./codec.js";
import { checkpointStoreError } from "./sqlite-errors.js";
import { decodeStoredCursor } from "./stored-cursor.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome } from "./types.js";

interface Row {
  key: string;
  cursor: string;
  batch_id: number;
  committed_at: string;
  batch_source: number;
  batch_good: number;
  batch_bad: number;
  total_source: number;
  total_good: number;
  total_bad: number;
  writer_id: string;
  batch_superseded: number;
  total_superseded: number;
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS lakelogic_checkpoints (
  key TEXT PRIMARY KEY,
  cursor TEXT NOT NULL,
  batch_id INTEGER NOT NULL,
  committed_at TEXT NOT NULL,
  batch_source INTEGER NOT NULL, batch_good INTEGER NOT NULL, batch_bad INTEGER NOT NULL,
  total_source INTEGER NOT NULL, total_good INTEGER NOT NULL, total_bad INTEGER NOT NULL,
  writer_id TEXT NOT NULL,
  batch_superseded INTEGER NOT NULL DEFAULT 0, total_superseded INTEGER NOT NULL DEFAULT 0
)`;

const COLUMNS = [
  ...["key", "cursor", "batch_id", "committed_at", "batch_source", "batch_good", "batch_bad"],
  ...["total_source", "total_good", "total_bad", "writer_id", "batch_superseded", "total_superseded"],
];

const UPSERT = `INSERT INTO lakelogic_checkpoints (${COLUMNS.join(", ")})
  VALUES (${COLUMNS.map((c) => `@${c}`).join(", ")})
  ON CONFLICT(key) DO UPDATE SET ${COLUMNS.filter((c) => c !== "key").map((c) => `${c} = excluded.${c}`).join(", ")}`;

/**
 * Checkpoints in a SQLite file. WAL with `synchronous = FULL`, so a commit that returned is on
 * disk even if the machine loses power right after; the compare-and-set runs inside a
 * `BEGIN IMMEDIATE` transaction so two processes on one file cannot both win. Failures of the
 * file itself surface as CheckpointStoreError subclasses naming it (see sqlite-errors.ts).
 */
export class SQLiteCheckpointStore implements CheckpointStore {
  private readonly db: Database.Database;
  private readonly selectStmt: Database.Statement<[string], Row>;
  private readonly upsertStmt: Database.Statement<Row>;

  constructor(readonly path: string) {
    let db: Database.Database | undefined;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      db = new Database(path);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = FULL");
      db.pragma("busy_timeout = 5000");
      db.exec(CREATE_TABLE);
      this.selectStmt = db.prepare<[string], Row>("SELECT * FROM lakelogic_checkpoints WHERE key = ?");
      this.upsertStmt = db.prepare<Row>(UPSERT);
      this.db = db;
    } catch (err) {
      if (db?.open) db.close();
      throw checkpointStoreError(err, path, "opening");
    }
  }

  async foreignCheckpoint(key: string): Promise<number | undefined> {
    return this.run(`looking for a Python checkpoint of "${key}"`, () => {
      const table = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stream_checkpoints'").get();
      if (!table) return undefined;
      const row = this.db.prepare<[string], { batch_id: number }>("SELECT batch_id FROM stream_checkpoints WHERE key = ?").get(key);
      return row === undefined ? undefined : Number(row.batch_id);
    });
  }

  async load(key: string): Promise<CheckpointRecord | undefined> {
    const row = this.run(`loading checkpoint "${key}"`, () => this.selectStmt.get(key));
    return row ? this.fromRow(row) : undefined;
  }

  async commit(record: CheckpointRecord): Promise<CommitOutcome> {
    const tx = this.db.transaction((r: CheckpointRecord): CommitOutcome => {
      const stored = this.selectStmt.get(r.key);
      const outcome = decideCommit(stored ? this.fromRow(stored) : undefined, r);
      if (outcome === "committed") this.upsertStmt.run(toRow(r));
      return outcome;
    });
    return this.run(`committing batch ${record.batchId} of "${record.key}"`, () => tx.immediate(record));
  }

  /**
   * Operator's escape hatch: set a key's checkpoint without compare-and-set, e.g. to rewind a
   * stream for reprocessing. Never used by the runtimes. When rewinding, also delete the stream's
   * quarantine rows past the new cursor (docs/lake.md, "Quarantine"), or replayed bad records
   * may be stored twice.
   */
  async overwrite(record: CheckpointRecord): Promise<void> {
    this.run(`overwriting checkpoint "${record.key}"`, () => this.upsertStmt.run(toRow(record)));
  }

  /** The file, so that two store objects over it serialise one key's writers (`:memory:` is private). */
  get location(): string | undefined {
    return this.path === ":memory:" ? undefined : this.path;
  }

  async close(): Promise<void> {
    if (this.db.open) this.run("closing", () => this.db.close());
  }

  /** Run a statement; a failure of the file becomes a typed error naming it. */
  private run<T>(doing: string, work: () => T): T {
    try {
      return work();
    } catch (err) {
      throw checkpointStoreError(err, this.path, doing);
    }
  }

  private fromRow(row: Row): CheckpointRecord {
    return {
      key: row.key,
      cursor: decodeStoredCursor(row.cursor, row.key, this.path),
      batchId: row.batch_id,
      committedAt: new Date(row.committed_at),
      batch: { sourceCount: row.batch_source, goodCount: row.batch_good, badCount: row.batch_bad, supersededCount: row.batch_superseded },
      totals: { sourceCount: row.total_source, goodCount: row.total_good, badCount: row.total_bad, supersededCount: row.total_superseded },
      writerId: row.writer_id,
    };
  }
}

function toRow(r: CheckpointRecord): Row {
  return {
    key: r.key,
    cursor: encodeCursor(r.cursor),
    batch_id: r.batchId,
    committed_at: r.committedAt.toISOString(),
    batch_source: r.batch.sourceCount,
    batch_good: r.batch.goodCount,
    batch_bad: r.batch.badCount,
    total_source: r.totals.sourceCount,
    total_good: r.totals.goodCount,
    total_bad: r.totals.badCount,
    writer_id: r.writerId,
    batch_superseded: r.batch.supersededCount,
    total_superseded: r.totals.supersededCount,
  };
}
