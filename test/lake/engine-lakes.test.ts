/**
 * The two engines hand a lake their good rows in different forms: the DuckDB engine as DuckDB
 * data chunks, the Polars engine as a Parquet file (GoodColumns), and both as row objects built
 * on demand. Whatever the form and whichever lake format takes it, the same records must land as
 * the same stored values: 64-bit integers beyond 2^53, decimals, timestamps to the microsecond,
 * dates, json, NULLs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Contract, LakeFormat } from "../../src/contract/types.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, EngineName, ValidationResult } from "../../src/engine/types.js";
import { acquireDatabase } from "../../src/lake/duckdb-db.js";
import { openLake, readTable } from "../../src/lake/index.js";
import type { WriteRequest } from "../../src/lake/types.js";
import { defineLazy } from "../../src/util/lazy.js";
import { generateCorpus, parityContract } from "../engine/corpus.js";
import { makeContract } from "../support/contract.js";
import { tempDirs } from "./helpers.js";

const lakeDir = tempDirs();
const FORMATS: LakeFormat[] = ["duckdb", "parquet", "delta", "ducklake"];
const BIG = 9_007_199_254_740_993n; // 2^53 + 1: a double cannot hold it

const engines = new Map<EngineName, Engine>();
beforeAll(async () => {
  for (const name of ["duckdb", "polars"] as const) engines.set(name, await createEngine(name));
});
afterAll(async () => {
  for (const e of engines.values()) await e.close();
});

function target(c: Contract, format: LakeFormat, strategy: "append" | "merge", primaryKey: string[] = []): Contract {
  return {
    ...c,
    primaryKey,
    materialization: { ...c.materialization, format, strategy, strategyDeclared: true },
    quarantine: { ...c.quarantine, format },
    // Extra keys are dropped, so the good rows are exactly the fields and GoodColumns are given.
    schemaPolicy: { ...c.schemaPolicy, unknownFields: "drop" },
  };
}

/** Validate each batch on `engine` and write it as src/pipeline/commit.ts does; the table read back. */
async function land(engine: EngineName, contract: Contract, batches: unknown[][]): Promise<{ table: unknown[]; results: ValidationResult[] }> {
  const targetPath = lakeDir(`${engine}-${contract.materialization.format}`);
  const writer = await openLake(contract, { targetPath });
  const results: ValidationResult[] = [];
  try {
    let batchId = 0;
    for (const records of batches) {
      const r = await engines.get(engine)!.validate(records, contract);
      results.push(r);
      const request = { batchId: ++batchId, bad: [] } as unknown as WriteRequest;
      // The DuckDB lake stores GoodColumns as they are: it must not need the rows.
      const direct = r.goodColumns !== undefined && contract.materialization.format === "duckdb";
      defineLazy(request, "good", () => {
        if (direct) throw new Error("rows were read");
        return r.good;
      });
      if (r.goodColumns) request.goodColumns = r.goodColumns;
      await writer.write(request);
    }
  } finally {
    await writer.close();
  }
  return { table: await readTable(contract, { targetPath }), results };
}

const typed = makeContract({
  dataset: "typed",
  fields: [
    { name: "id", type: "integer" },
    { name: "name", type: "string" },
    { name: "amount", type: "decimal", precision: 12, scale: 2 },
    { name: "wide", type: "decimal", precision: 38, scale: 10 },
    { name: "at", type: "timestamp" },
    { name: "day", type: "date" },
    { name: "ratio", type: "double" },
    { name: "ok", type: "boolean" },
    { name: "doc", type: "json" },
  ],
  unknownFields: "drop",
});

const first = [
  { id: 1, name: "a", amount: "10.5", wide: "1234567890123456789012345678.0123456789", at: "2024-05-01T10:00:00.123456Z", day: "2024-02-29", ratio: -0, ok: true, doc: { k: [1, 2] } },
  { id: BIG, name: "big", amount: 0.01, wide: "-0.0000000001", at: "1970-01-01T00:00:00Z", day: "0001-01-01", ratio: 1e308, ok: false, doc: "text" },
  { id: 2n ** 62n, name: null, amount: "-9999999999.99", wide: null, at: "2024-01-01T10:00:00+05:30", day: null, ratio: 5e-324, ok: null, doc: null },
  { id: "-9223372036854775808", name: "min", amount: null, wide: 0, at: null, day: "9999-12-31", ratio: null, ok: "true", doc: 9007199254740993n },
  { id: 5, name: "bad amount", amount: "12,50" },
];
const second = [
  { id: BIG, name: "big again", amount: "0.10", at: "2024-05-01T10:00:00.000001Z", doc: [null, { deep: true }] },
  { id: 6, name: "six", amount: 6 },
  { id: 1, name: "a again", amount: "10.49" },
];

describe.each(FORMATS)("good rows of both engines in format %s", (format) => {
  it("land as the same values: append of the parity corpus (every type and edge value)", async () => {
    const contract = target(parityContract, format, "append");
    const batches = [generateCorpus(3000, 7), generateCorpus(500, 8)];
    const duck = await land("duckdb", contract, batches);
    const polars = await land("polars", contract, batches);
    expect(polars.results[0]!.goodCount).toBeGreaterThan(100);
    // The Polars engine's good rows travel as a Parquet file, the DuckDB engine's as chunks.
    expect(polars.results[0]!.goodColumns?.writeParquet).toBeTypeOf("function");
    expect(duck.results[0]!.goodColumns?.chunks).toBeDefined();
    expect(polars.table).toHaveLength(polars.results[0]!.goodCount + polars.results[1]!.goodCount);
    expect(polars.table).toEqual(duck.table);
  });

  it("land as the same values: merge by a 64-bit key, decimals, timestamps, dates, json, NULLs", async () => {
    const contract = target(typed, format, "merge", ["id"]);
    const duck = await land("duckdb", contract, [first, second]);
    const polars = await land("polars", contract, [first, second]);
    expect(polars.results.map((r) => r.goodCount)).toEqual([4, 3]);
    const byId = (rows: unknown[]) => [...(rows as Array<{ id: number | bigint }>)].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    expect(byId(polars.table)).toEqual(byId(duck.table));
    expect(byId(polars.table)).toEqual([
      { id: -9223372036854775808n, name: "min", amount: null, wide: "0.0000000000", at: null, day: "9999-12-31", ratio: null, ok: true, doc: 9007199254740993n },
      { id: 1, name: "a again", amount: "10.49", wide: null, at: null, day: null, ratio: null, ok: null, doc: null },
      { id: 6, name: "six", amount: "6.00", wide: null, at: null, day: null, ratio: null, ok: null, doc: null },
      { id: BIG, name: "big again", amount: "0.10", wide: null, at: "2024-05-01T10:00:00.000001Z", day: null, ratio: null, ok: null, doc: [null, { deep: true }] },
      { id: 2n ** 62n, name: null, amount: "-9999999999.99", wide: null, at: "2024-01-01T04:30:00.000Z", day: null, ratio: 5e-324, ok: null, doc: null },
    ]);
  });
});

describe("the DuckDB lake and the Polars engine's Parquet file", () => {
  it("numbers the rows after the table's last sequence number, into the table or by name into one whose columns differ", async () => {
    const v1 = target(makeContract({ dataset: "pq_seq", fields: [{ name: "id", type: "integer" }, { name: "a", type: "string" }] }), "duckdb", "merge", ["id"]);
    const v2 = target(makeContract({ dataset: "pq_seq", fields: [{ name: "id", type: "integer" }, { name: "b", type: "timestamp" }] }), "duckdb", "merge", ["id"]);
    const targetPath = lakeDir("polars-seq");
    const write = async (contract: Contract, batchId: number, records: Array<Record<string, unknown>>) => {
      const r = await engines.get("polars")!.validate(records, contract);
      expect(r.goodColumns?.writeParquet).toBeDefined();
      const w = await openLake(contract, { targetPath });
      const request = { batchId, bad: [], goodColumns: r.goodColumns } as unknown as WriteRequest;
      Object.defineProperty(request, "good", {
        get: () => {
          throw new Error("rows were read");
        },
      });
      await w.write(request);
      await w.close();
      return (w as unknown as { databasePath: string }).databasePath;
    };
    await write(v1, 1, [{ id: 1, a: "x" }, { id: 2, a: "y" }, { id: BIG, a: "z" }]);
    await write(v1, 2, [{ id: 2, a: "y2" }, { id: 4, a: "w" }]);
    // v2 drops `a` and adds `b`: the table's layout is no longer the contract's.
    const file = await write(v2, 3, [{ id: 5, b: "2024-05-01T10:00:00.000001Z" }, { id: 1, b: null }]);
    const db = await acquireDatabase(file);
    const conn = await db.connect();
    const rows = await db.exclusive(async () => (await conn.runAndReadAll("SELECT id, a, CAST(b AS VARCHAR), _lakelogic_seq FROM pq_seq ORDER BY id")).getRows());
    db.release();
    // In arrival order after the last number taken; a replaced row gets a new, greater one.
    expect(rows).toEqual([
      [1n, null, null, 7n],
      [2n, "y2", null, 4n],
      [4n, "w", null, 5n],
      [5n, null, "2024-05-01 10:00:00.000001", 6n],
      [BIG, "z", null, 3n],
    ]);
  });
});
