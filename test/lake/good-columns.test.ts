/**
 * The DuckDB engine hands good rows to the lake as GoodColumns (DuckDB data chunks of typed
 * columns) and the DuckDB writer appends those chunks as they are. Whatever path a batch takes,
 * the table must hold exactly what writing the row objects holds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Contract } from "../../src/contract/types.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, GoodColumns, ValidationResult } from "../../src/engine/types.js";
import { acquireDatabase } from "../../src/lake/duckdb-db.js";
import { openLake, readTable } from "../../src/lake/index.js";
import type { WriteRequest } from "../../src/lake/types.js";
import { BIGINT, DuckDBDataChunk, VARCHAR } from "../../src/util/duckdb.js";
import { generateCorpus, parityContract } from "../engine/corpus.js";
import { makeContract } from "../support/contract.js";
import { tempDir } from "./helpers.js";

type FieldInput = NonNullable<NonNullable<Parameters<typeof makeContract>[0]>["fields"]>[number];

const cleanups: Array<() => void> = [];
let engine: Engine;
beforeAll(async () => {
  engine = await createEngine("duckdb");
});
afterAll(async () => {
  await engine.close();
  cleanups.forEach((c) => c());
});

function lakeDir(label: string): string {
  const d = tempDir(label);
  cleanups.push(d.cleanup);
  return d.path;
}

function withTarget(c: Contract, strategy: "append" | "merge", primaryKey: string[] = []): Contract {
  return {
    ...c,
    primaryKey,
    materialization: { ...c.materialization, strategy, strategyDeclared: true },
    // Extra keys in the corpus are dropped, so good rows are exactly the fields.
    schemaPolicy: { ...c.schemaPolicy, unknownFields: "drop" },
  };
}

/** Write `result` to a fresh lake, through its GoodColumns or (columns: false) its rows only. */
async function store(contract: Contract, results: ValidationResult[], columns: boolean): Promise<unknown[]> {
  const targetPath = lakeDir(columns ? "gc-columns" : "gc-rows");
  const writer = await openLake(contract, { targetPath });
  let batchId = 0;
  for (const r of results) {
    const request: WriteRequest = { batchId: ++batchId, good: r.good, bad: [] };
    if (columns) {
      expect(r.goodColumns).toBeDefined();
      request.goodColumns = r.goodColumns;
    }
    await writer.write(request);
  }
  await writer.close();
  return readTable(contract, { targetPath });
}

describe("GoodColumns from the DuckDB engine into the DuckDB lake", () => {
  it("store exactly what the rows store, for every type and edge value of the parity corpus", async () => {
    const contract = withTarget(parityContract, "append");
    const results = [await engine.validate(generateCorpus(3000, 7), contract), await engine.validate(generateCorpus(500, 8), contract)];
    expect(results[0]!.goodColumns!.count).toBe(results[0]!.good.length);
    expect(results[0]!.goodCount).toBeGreaterThan(100);
    const viaColumns = await store(contract, results, true);
    const viaRows = await store(contract, results, false);
    expect(viaColumns).toHaveLength(results[0]!.goodCount + results[1]!.goodCount);
    expect(viaColumns).toEqual(viaRows);
  });

  it("merge: replace earlier rows by key, and a batch that repeats a key keeps its last row", async () => {
    const contract = withTarget(
      makeContract({ dataset: "gc_merge", fields: [{ name: "id", type: "integer" }, { name: "v", type: "string" }], unknownFields: "drop" }),
      "merge",
      ["id"],
    );
    const first = await engine.validate([{ id: 1, v: "a" }, { id: 2, v: "b" }, { id: 2n ** 60n, v: "big" }, { v: "null key" }], contract);
    const second = await engine.validate([{ id: 2, v: "b2" }, { id: null, v: "null key 2" }, { id: 2n ** 60n, v: "big2" }], contract);
    const third = await engine.validate([{ id: 3, v: "c" }, { id: "3", v: "c2" }], contract);
    // The engine compares the keys, so the writer need not: it quarantines a null key and keeps
    // the last row of a repeated key ("3" is the integer 3), counting the other as superseded.
    expect(first.goodColumns?.keys).toMatchObject({ fields: ["id"], unique: true, someNull: false });
    expect(first.bad.map((b) => b.errors[0]!.ruleId)).toEqual(["primary_key_not_null:id"]);
    expect(third.goodColumns?.keys).toMatchObject({ fields: ["id"], unique: true, someNull: false });
    expect(third.supersededCount).toBe(1);
    // …and spells them for the merge's delete, as text that casts back exactly.
    expect(JSON.parse(first.goodColumns!.keys!.doc!)).toEqual({ k0: ["1", "2", String(2n ** 60n)] });
    const viaColumns = await store(contract, [first, second, third], true);
    expect(viaColumns).toEqual(await store(contract, [first, second, third], false));
    const byId = new Map((viaColumns as Array<{ id: unknown; v: string }>).map((r) => [String(r.id), r.v]));
    expect(Object.fromEntries(byId)).toEqual({ "1": "a", "2": "b2", "3": "c2", [String(2n ** 60n)]: "big2" });
    expect(viaColumns).toHaveLength(4);
  });

  it("merge: the first key part's range is compared in the key's type, so a key stored inside it is replaced", async () => {
    // The writer skips the merge's delete when no stored key lies in the batch's range of the
    // first key part. Compared as text, each second batch below would look disjoint ("10" < "2",
    // "10.00" < "9.50") and the replaced keys would be duplicated.
    const cases: Array<{ fields: FieldInput[]; key: string[]; batches: Array<Array<Record<string, unknown>>>; range: unknown; want: Record<string, string> }> = [
      {
        fields: [{ name: "id", type: "integer" }, { name: "v", type: "string" }],
        key: ["id"],
        batches: [[{ id: 10, v: "a" }, { id: 11, v: "b" }], [{ id: 2, v: "c" }, { id: 10, v: "a2" }], [{ id: 12, v: "d" }]],
        range: { low: "2", high: "10" },
        want: { "10": "a2", "11": "b", "2": "c", "12": "d" },
      },
      {
        fields: [{ name: "id", type: "decimal", precision: 6, scale: 2 }, { name: "v", type: "string" }],
        key: ["id"],
        batches: [[{ id: 9.5, v: "a" }], [{ id: "9.50", v: "a2" }, { id: 10, v: "b" }]],
        range: { low: "9.50", high: "10.00" },
        want: { "9.50": "a2", "10.00": "b" },
      },
      {
        fields: [{ name: "at", type: "timestamp" }, { name: "k", type: "string" }, { name: "v", type: "string" }],
        key: ["at", "k"],
        batches: [
          [{ at: "2024-01-02T00:00:00Z", k: "x", v: "a" }, { at: "2024-01-03T00:00:00Z", k: "y", v: "b" }],
          [{ at: "2024-01-01T00:00:00Z", k: "x", v: "c" }, { at: "2024-01-02T00:00:00.000Z", k: "x", v: "a2" }],
        ],
        range: { low: "2024-01-01 00:00:00", high: "2024-01-02 00:00:00" },
        want: { "2024-01-02T00:00:00.000Z|x": "a2", "2024-01-03T00:00:00.000Z|y": "b", "2024-01-01T00:00:00.000Z|x": "c" },
      },
    ];
    for (const c of cases) {
      const contract = withTarget(makeContract({ dataset: "gc_range", fields: c.fields, unknownFields: "drop" }), "merge", c.key);
      const results: ValidationResult[] = [];
      for (const b of c.batches) results.push(await engine.validate(b, contract));
      expect(results[1]!.goodColumns?.keys?.range).toEqual(c.range);
      const viaColumns = (await store(contract, results, true)) as Array<Record<string, unknown>>;
      expect(viaColumns).toEqual(await store(contract, results, false));
      const got = Object.fromEntries(viaColumns.map((r) => [c.key.map((k) => String(r[k])).join("|"), r["v"]]));
      expect(got).toEqual(c.want);
      expect(viaColumns).toHaveLength(Object.keys(c.want).length);
    }
  });

  it("fill a table whose columns are not the contract's (a field dropped, one added) by name", async () => {
    const fields = (last: FieldInput) => [{ name: "id", type: "integer" as const }, { name: "a", type: "string" as const }, last];
    const v1 = withTarget(makeContract({ dataset: "gc_evolve", fields: fields({ name: "b", type: "double" }) }), "merge", ["id"]);
    const v2 = withTarget(makeContract({ dataset: "gc_evolve", fields: fields({ name: "c", type: "timestamp" }) }), "merge", ["id"]);
    const first = await engine.validate([{ id: 1, a: "x", b: 1.5 }, { id: 2, a: "y", b: 2.5 }], v1);
    const second = await engine.validate([{ id: 2, a: "y2", c: "2024-05-01T10:00:00Z" }, { id: 3, a: "z", c: null }], v2);
    expect(second.goodColumns).toBeDefined();
    const tables: unknown[][] = [];
    for (const columns of [true, false]) {
      const targetPath = lakeDir("gc-evolve");
      const w1 = await openLake(v1, { targetPath });
      await w1.write({ batchId: 1, good: first.good, bad: [] });
      await w1.close();
      const w2 = await openLake(v2, { targetPath });
      const request: WriteRequest = { batchId: 2, good: second.good, bad: [] };
      if (columns) request.goodColumns = second.goodColumns;
      expect((await w2.write(request)).goodWritten).toBe(2);
      await w2.close();
      tables.push(await readTable(v2, { targetPath }));
    }
    expect(tables[0]).toEqual(tables[1]);
    const byId = Object.fromEntries((tables[0] as Array<{ id: number; a: string; c: unknown }>).map((r) => [r.id, [r.a, r.c]]));
    expect(byId).toEqual({ 1: ["x", null], 2: ["y2", "2024-05-01T10:00:00.000Z"], 3: ["z", null] });
  });

  it("number their rows after the table's last sequence number, appended directly or through the staging table", async () => {
    const fields = (last: FieldInput) => [{ name: "id", type: "integer" as const }, last];
    const v1 = withTarget(makeContract({ dataset: "gc_seq", fields: fields({ name: "a", type: "string" }) }), "merge", ["id"]);
    const v2 = withTarget(makeContract({ dataset: "gc_seq", fields: fields({ name: "b", type: "string" }) }), "merge", ["id"]);
    const targetPath = lakeDir("gc-seq");
    const write = async (contract: Contract, batchId: number, records: Array<Record<string, unknown>>) => {
      const r = await engine.validate(records, contract);
      expect(r.goodColumns).toBeDefined();
      const w = await openLake(contract, { targetPath });
      await w.write({ batchId, good: r.good, bad: [], goodColumns: r.goodColumns });
      await w.close();
      return (w as unknown as { databasePath: string }).databasePath;
    };
    // The table's columns are v1's then the sequence: appended directly.
    await write(v1, 1, [{ id: 1, a: "x" }, { id: 2, a: "y" }, { id: 3, a: "z" }]);
    await write(v1, 2, [{ id: 2, a: "y2" }, { id: 4, a: "w" }]);
    // v2 drops `a` and adds `b`: the table's layout is no longer the contract's, so staged.
    const file = await write(v2, 3, [{ id: 5, b: "v" }, { id: 1, b: "x2" }]);
    const db = await acquireDatabase(file);
    const conn = await db.connect();
    const rows = await db.exclusive(async () => (await conn.runAndReadAll("SELECT id, _lakelogic_seq FROM gc_seq ORDER BY id")).getRows());
    db.release();
    // Rows number on from the last number taken, in arrival order; a replaced row gets a new, greater one.
    expect(rows).toEqual([
      [1n, 7n],
      [2n, 4n],
      [3n, 3n],
      [4n, 5n],
      [5n, 6n],
    ]);
  });

  it("json values with a lone surrogate are stored as the rows store them (U+FFFD), as JSON DuckDB reads", async () => {
    const contract = withTarget(
      makeContract({ dataset: "gc_surrogate", fields: [{ name: "id", type: "integer" }, { name: "doc", type: "json" }] }),
      "append",
    );
    const r = await engine.validate([{ id: 1, doc: { k: "a\ud800b" } }, { id: 2, doc: "\udc00" }], contract);
    const viaColumns = await store(contract, [r], true);
    expect(viaColumns).toEqual(await store(contract, [r], false));
    expect(viaColumns).toEqual([{ id: 1, doc: { k: "a\ufffdb" } }, { id: 2, doc: "\ufffd" }]);
  });

  it("a batch whose chunks fail to append leaves the table as it was, and the next batch is written", async () => {
    const contract = withTarget(
      makeContract({ dataset: "gc_fail", fields: [{ name: "id", type: "integer" }, { name: "doc", type: "json" }] }),
      "merge",
      ["id"],
    );
    const targetPath = lakeDir("gc-fail");
    const writer = await openLake(contract, { targetPath });
    const first = await engine.validate([{ id: 1, doc: { a: 1 } }], contract);
    await writer.write({ batchId: 1, good: first.good, bad: [], goodColumns: first.goodColumns! });
    // Hand-made columns whose ids are text: the second chunk's does not cast to BIGINT, so the
    // append fails after the merge deleted id 1 and the first chunk went in; the transaction
    // must take both back.
    const chunk = (ids: string[], docs: string[]) => {
      const c = DuckDBDataChunk.create([VARCHAR, VARCHAR, BIGINT], ids.length);
      c.setColumnValues(0, ids);
      c.setColumnValues(1, docs);
      c.setColumnValues(2, ids.map((_, i) => BigInt(i)));
      return c;
    };
    const broken: GoodColumns = {
      count: 3,
      fields: first.goodColumns!.fields,
      extraColumn: false,
      chunks: [chunk(["1", "2"], ['{"a":2}', "[]"]), chunk(["three"], ["{}"])],
      keys: { fields: ["id"], unique: true, someNull: false, doc: '{"k0":["1","2","3"]}' },
    };
    await expect(writer.write({ batchId: 2, good: [], bad: [], goodColumns: broken })).rejects.toThrow(/batch 2 was not written/);
    expect(await readTable(contract, { targetPath })).toEqual([{ id: 1, doc: { a: 1 } }]);
    const third = await engine.validate([{ id: 1, doc: [1] }, { id: 4, doc: "x" }], contract);
    await writer.write({ batchId: 2, good: third.good, bad: [], goodColumns: third.goodColumns! });
    await writer.close();
    const rows = (await readTable(contract, { targetPath })) as Array<{ id: number }>;
    expect(rows.sort((a, b) => a.id - b.id)).toEqual([{ id: 1, doc: [1] }, { id: 4, doc: "x" }]);
  });

  it("the writer never builds the rows when the columns fit the table", async () => {
    const contract = withTarget(parityContract, "append");
    const r = await engine.validate(generateCorpus(200, 9), contract);
    const targetPath = lakeDir("gc-lazy");
    const writer = await openLake(contract, { targetPath });
    const request = { batchId: 1, bad: [], goodColumns: r.goodColumns } as unknown as WriteRequest;
    Object.defineProperty(request, "good", {
      get: () => {
        throw new Error("rows were read");
      },
    });
    const result = await writer.write(request);
    await writer.close();
    expect(result.goodWritten).toBe(r.goodCount);
  });

  it("are given only when the good rows are exactly the contract's fields", async () => {
    const fields = [
      { name: "id", type: "integer" as const },
      { name: "name", type: "string" as const },
    ];
    const allow = makeContract({ fields, unknownFields: "allow" });
    const allowed = (await engine.validate([{ id: 1, name: "a" }], allow)).goodColumns;
    expect(allowed?.fields).toEqual([
      { name: "id", type: "integer" },
      { name: "name", type: "string" },
    ]);
    // …then the column for undeclared keys the table keeps under `allow`: NULL, since there are none.
    expect(allowed?.extraColumn).toBe(true);
    // Last, the row slot the lake numbers: the row's position in the batch.
    expect(allowed?.chunks?.map((c) => c.getColumns())).toEqual([[[1n], ["a"], [null], [0n]]]);
    // An extra key travels with its row, which the columns cannot carry.
    expect((await engine.validate([{ id: 1, extra: true }], allow)).goodColumns).toBeUndefined();
    expect((await engine.validate([{ id: 1, extra: true }], makeContract({ fields, unknownFields: "drop" }))).goodColumns).toBeDefined();
    // No declared fields: rows are the records themselves.
    expect((await engine.validate([{ id: 1 }], makeContract({ fields: [] }))).goodColumns).toBeUndefined();
    // No text field to carry the batch's summary: the chunks stay in the engine, the rows do not.
    const numeric = await engine.validate([{ id: 1 }, { id: 2 }, { id: "x" }], makeContract({ fields: [fields[0]!], unknownFields: "drop" }));
    expect(numeric.goodColumns).toBeUndefined();
    expect(numeric.good).toEqual([{ id: 1 }, { id: 2 }]);
  });
});
