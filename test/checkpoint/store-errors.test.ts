import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  CheckpointCannotOpenError,
  CheckpointNotADatabaseError,
  CheckpointStoreError,
} from "../../src/checkpoint/errors.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { LakeLogicError } from "../../src/errors.js";
import { openCheckpoint } from "../../src/pipeline/open.js";
import type { Contract } from "../../src/contract/types.js";
import type { LakeWriter } from "../../src/lake/types.js";

const dir = mkdtempSync(join(tmpdir(), "ll-ckpt-err-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

describe("SQLite checkpoint store: errors name the file and say what to do", () => {
  it("a file that is not a database: CheckpointNotADatabaseError, not retriable, file untouched", () => {
    const path = join(dir, "notes.txt");
    const text = "these are my notes, not a SQLite database; ".repeat(20);
    writeFileSync(path, text);
    const err = thrown(() => new SQLiteCheckpointStore(path));
    expect(err).toBeInstanceOf(CheckpointNotADatabaseError);
    expect(err).toBeInstanceOf(CheckpointStoreError);
    expect(err).toBeInstanceOf(LakeLogicError);
    const e = err as CheckpointNotADatabaseError;
    expect(e.code).toBe("CHECKPOINT_NOT_A_DATABASE");
    expect(e.retriable).toBe(false);
    expect(e.path).toBe(path);
    expect(e.message).toContain(path);
    expect(e.message).toContain("SQLITE_NOTADB");
    expect(e.message).toMatch(/not a SQLite database/);
    expect(readFileSync(path, "utf8")).toBe(text);
  });

  it("a path that is a directory: CheckpointCannotOpenError saying so", () => {
    const path = join(dir, "a-directory");
    mkdirSync(path);
    const err = thrown(() => new SQLiteCheckpointStore(path));
    expect(err).toBeInstanceOf(CheckpointCannotOpenError);
    const e = err as CheckpointCannotOpenError;
    expect(e.code).toBe("CHECKPOINT_CANNOT_OPEN");
    expect(e.retriable).toBe(false);
    expect(e.message).toContain(path);
    expect(e.message).toMatch(/is a directory/);
    expect(e.message).toContain(join(path, "checkpoints.sqlite"));
  });

  it("a directory that cannot be created (a file is in the way): CheckpointCannotOpenError naming it", () => {
    const blocker = join(dir, "blocker");
    writeFileSync(blocker, "x");
    const path = join(blocker, "sub", "checkpoints.sqlite");
    const err = thrown(() => new SQLiteCheckpointStore(path));
    expect(err).toBeInstanceOf(CheckpointCannotOpenError);
    const e = err as CheckpointCannotOpenError;
    expect(e.retriable).toBe(false);
    expect(e.path).toBe(path);
    expect(e.message).toContain(path);
    expect(e.message).toContain(blocker);
    expect(readFileSync(blocker, "utf8")).toBe("x");
  });

  it("openCheckpoint with a path that is a directory throws the typed error", async () => {
    const path = join(dir, "another-directory");
    mkdirSync(path);
    const contract = { materialization: { format: "duckdb" } } as Pick<Contract, "materialization"> as Contract;
    const lake = {} as LakeWriter;
    const err = await openCheckpoint(path, lake, contract).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointCannotOpenError);
    expect((err as Error).message).toContain(path);
  });

});
