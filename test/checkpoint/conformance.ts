/**
 * The behaviour every CheckpointStore must share (types.ts): compare-and-set on batchId, a
 * retried commit by the same writer is "already-committed", a rival is CheckpointConflictError,
 * typed cursors survive, a reopened store reads what was committed, and two writers racing for
 * one batch cannot both win (I3). Run against each store by its test file.
 */
import { describe, expect, it } from "vitest";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import type { CheckpointRecord, CheckpointStore } from "../../src/checkpoint/types.js";

/** A fresh, empty location; calling the result opens another handle on that same location. */
export type NewLocation = () => Promise<() => Promise<CheckpointStore>>;

export interface ConformanceOptions {
  /** Count fields beyond the three known ones round-trip (stores that serialise the counts whole). */
  keepsExtraCounts: boolean;
}

export function record(batchId: number, cursor: unknown, writerId = "w1", key = "orders"): CheckpointRecord {
  return {
    key,
    cursor,
    batchId,
    committedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, batchId)),
    batch: { sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 },
    totals: { sourceCount: 10 * batchId, goodCount: 9 * batchId, badCount: batchId, supersededCount: 0 },
    writerId,
  };
}

async function conflictOf(p: Promise<unknown>): Promise<CheckpointConflictError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CheckpointConflictError);
  return err as CheckpointConflictError;
}

export function checkpointStoreConformance(name: string, newLocation: NewLocation, options: ConformanceOptions): void {
  describe(`${name}: CheckpointStore conformance`, () => {
    it("starts empty, commits batch 1 then 2, and reads every field back", async () => {
      const s = await (await newLocation())();
      expect(await s.load("orders")).toBeUndefined();
      expect(await s.commit(record(1, { offset: 10 }))).toBe("committed");
      expect(await s.commit(record(2, { offset: 20 }))).toBe("committed");
      expect(await s.load("orders")).toEqual(record(2, { offset: 20 }));
      await s.close();
    });

    it("refuses a rival writer and a skip ahead with CheckpointConflictError, leaving the stored batch alone", async () => {
      const s = await (await newLocation())();
      await s.commit(record(1, "a", "w1"));
      await s.commit(record(2, "b", "w1"));
      const err = await conflictOf(s.commit(record(2, "x", "w2")));
      expect(err.key).toBe("orders");
      expect(err.storedBatchId).toBe(2);
      expect(err.storedWriterId).toBe("w1");
      expect(err.retriable).toBe(false);
      await conflictOf(s.commit(record(4, "c", "w1")));
      expect(await s.load("orders")).toEqual(record(2, "b", "w1"));
      await s.close();
    });

    it("answers an identical repeat by the same writer with already-committed, from any handle", async () => {
      const open = await newLocation();
      const a = await open();
      await a.commit(record(1, { p: 1 }));
      expect(await a.commit(record(1, { p: 1 }))).toBe("already-committed");
      const b = await open();
      expect(await b.commit(record(1, { p: 1 }))).toBe("already-committed");
      await conflictOf(b.commit(record(1, { p: 2 })));
      await conflictOf(b.commit(record(1, { p: 1 }, "w2")));
      await a.close();
      await b.close();
    });

    it("keeps keys apart, including keys that differ only in characters an object name cannot hold", async () => {
      const s = await (await newLocation())();
      const keys = ["a", "b", "stream::orders", "a/b", "a_b", "a%2Fb", "ü ñ", ".."];
      for (const [i, key] of keys.entries()) await s.commit(record(1, i, "w", key));
      for (const [i, key] of keys.entries()) expect((await s.load(key))?.cursor).toBe(i);
      await s.close();
    });

    it("round-trips typed cursors: bigint, Date, decimal strings", async () => {
      const s = await (await newLocation())();
      const cursor = {
        watermark: new Date("2024-02-29T12:34:56.789Z"),
        tieBreaker: 9007199254740993n,
        amount: "12345678901234567890.12",
        offsets: { "orders:0": 12n, "orders:1": 0n },
        $dollar: ["x", null, 1.5],
      };
      await s.commit(record(1, cursor));
      const got = (await s.load("orders"))?.cursor as typeof cursor;
      expect(got).toEqual(cursor);
      expect(got.tieBreaker).toBeTypeOf("bigint");
      expect(got.watermark).toBeInstanceOf(Date);
      await s.close();
    });

    it("survives reopening: a new handle resumes where the last one stopped", async () => {
      const open = await newLocation();
      const a = await open();
      await a.commit(record(1, { offset: 1n }, "run-1"));
      await a.close();
      const b = await open();
      expect(await b.load("orders")).toEqual(record(1, { offset: 1n }, "run-1"));
      expect(await b.commit(record(2, { offset: 2n }, "run-2"))).toBe("committed");
      await b.close();
      const c = await open();
      expect((await c.load("orders"))?.writerId).toBe("run-2");
      await c.close();
    });

    it("lets exactly one of two writers racing for the same batch commit (I3)", async () => {
      const open = await newLocation();
      const [a, b] = [await open(), await open()];
      expect(await a.load("orders")).toBeUndefined();
      expect(await b.load("orders")).toBeUndefined();
      const results = await Promise.allSettled([a.commit(record(1, "A", "A")), b.commit(record(1, "B", "B"))]);
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect(won).toHaveLength(1);
      expect(won[0]).toMatchObject({ value: "committed" });
      expect(lost).toHaveLength(1);
      expect(lost[0]!.reason).toBeInstanceOf(CheckpointConflictError);
      const winner = results[0].status === "fulfilled" ? "A" : "B";
      const c = await open();
      expect((await c.load("orders"))?.writerId).toBe(winner);
      await c.close();
      await a.close();
      await b.close();
    });

    it("decides on what is stored now, not on what a handle saw earlier", async () => {
      const open = await newLocation();
      const [a, b] = [await open(), await open()];
      await a.commit(record(1, 1, "w"));
      await b.commit(record(2, 2, "w")); // a still remembers batch 1
      await conflictOf(a.commit(record(2, 20, "other")));
      expect(await a.commit(record(3, 3, "w"))).toBe("committed");
      expect((await b.load("orders"))?.cursor).toBe(3);
      await a.close();
      await b.close();
    });

    it("keeps the superseded count of batch and totals", async () => {
      const s = await (await newLocation())();
      const r = record(1, "c");
      const counted = { ...r, batch: { ...r.batch, supersededCount: 2 }, totals: { ...r.totals, supersededCount: 7 } };
      await s.commit(counted);
      expect(await s.load("orders")).toEqual(counted);
      await s.close();
    });

    it.runIf(options.keepsExtraCounts)("keeps every count field of batch and totals, not only the known ones", async () => {
      const s = await (await newLocation())();
      const r = record(1, "c");
      const extra = { ...r, batch: { ...r.batch, laterCount: 2 }, totals: { ...r.totals, laterCount: 7 } };
      await s.commit(extra);
      expect(await s.load("orders")).toEqual(extra);
      await s.close();
    });
  });
}
