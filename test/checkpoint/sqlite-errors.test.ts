import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import {
  CheckpointBusyError,
  CheckpointDiskFullError,
  CheckpointReadOnlyError,
} from "../../src/checkpoint/errors.js";
import { checkpointStoreError } from "../../src/checkpoint/sqlite-errors.js";

const dir = mkdtempSync(join(tmpdir(), "ll-ckpt-map-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

/** The SqliteError SQLite itself raises for `sql` on a fresh connection set up by `setup`. */
function sqliteError(file: string, setup: (db: Database.Database) => void, sql: string): unknown {
  const db = new Database(file);
  try {
    setup(db);
    return thrown(() => db.exec(sql));
  } finally {
    db.close();
  }
}

describe("checkpointStoreError: SQLite's errors as typed checkpoint store errors", () => {
  it("maps SQLite's own errors: disk full and busy are retriable, read-only is not", () => {
    const file = join(dir, "mapped.sqlite");
    const full = sqliteError(
      file,
      (db) => {
        db.pragma("max_page_count = 2");
        db.exec("CREATE TABLE IF NOT EXISTS t (x BLOB)");
      },
      "INSERT INTO t VALUES (randomblob(20000))",
    );
    const fullErr = checkpointStoreError(full, file, "committing batch 3 of \"orders\"");
    expect(fullErr).toBeInstanceOf(CheckpointDiskFullError);
    expect((fullErr as CheckpointDiskFullError).code).toBe("CHECKPOINT_DISK_FULL");
    expect((fullErr as CheckpointDiskFullError).retriable).toBe(true);
    expect((fullErr as Error).message).toContain(file);
    expect((fullErr as Error).message).toContain('committing batch 3 of "orders"');
    expect((fullErr as Error).cause).toBe(full);

    const holder = new Database(file);
    holder.exec("BEGIN EXCLUSIVE");
    try {
      const busy = sqliteError(file, (db) => db.pragma("busy_timeout = 0"), "BEGIN IMMEDIATE");
      const busyErr = checkpointStoreError(busy, file, "loading \"orders\"");
      expect(busyErr).toBeInstanceOf(CheckpointBusyError);
      expect((busyErr as CheckpointBusyError).code).toBe("CHECKPOINT_BUSY");
      expect((busyErr as CheckpointBusyError).retriable).toBe(true);
      expect((busyErr as Error).message).toContain(file);
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
    }

    const ro = new Database(file, { readonly: true });
    const readOnly = thrown(() => ro.exec("CREATE TABLE u (x)"));
    ro.close();
    const roErr = checkpointStoreError(readOnly, file, "opening");
    expect(roErr).toBeInstanceOf(CheckpointReadOnlyError);
    expect((roErr as CheckpointReadOnlyError).code).toBe("CHECKPOINT_READ_ONLY");
    expect((roErr as CheckpointReadOnlyError).retriable).toBe(false);
    expect((roErr as Error).message).toContain(file);
  });

  it("leaves errors that are not about the file as they are", () => {
    const other = new TypeError("cursor: a Map cannot be encoded as a cursor");
    expect(checkpointStoreError(other, "x.sqlite", "committing")).toBe(other);
  });
});
