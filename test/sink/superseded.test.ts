/**
 * Counts that reconcile through StreamSink: a merge stream whose batches repeat keys and carry
 * null keys. In every report, the summary, and the stored checkpoint, records read = rows
 * written + rows quarantined + rows superseded, and the rows written are what the table gained.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointStore, Counts } from "../../src/checkpoint/types.js";
import type { Contract, LakeFormat, Strategy } from "../../src/contract/types.js";
import { DuckDBTargetCheckpointStore } from "../../src/lake/duckdb-checkpoint.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import { makeContract } from "../support/contract.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function lakeDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ll-superseded-sink-"));
  dirs.push(d);
  return d;
}

function rides(strategy: Strategy, format: LakeFormat): Contract {
  const c = makeContract({
    dataset: "rides",
    fields: [
      { name: "ride_id", type: "integer" },
      { name: "status", type: "string" },
    ],
    primaryKey: ["ride_id"],
    unknownFields: "drop",
  });
  return {
    ...c,
    materialization: { ...c.materialization, strategy, strategyDeclared: true, format },
    quarantine: { ...c.quarantine, format },
  };
}

// Batches of four: each repeats keys, and no key appears in two batches, so the table gains
// exactly the rows written.
const EVENTS = [
  { ride_id: 1, status: "completed" },
  { ride_id: 2, status: "completed" },
  { ride_id: 1, status: "refunded" },
  { ride_id: null, status: "x" },
  { ride_id: 3, status: "a" },
  { ride_id: 3, status: "b" },
  { ride_id: 3, status: "c" },
  { ride_id: 4, status: "a" },
  { ride_id: 5, status: "a" },
  { status: "no id" },
  { ride_id: 6, status: "a" },
  { ride_id: 6, status: "b" },
];

const reconciles = (c: Counts) => expect(c.sourceCount).toBe(c.goodCount + c.badCount + c.supersededCount);

const cases: Array<[string, "duckdb" | "polars", LakeFormat, "sqlite" | "target"]> = [
  ["duckdb engine, duckdb lake, SQLite checkpoints", "duckdb", "duckdb", "sqlite"],
  ["polars engine, duckdb lake, checkpoints in the target", "polars", "duckdb", "target"],
  ["duckdb engine, parquet lake, SQLite checkpoints", "duckdb", "parquet", "sqlite"],
];

describe.each(cases)("a merge stream with repeated and null keys: %s", (_name, engine, format, checkpoint) => {
  it("counts every record once: good + bad + superseded = source, and good = what the table gained", async () => {
    const targetPath = lakeDir();
    const contract = rides("merge", format);
    const reports: BatchReport[] = [];
    const summary = await new StreamSink(contract, EVENTS, {
      engine,
      targetPath,
      batchSize: 4,
      ...(checkpoint === "target" ? { checkpoint: "target" as const } : {}),
      onBatch: (b) => void reports.push(b),
    }).run("available_now");

    // (An iterable's run may end with an empty batch that only marks it as read to the end.)
    const withRecords = reports.filter((r) => r.sourceCount > 0);
    expect(withRecords.map((r) => [r.sourceCount, r.goodCount, r.badCount, r.supersededCount])).toEqual([
      [4, 2, 1, 1],
      [4, 2, 0, 2],
      [4, 2, 1, 1],
    ]);
    reports.forEach(reconciles);
    reports.forEach((r) => reconciles(r.totals));
    expect(summary).toMatchObject({ sourceCount: 12, goodCount: 6, badCount: 2, supersededCount: 4 });
    reconciles(summary);
    reconciles(summary.totals);

    const table = await readTable(contract, { targetPath });
    expect(table).toHaveLength(summary.goodCount);
    expect(Object.fromEntries(table.map((r) => [Number(r["ride_id"]), r["status"]]))).toEqual({
      1: "refunded",
      2: "completed",
      3: "c",
      4: "a",
      5: "a",
      6: "b",
    });
    const quarantine = await readQuarantine(contract, { targetPath });
    expect(quarantine).toHaveLength(summary.badCount);
    expect(quarantine.map((q) => q.ruleIds)).toEqual([["primary_key_not_null:ride_id"], ["primary_key_not_null:ride_id"]]);

    const store: CheckpointStore =
      checkpoint === "target"
        ? DuckDBTargetCheckpointStore.forLake(targetPath)
        : new SQLiteCheckpointStore(join(targetPath, "_lakelogic", "checkpoints.sqlite"));
    const stored = await store.load("stream::rides");
    await store.close();
    expect(stored?.totals).toEqual({ sourceCount: 12, goodCount: 6, badCount: 2, supersededCount: 4 });
  });
});

describe("a schemaless merge stream", () => {
  it("compares keys as the lake does: the rows written are the rows the table holds", async () => {
    const targetPath = lakeDir();
    const base = makeContract({ dataset: "loose", primaryKey: ["id"] });
    const contract: Contract = { ...base, materialization: { ...base.materialization, strategy: "merge", strategyDeclared: true } };
    const events = [{ id: 1, v: "a" }, { id: "1", v: "b" }, { id: 1, v: "c" }, { id: 1.5, v: "d" }, { id: { k: 1 }, v: "e" }, { id: { k: 1 }, v: "f" }];
    const summary = await new StreamSink(contract, events, { targetPath, batchSize: 10, checkpoint: "memory" }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 6, goodCount: 4, badCount: 0, supersededCount: 2 });
    expect(await readTable(contract, { targetPath })).toHaveLength(4);
  });
});

describe("an append stream", () => {
  it("supersedes nothing and stores a null key as it is", async () => {
    const targetPath = lakeDir();
    const contract = rides("append", "duckdb");
    const summary = await new StreamSink(contract, EVENTS, { targetPath, batchSize: 4, checkpoint: "memory" }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 12, goodCount: 12, badCount: 0, supersededCount: 0 });
    expect(await readTable(contract, { targetPath })).toHaveLength(12);
  });
});
