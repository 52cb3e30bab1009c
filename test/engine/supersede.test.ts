/**
 * Keyed targets (merge, overwrite with a primary key): within one batch the last good row per
 * key wins (arrival order) and the earlier ones are counted as superseded; a null or missing
 * key part is quarantined. Every record is then counted exactly once:
 * records = good + bad + superseded, on both engines.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Contract, Strategy } from "../../src/contract/types.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, ValidationResult } from "../../src/engine/types.js";
import { makeContract, type ContractInput } from "../support/contract.js";

const engines: Record<string, Engine> = {};
beforeAll(async () => {
  engines.duckdb = await createEngine("duckdb");
  engines.polars = await createEngine("polars");
});
afterAll(async () => {
  for (const e of Object.values(engines)) await e.close();
});

function keyed(strategy: Strategy, input: ContractInput): Contract {
  const c = makeContract({ unknownFields: "drop", ...input });
  return { ...c, materialization: { ...c.materialization, strategy, strategyDeclared: true } };
}

const RIDES: ContractInput = {
  dataset: "rides",
  fields: [
    { name: "ride_id", type: "integer" },
    { name: "status", type: "string" },
    { name: "fare", type: "double" },
  ],
  primaryKey: ["ride_id"],
};

/** records = good + bad + superseded, and the good rows are what GoodColumns carry. */
function expectReconciles(records: readonly unknown[], r: ValidationResult): void {
  expect(r.goodCount + r.bad.length + r.supersededCount).toBe(records.length);
  expect(r.good).toHaveLength(r.goodCount);
  if (r.goodColumns) expect(r.goodColumns.count).toBe(r.goodCount);
}

describe.each(["duckdb", "polars"])("superseded rows on %s", (name) => {
  const engine = () => engines[name]!;

  it("merge: the last event per key wins, earlier ones are superseded, null keys are quarantined", async () => {
    const records = [
      { ride_id: 1, status: "completed", fare: 10 },
      { ride_id: 2, status: "completed", fare: 7 },
      { ride_id: "1", status: "refunded", fare: 10 }, // "1" is the integer key 1
      { ride_id: null, status: "x" },
      { status: "no id" },
      { ride_id: 3, status: "a" },
      { ride_id: 1, status: "disputed", fare: 10 },
      { ride_id: 3, status: "b" },
    ];
    const r = await engine().validate(records, keyed("merge", RIDES));
    expectReconciles(records, r);
    expect(r.good).toEqual([
      { ride_id: 2, status: "completed", fare: 7 },
      { ride_id: 1, status: "disputed", fare: 10 },
      { ride_id: 3, status: "b", fare: null },
    ]);
    expect(r.supersededCount).toBe(3);
    expect(r.bad.map((b) => b.index)).toEqual([3, 4]);
    for (const b of r.bad) {
      expect(b.errors).toEqual([
        { ruleId: "primary_key_not_null:ride_id", message: expect.stringMatching(/^ride_id is null or missing: .*primary key/) as unknown },
      ]);
    }
    expect(r.ruleCounts).toContainEqual({ ruleId: "primary_key_not_null:ride_id", severity: "error", failed: 2 });
    if (r.goodColumns?.keys) expect(r.goodColumns.keys).toMatchObject({ unique: true, someNull: false });
  });

  it("a later bad event does not supersede an earlier good one: it is quarantined, and the good one is written", async () => {
    const records = [
      { ride_id: 1, status: "completed", fare: 10 },
      { ride_id: 1, status: "refunded", fare: "not a number" },
    ];
    const r = await engine().validate(records, keyed("merge", RIDES));
    expectReconciles(records, r);
    expect(r.good).toEqual([{ ride_id: 1, status: "completed", fare: 10 }]);
    expect(r.bad.map((b) => b.index)).toEqual([1]);
    expect(r.supersededCount).toBe(0);
  });

  it("a composite key compares every part, strings exactly", async () => {
    const contract = keyed("merge", {
      dataset: "lines",
      fields: [
        { name: "order_id", type: "string" },
        { name: "line", type: "integer" },
        { name: "qty", type: "integer" },
      ],
      primaryKey: ["order_id", "line"],
    });
    const records = [
      { order_id: "A", line: 1, qty: 1 },
      { order_id: "a", line: 1, qty: 2 },
      { order_id: "A", line: 2, qty: 3 },
      { order_id: "A", line: 1, qty: 4 },
      { order_id: "A", qty: 5 },
    ];
    const r = await engine().validate(records, contract);
    expectReconciles(records, r);
    expect(r.good).toEqual([
      { order_id: "a", line: 1, qty: 2 },
      { order_id: "A", line: 2, qty: 3 },
      { order_id: "A", line: 1, qty: 4 },
    ]);
    expect(r.supersededCount).toBe(1);
    expect(r.bad[0]!.errors.map((e) => e.ruleId)).toEqual(["primary_key_not_null:line"]);
  });

  it("overwrite with a primary key replaces by key too: the same supersession", async () => {
    const records = [{ ride_id: 5, status: "a" }, { ride_id: 5, status: "b" }];
    const r = await engine().validate(records, keyed("overwrite", RIDES));
    expectReconciles(records, r);
    expect(r.good).toEqual([{ ride_id: 5, status: "b", fare: null }]);
    expect(r.supersededCount).toBe(1);
  });

  it("append keeps every event, null keys included; scd2 keeps every version but quarantines a null key", async () => {
    const records = [{ ride_id: 1, status: "a" }, { ride_id: 1, status: "b" }, { status: "no id" }];
    const append = await engine().validate(records, keyed("append", RIDES));
    expectReconciles(records, append);
    expect(append.goodCount).toBe(3);
    expect(append.supersededCount).toBe(0);
    const scd2 = await engine().validate(records, keyed("scd2", RIDES));
    expectReconciles(records, scd2);
    expect(scd2.good.map((g) => g.status)).toEqual(["a", "b"]);
    expect(scd2.bad.map((b) => b.errors[0]!.ruleId)).toEqual(["primary_key_not_null:ride_id"]);
    expect(scd2.supersededCount).toBe(0);
  });

  it("a written not_null rule on the key is the reason, not a second one", async () => {
    const contract = keyed("merge", { ...RIDES, rowRules: [{ kind: "not_null", field: "ride_id" }] });
    const r = await engine().validate([{ status: "no id" }], contract);
    expect(r.bad[0]!.errors.map((e) => e.ruleId)).toEqual(["not_null:ride_id"]);
  });

  it("dataset rules measure the rows that are written", async () => {
    const contract = keyed("merge", { ...RIDES, datasetRules: [{ kind: "unique", fields: ["ride_id"] }, { kind: "row_count_between", max: 2 }] });
    const records = [{ ride_id: 1 }, { ride_id: 1 }, { ride_id: 2 }];
    const r = await engine().validate(records, contract);
    expectReconciles(records, r);
    expect(r.datasetRules.map((d) => [d.ruleId, d.passed, d.observed])).toEqual([
      ["unique:ride_id", true, 0],
      ["row_count_between", true, 2],
    ]);
  });

  it("a rule that throws on one row still leaves the counts whole", async () => {
    const contract = keyed("merge", {
      ...RIDES,
      rowRules: [{ kind: "sql", id: "cast_status", sql: "CAST(status AS INTEGER) >= 0" }],
    });
    const records = [{ ride_id: 1, status: "1" }, { ride_id: 1, status: "2" }, { ride_id: 2, status: "oops" }, { ride_id: 1, status: "3" }];
    const r = await engine().validate(records, contract);
    expectReconciles(records, r);
    expect(r.good).toEqual([{ ride_id: 1, status: "3", fare: null }]);
    expect(r.supersededCount).toBe(2);
    expect(r.bad.map((b) => b.index)).toEqual([2]);
  });

  it("a schemaless contract compares its key as written: 1 and \"1\" are two keys", async () => {
    const contract = keyed("merge", { dataset: "loose", primaryKey: ["id"] });
    const records = [{ id: 1, v: "a" }, { id: "1", v: "b" }, { id: 1, v: "c" }, { v: "no id" }, { id: { k: 1 }, v: "d" }, { id: { k: 1 }, v: "e" }];
    const r = await engine().validate(records, contract);
    expectReconciles(records, r);
    expect(r.good).toEqual([{ id: "1", v: "b" }, { id: 1, v: "c" }, { id: { k: 1 }, v: "e" }]);
    expect(r.supersededCount).toBe(2);
    expect(r.bad[0]!.errors.map((e) => e.ruleId)).toEqual(["primary_key_not_null:id"]);
  });

  it("a large merge batch stays in arrival order", async () => {
    const records = Array.from({ length: 5000 }, (_, i) => ({ ride_id: (i * 7919) % 1500, status: `s${i}` }));
    const r = await engine().validate(records, keyed("merge", RIDES));
    expectReconciles(records, r);
    expect(r.supersededCount).toBe(5000 - 1500);
    const last = new Map<number, number>();
    records.forEach((rec, i) => last.set(rec.ride_id, i));
    const want = [...last.values()].sort((a, b) => a - b).map((i) => records[i]!.status);
    expect(r.good.map((g) => g.status)).toEqual(want);
  });
});
