/**
 * format: delta on a local path, read back by delta-rs itself: strategies, deletes, exact
 * 64-bit values, quarantine as a Delta table, the stream's transaction id and checkpoint in the
 * table's commits, and two writers (two helper processes) racing for one batch.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";
import { openLake, readQuarantine, readTable, TableContractError, type LakeWriter } from "../../src/lake/index.js";
import { deltaTxnVersion, readDelta } from "../support/delta.js";
import { badRow, byKey, checkpointRecord, makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();
const KEY = "stream::orders";
const BIG = 9_007_199_254_740_993n; // 2^53 + 1: a double cannot hold it

const record = (batchId: number, cursor: unknown, writerId?: string): CheckpointRecord => checkpointRecord(KEY, batchId, cursor, writerId);
const bad = badRow;

const merge = makeContract({
  strategy: "merge",
  primaryKey: ["id"],
  format: "delta",
  fields: [["id", "integer"], ["name", "string"], ["amount", "decimal", 12, 2], ["at", "timestamp"], ["tags", "json"]],
});

function storeOf(w: LakeWriter) {
  if (!w.checkpointStore) throw new Error("writer has no checkpoint store");
  return w.checkpointStore();
}

describe("format delta", () => {
  it("merges on the key, deletes keys, keeps 64-bit ids and the types, as delta-rs reads them", async () => {
    const targetPath = lakeDir("delta-merge");
    const w = await openLake(merge, { targetPath });
    await w.write({
      batchId: 1,
      good: [
        { id: 1, name: "a", amount: "10.50", at: "2024-05-01T10:00:00.000Z", tags: { k: [1, 2] } },
        { id: BIG, name: "big", amount: "0.01", at: "2024-05-01T10:00:00.123456Z", tags: null },
        { id: 3, name: "c", amount: null, at: null, tags: ["x"] },
      ],
      bad: [],
    });
    const second = await w.write({ batchId: 2, good: [{ id: 1, name: "A", amount: "11.00", at: null, tags: null }], bad: [], deletes: [{ id: 3 }] });
    expect(second.goodWritten).toBe(1);
    await w.close();

    const snap = readDelta(join(targetPath, "orders"));
    const rows = byKey(snap.rows);
    expect(rows.map((r) => [r["id"], r["name"]])).toEqual([[1, "A"], [BIG, "big"]]);
    expect(rows[1]!["amount"]).toBe("0.01");
    // The project's own reader gives the canonical values back.
    const read = byKey(await readTable(merge, { targetPath }));
    expect(read).toEqual([
      { id: 1, name: "A", amount: "11.00", at: null, tags: null },
      { id: BIG, name: "big", amount: "0.01", at: "2024-05-01T10:00:00.123456Z", tags: null },
    ]);
  });

  it("appends and overwrites", async () => {
    const targetPath = lakeDir("delta-append");
    const append = makeContract({ format: "delta" });
    const a = await openLake(append, { targetPath });
    await a.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await a.write({ batchId: 2, good: [{ id: 1, name: "a" }], bad: [] });
    await a.close();
    expect(readDelta(join(targetPath, "orders")).rows).toHaveLength(2);

    const over = await openLake(makeContract({ format: "delta", strategy: "overwrite" }), { targetPath });
    await over.write({ batchId: 3, good: [{ id: 9, name: "z" }], bad: [] });
    await over.close();
    expect(readDelta(join(targetPath, "orders")).rows).toEqual([{ id: 9, name: "z" }]);
  });

  it("quarantines into a Delta table beside the target, once per row however often a batch is replayed", async () => {
    const targetPath = lakeDir("delta-quarantine");
    const w = await openLake(merge, { targetPath });
    const req = { batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1), bad(2)] };
    expect(await w.write(req)).toEqual({ goodWritten: 1, badWritten: 2, badAlreadyPresent: 0 });
    // A redelivering source sends the batch again: the rows are found, not added.
    expect(await w.write({ ...req, batchId: 2 })).toEqual({ goodWritten: 1, badWritten: 0, badAlreadyPresent: 2 });
    await w.close();
    const q = readDelta(join(targetPath, "orders_quarantine")).rows;
    expect(q).toHaveLength(2);
    expect(q.map((r) => JSON.parse(String(r["record"])) as unknown)).toEqual(expect.arrayContaining([{ id: "bad1" }, { id: "bad2" }]));
    const stored = await readQuarantine(merge, { targetPath });
    expect(stored.map((r) => r.reasons)).toEqual([["id must be an integer"], ["id must be an integer"]]);
  });

  it("keeps the stream's checkpoint in the table's commit (txn appId = key, version = batch)", async () => {
    const targetPath = lakeDir("delta-checkpoint");
    const w = await openLake(merge, { targetPath });
    const store = storeOf(w);
    expect(await store.load(KEY)).toBeUndefined();
    const cursor = { "orders:0": 41n, at: new Date("2024-05-01T00:00:00.000Z") };
    const r = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1)], checkpoint: record(1, cursor) });
    expect(r).toEqual({ goodWritten: 1, badWritten: 1, badAlreadyPresent: 0, checkpointOutcome: "committed" });
    expect(await store.load(KEY)).toEqual(record(1, cursor));
    expect(deltaTxnVersion(join(targetPath, "orders"), KEY)).toBe(1);

    // A retry of the same commit writes nothing; a rival's commit of batch 1 is refused.
    const retry = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1)], checkpoint: record(1, cursor) });
    expect(retry.checkpointOutcome).toBe("already-committed");
    await expect(w.write({ batchId: 1, good: [{ id: 2, name: "b" }], bad: [], checkpoint: record(1, cursor, "run-b") })).rejects.toBeInstanceOf(
      CheckpointConflictError,
    );
    // A skipped batch (3 after 1) is refused too: the table is the checkpoint.
    await expect(w.write({ batchId: 3, good: [], bad: [], checkpoint: record(3, 3n) })).rejects.toBeInstanceOf(CheckpointConflictError);
    await w.close();
    expect(readDelta(join(targetPath, "orders")).rows).toEqual([{ id: 1, name: "a", amount: null, at: null, tags: null }]);
  });

  it("two writers in two processes committing the same batch: exactly one wins", async () => {
    const targetPath = lakeDir("delta-race");
    const seed = await openLake(merge, { targetPath });
    await seed.write({ batchId: 1, good: [{ id: 0, name: "seed" }], bad: [], checkpoint: record(1, 1n) });
    await seed.close();
    for (let round = 2; round <= 6; round++) {
      const [a, b] = await Promise.all([openLake(merge, { targetPath }), openLake(merge, { targetPath })]);
      const results = await Promise.allSettled([
        a.write({ batchId: round, good: [{ id: round, name: "a" }], bad: [], checkpoint: record(round, BigInt(round), "run-a") }),
        b.write({ batchId: round, good: [{ id: round, name: "b" }, { id: 100 + round, name: "b" }], bad: [], checkpoint: record(round, BigInt(round), "run-b") }),
      ]);
      await Promise.all([a.close(), b.close()]);
      const won = results.filter((r) => r.status === "fulfilled");
      expect(won).toHaveLength(1);
      const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(CheckpointConflictError);
    }
    const rows = readDelta(join(targetPath, "orders")).rows;
    // One writer's rows per batch: id r from a, or r and 100+r from b — never both writers' batch.
    for (let round = 2; round <= 6; round++) {
      const names = rows.filter((r) => r["id"] === round).map((r) => r["name"]);
      expect(names).toHaveLength(1);
      expect(rows.some((r) => r["id"] === 100 + round)).toBe(names[0] === "b");
    }
    expect(deltaTxnVersion(join(targetPath, "orders"), KEY)).toBe(6);
  });

  it("refuses a contract whose key or types differ from the table's", async () => {
    const targetPath = lakeDir("delta-contract");
    const w = await openLake(merge, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await w.close();
    const otherKey = makeContract({ ...mergeOptions(), primaryKey: ["name"] });
    await expect(openLake(otherKey, { targetPath })).rejects.toBeInstanceOf(TableContractError);
    const otherType = makeContract({ ...mergeOptions(), fields: [["id", "string"], ["name", "string"]] });
    await expect(openLake(otherType, { targetPath })).rejects.toThrow(/model\.fields\.id: long → string/);
  });
});

function mergeOptions() {
  return { strategy: "merge" as const, primaryKey: ["id"], format: "delta" as const };
}
