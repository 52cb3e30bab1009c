/**
 * `supersededCount` in checkpoint records: stored and read back by the SQLite store and the
 * DuckDB target store, and a database made before the count existed is migrated in place — its
 * rows read as 0 superseded, and the next commit goes on from them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointRecord, CheckpointStore } from "../../src/checkpoint/types.js";
import { DuckDBTargetCheckpointStore } from "../../src/lake/duckdb-checkpoint.js";
import { DuckDBInstance } from "../../src/util/duckdb.js";

const dir = mkdtempSync(join(tmpdir(), "ll-superseded-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const path = (ext: string) => join(dir, `${++n}.${ext}`);

function record(batchId: number, superseded: number, total: number): CheckpointRecord {
  return {
    key: "rides",
    cursor: { offset: batchId * 10 },
    batchId,
    committedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, batchId)),
    batch: { sourceCount: 10, goodCount: 10 - superseded, badCount: 0, supersededCount: superseded },
    totals: { sourceCount: 10 * batchId, goodCount: 10 * batchId - total, badCount: 0, supersededCount: total },
    writerId: "w1",
  };
}

/** The columns and one row as an earlier version stored them (no superseded columns). */
const OLD_COLUMNS = `key, cursor, batch_id, committed_at, batch_source, batch_good, batch_bad, total_source, total_good, total_bad, writer_id`;

function oldSqlite(file: string): void {
  const db = new Database(file);
  db.exec(`CREATE TABLE lakelogic_checkpoints (
    key TEXT PRIMARY KEY, cursor TEXT NOT NULL, batch_id INTEGER NOT NULL, committed_at TEXT NOT NULL,
    batch_source INTEGER NOT NULL, batch_good INTEGER NOT NULL, batch_bad INTEGER NOT NULL,
    total_source INTEGER NOT NULL, total_good INTEGER NOT NULL, total_bad INTEGER NOT NULL,
    writer_id TEXT NOT NULL)`);
  db.prepare(`INSERT INTO lakelogic_checkpoints (${OLD_COLUMNS}) VALUES (?, ?, 1, ?, 10, 9, 1, 10, 9, 1, 'w1')`).run(
    "rides",
    '{"offset":10}',
    "2026-01-01T00:00:01.000Z",
  );
  db.close();
}

async function oldDuckdb(file: string): Promise<void> {
  const instance = await DuckDBInstance.create(file);
  const conn = await instance.connect();
  await conn.run(`CREATE TABLE _lakelogic_checkpoints (
    key VARCHAR PRIMARY KEY, cursor VARCHAR NOT NULL, batch_id BIGINT NOT NULL, committed_at TIMESTAMP NOT NULL,
    batch_source BIGINT NOT NULL, batch_good BIGINT NOT NULL, batch_bad BIGINT NOT NULL,
    total_source BIGINT NOT NULL, total_good BIGINT NOT NULL, total_bad BIGINT NOT NULL,
    writer_id VARCHAR NOT NULL)`);
  await conn.run(
    `INSERT INTO _lakelogic_checkpoints (${OLD_COLUMNS}) VALUES ('rides', '{"offset":10}', 1, TIMESTAMP '2026-01-01 00:00:01', 10, 9, 1, 10, 9, 1, 'w1')`,
  );
  conn.closeSync();
  instance.closeSync();
}

const kinds: Array<[string, (file: string) => CheckpointStore, (file: string) => Promise<void> | void, string]> = [
  ["sqlite", (f) => new SQLiteCheckpointStore(f), oldSqlite, "sqlite"],
  ["duckdb target", (f) => new DuckDBTargetCheckpointStore(f), oldDuckdb, "duckdb"],
];

describe.each(kinds)("supersededCount in the %s store", (_name, open, makeOld, ext) => {
  it("is stored with each commit and read back", async () => {
    const s = open(path(ext));
    await s.commit(record(1, 3, 3));
    await s.commit(record(2, 1, 4));
    const got = await s.load("rides");
    expect(got?.batch).toEqual({ sourceCount: 10, goodCount: 9, badCount: 0, supersededCount: 1 });
    expect(got?.totals).toEqual({ sourceCount: 20, goodCount: 16, badCount: 0, supersededCount: 4 });
    await s.close();
  });

  it("migrates a database made before it existed: old rows read 0, the stream goes on", async () => {
    const file = path(ext);
    await makeOld(file);
    const s = open(file);
    const before = await s.load("rides");
    expect(before).toMatchObject({ batchId: 1, cursor: { offset: 10 } });
    expect(before?.batch).toEqual({ sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 });
    expect(before?.totals).toEqual({ sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 });
    expect(await s.commit(record(2, 2, 2))).toBe("committed");
    await s.close();
    // Opened again (the columns are there now): nothing is added twice, the counts are kept.
    const again = open(file);
    expect((await again.load("rides"))?.totals).toEqual({ sourceCount: 20, goodCount: 18, badCount: 0, supersededCount: 2 });
    await again.close();
  });
});

describe("SQLite: a second store on a file another store migrated", () => {
  it("opens it as it is and sees the same counts", async () => {
    const file = path("sqlite");
    oldSqlite(file);
    const a = new SQLiteCheckpointStore(file);
    const b = new SQLiteCheckpointStore(file);
    expect((await b.load("rides"))?.totals.supersededCount).toBe(0);
    expect(await a.commit(record(2, 1, 1))).toBe("committed");
    expect((await b.load("rides"))?.totals.supersededCount).toBe(1);
    await a.close();
    await b.close();
  });
});
