/** `supersededCount` in checkpoint records: stored and read back by the SQLite store and the DuckDB target store. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointRecord, CheckpointStore } from "../../src/checkpoint/types.js";
import { DuckDBTargetCheckpointStore } from "../../src/lake/duckdb-checkpoint.js";

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

const kinds: Array<[string, (file: string) => CheckpointStore, string]> = [
  ["sqlite", (f) => new SQLiteCheckpointStore(f), "sqlite"],
  ["duckdb target", (f) => new DuckDBTargetCheckpointStore(f), "duckdb"],
];

describe.each(kinds)("supersededCount in the %s store", (_name, open, ext) => {
  it("is stored with each commit and read back", async () => {
    const s = open(path(ext));
    await s.commit(record(1, 3, 3));
    await s.commit(record(2, 1, 4));
    const got = await s.load("rides");
    expect(got?.batch).toEqual({ sourceCount: 10, goodCount: 9, badCount: 0, supersededCount: 1 });
    expect(got?.totals).toEqual({ sourceCount: 20, goodCount: 16, badCount: 0, supersededCount: 4 });
    await s.close();
  });
});
