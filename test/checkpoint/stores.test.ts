import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import { MemoryCheckpointStore } from "../../src/checkpoint/memory.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointStore } from "../../src/checkpoint/types.js";
import { record } from "./conformance.js";

const dir = mkdtempSync(join(tmpdir(), "ll-ckpt-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores: Array<[string, () => CheckpointStore]> = [
  ["memory", () => new MemoryCheckpointStore()],
  ["sqlite", () => new SQLiteCheckpointStore(join(dir, `${Math.random()}.sqlite`))],
];

describe.each(stores)("%s checkpoint store", (_name, make) => {
  it("starts empty and commits batch 1, then 2", async () => {
    const s = make();
    expect(await s.load("orders")).toBeUndefined();
    expect(await s.commit(record(1, { offset: 10 }))).toBe("committed");
    expect(await s.commit(record(2, { offset: 20 }))).toBe("committed");
    const got = await s.load("orders");
    expect(got?.batchId).toBe(2);
    expect(got?.cursor).toEqual({ offset: 20 });
    expect(got?.totals).toEqual({ sourceCount: 20, goodCount: 18, badCount: 2, supersededCount: 0 });
    expect(got?.committedAt).toEqual(new Date(Date.UTC(2026, 0, 1, 0, 0, 2)));
    await s.close();
  });

  it("rejects a second writer with CheckpointConflictError naming the key", async () => {
    const s = make();
    await s.commit(record(1, "a", "w1"));
    await s.commit(record(2, "b", "w1"));
    // A rival that loaded batch 1 and now tries to commit its own batch 2.
    const err = await s.commit(record(2, "x", "w2")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointConflictError);
    expect((err as CheckpointConflictError).key).toBe("orders");
    expect((err as Error).message).toContain('"orders"');
    // Skipping ahead is a conflict too.
    await expect(s.commit(record(4, "c", "w1"))).rejects.toBeInstanceOf(CheckpointConflictError);
    expect((await s.load("orders"))?.cursor).toBe("b");
    await s.close();
  });

  it("treats an identical repeat by the same writer as already committed (a retried activity)", async () => {
    const s = make();
    await s.commit(record(1, { p: 1 }));
    expect(await s.commit(record(1, { p: 1 }))).toBe("already-committed");
    await expect(s.commit(record(1, { p: 2 }))).rejects.toBeInstanceOf(CheckpointConflictError);
    await s.close();
  });

  it("keeps keys apart", async () => {
    const s = make();
    await s.commit(record(1, 1, "w", "a"));
    await s.commit(record(1, 2, "w", "b"));
    expect((await s.load("a"))?.cursor).toBe(1);
    expect((await s.load("b"))?.cursor).toBe(2);
    await s.close();
  });

  it("round-trips typed cursors: bigint, Date, decimal strings", async () => {
    const s = make();
    const cursor = {
      watermark: new Date("2024-02-29T12:34:56.789Z"),
      tieBreaker: 9007199254740993n,
      amount: "12345678901234567890.12",
      offsets: { "orders:0": 12n, "orders:1": 0n },
    };
    await s.commit(record(1, cursor));
    const got = await s.load("orders");
    expect(got?.cursor).toEqual(cursor);
    expect((got?.cursor as typeof cursor).tieBreaker).toBeTypeOf("bigint");
    expect((got?.cursor as typeof cursor).watermark).toBeInstanceOf(Date);
    await s.close();
  });
});

describe("SQLiteCheckpointStore durability", () => {
  it("survives reopening, and two handles on one file obey compare-and-set", async () => {
    const path = join(dir, "shared.sqlite");
    const a = new SQLiteCheckpointStore(path);
    const b = new SQLiteCheckpointStore(path);
    await a.commit(record(1, "x", "A"));
    // b loaded nothing, so it believes it commits batch 1: it must lose.
    await expect(b.commit(record(1, "y", "B"))).rejects.toBeInstanceOf(CheckpointConflictError);
    await a.close();
    await b.close();
    const c = new SQLiteCheckpointStore(path);
    expect((await c.load("orders"))?.cursor).toBe("x");
    await c.close();
  });
});
