import { describe, expect, it } from "vitest";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";
import { ConfigError } from "../../src/errors.js";
import { DuckDBTargetCheckpointStore, openLake, readQuarantine, readTable, type LakeWriter } from "../../src/lake/index.js";
import { makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();

const KEY = "stream::orders";

function record(batchId: number, cursor: unknown, writerId = "run-a"): CheckpointRecord {
  return {
    key: KEY,
    cursor,
    batchId,
    committedAt: new Date(1_700_000_000_000 + batchId),
    batch: { sourceCount: 3, goodCount: 2, badCount: 1, supersededCount: 0 },
    totals: { sourceCount: 3 * batchId, goodCount: 2 * batchId, badCount: batchId, supersededCount: 0 },
    writerId,
  };
}

const badRow = (i: number) => ({ record: { id: `bad${i}` }, errors: [{ ruleId: "r", message: "m" }], position: i });

function storeOf(w: LakeWriter) {
  if (!w.checkpointStore) throw new Error("writer has no checkpoint store");
  return w.checkpointStore();
}

describe("checkpoint in the duckdb target", () => {
  // append: only the checkpoint in the same transaction makes it exactly-once
  const contract = makeContract({ strategy: "append" });

  it("commits rows and cursor together; the store reads it back with its types", async () => {
    const targetPath = lakeDir("cp-basic");
    const w = await openLake(contract, { targetPath });
    const store = storeOf(w);
    expect(await store.load(KEY)).toBeUndefined();
    const cursor = { "orders:0": 41n, at: new Date("2024-05-01T00:00:00.000Z"), watermark: "10.50" };
    const r = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }, { id: 2, name: "b" }], bad: [badRow(1)], checkpoint: record(1, cursor) });
    expect(r).toEqual({ goodWritten: 2, badWritten: 1, badAlreadyPresent: 0, checkpointOutcome: "committed" });
    const loaded = await store.load(KEY);
    expect(loaded).toEqual(record(1, cursor));
    await store.close();
    await w.close();
  });

  it("an identical retry by the same writer is already-committed and writes nothing", async () => {
    const targetPath = lakeDir("cp-retry");
    const w = await openLake(contract, { targetPath });
    const req = { batchId: 1, good: [{ id: 1, name: "a" }], bad: [badRow(1)], checkpoint: record(1, 10n) };
    await w.write(req);
    const again = await w.write({ ...req, checkpoint: { ...req.checkpoint, committedAt: new Date() } });
    expect(again).toEqual({ goodWritten: 0, badWritten: 0, badAlreadyPresent: 0, checkpointOutcome: "already-committed" });
    await w.close();
    expect(await readTable(contract, { targetPath })).toEqual([{ id: 1, name: "a" }]);
    expect(await readQuarantine(contract, { targetPath })).toHaveLength(1);
  });

  it("a lost compare-and-set throws CheckpointConflictError and writes no rows", async () => {
    const targetPath = lakeDir("cp-conflict");
    const w = await openLake(contract, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [], checkpoint: record(1, 1n) });

    // Skipping a batch.
    const skip = w.write({ batchId: 3, good: [{ id: 3, name: "c" }], bad: [badRow(3)], checkpoint: record(3, 3n) });
    await expect(skip).rejects.toBeInstanceOf(CheckpointConflictError);
    await expect(skip).rejects.toThrow(/stream::orders.*batch 3.*batch 1.*Another writer owns this stream/s);

    // A rival writer with the same batch id, and a rival that already advanced the stream.
    await expect(
      w.write({ batchId: 1, good: [{ id: 9, name: "rival" }], bad: [], checkpoint: record(1, 1n, "run-b") }),
    ).rejects.toBeInstanceOf(CheckpointConflictError);
    await expect(
      w.write({ batchId: 1, good: [{ id: 9, name: "same writer, other cursor" }], bad: [], checkpoint: record(1, 2n) }),
    ).rejects.toBeInstanceOf(CheckpointConflictError);

    const err = await w
      .write({ batchId: 3, good: [], bad: [], checkpoint: record(3, 3n) })
      .catch((e: unknown) => e as CheckpointConflictError);
    expect(err).toMatchObject({ key: KEY, storedBatchId: 1, attemptedBatchId: 3, code: "CHECKPOINT_CONFLICT" });

    await w.write({ batchId: 2, good: [{ id: 2, name: "b" }], bad: [], checkpoint: record(2, 2n) });
    await w.close();
    const ids = (await readTable(contract, { targetPath })).map((r) => r.id).sort();
    expect(ids).toEqual([1, 2]);
    expect(await readQuarantine(contract, { targetPath })).toEqual([]);
  });

  it("the first commit must be batch 1", async () => {
    const targetPath = lakeDir("cp-first");
    const w = await openLake(contract, { targetPath });
    await expect(w.write({ batchId: 2, good: [{ id: 1, name: "a" }], bad: [], checkpoint: record(2, 0) })).rejects.toBeInstanceOf(
      CheckpointConflictError,
    );
    await w.close();
    expect(await readTable(contract, { targetPath })).toEqual([]);
  });

  it("the store commits on its own with the same rules, beside an open writer", async () => {
    const targetPath = lakeDir("cp-store");
    const w = await openLake(contract, { targetPath });
    const store = storeOf(w);
    expect(await store.commit(record(1, "a"))).toBe("committed");
    expect(await store.commit(record(1, "a"))).toBe("already-committed");
    await expect(store.commit(record(1, "a", "run-b"))).rejects.toBeInstanceOf(CheckpointConflictError);
    await expect(store.commit(record(3, "c"))).rejects.toBeInstanceOf(CheckpointConflictError);
    // The writer continues the same sequence.
    await w.write({ batchId: 2, good: [{ id: 1, name: "a" }], bad: [], checkpoint: record(2, "b") });
    expect((await store.load(KEY))?.cursor).toBe("b");
    await store.close();
    await w.close();

    // Another store on the same lake after everything closed sees the same state.
    const again = DuckDBTargetCheckpointStore.forLake(targetPath);
    expect((await again.load(KEY))?.batchId).toBe(2);
    await again.close();
  });

  it("two writers in one process serialise their transactions on the shared database", async () => {
    const targetPath = lakeDir("cp-two");
    const other = makeContract({ dataset: "payments", strategy: "append" });
    const [a, b] = await Promise.all([openLake(contract, { targetPath }), openLake(other, { targetPath })]);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).write({ batchId: i + 1, good: [{ id: i, name: String(i) }], bad: [] }),
      ),
    );
    await Promise.all([a.close(), b.close()]);
    expect(await readTable(contract, { targetPath })).toHaveLength(5);
    expect(await readTable(other, { targetPath })).toHaveLength(5);
  });

  it("parquet cannot hold checkpoints: a ConfigError naming the option", async () => {
    const c = makeContract({ format: "parquet" });
    const targetPath = lakeDir("cp-parquet");
    const w = await openLake(c, { targetPath });
    expect(() => storeOf(w)).toThrow(ConfigError);
    await expect(w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [], checkpoint: record(1, 1) })).rejects.toThrow(
      /checkpoint:.*duckdb/,
    );
    await w.close();
    expect(await readTable(c, { targetPath })).toEqual([]);
  });
});
