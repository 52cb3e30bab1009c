/**
 * Engine "spark" splits the parity corpus exactly as DuckDB does (and so as Polars, which
 * test/engine/parity.test.ts holds to DuckDB): same good rows, same bad rows and errors, same
 * rule counts and dataset results. One Spark application for the file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { showValue } from "../../src/engine/assemble.js";
import { coerceValue } from "../../src/engine/canonical.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine } from "../../src/engine/types.js";
import { ConfigError } from "../../src/errors.js";
import { SparkEngine } from "../../src/engine/spark.js";
import { EDGE_VALUES, generateCorpus, parityContract } from "../engine/corpus.js";
import { makeContract } from "../support/contract.js";
import { requireSpark } from "../support/spark.js";

requireSpark();

let duck: Engine;
let spark: Engine;
beforeAll(async () => {
  duck = await createEngine("duckdb");
  spark = await createEngine("spark");
}, 180_000);
afterAll(async () => {
  await duck?.close();
  await spark?.close();
});

describe("engine spark", () => {
  it("is one long-lived driver process, reused across batches", async () => {
    expect(spark).toBeInstanceOf(SparkEngine);
    const pid = (spark as SparkEngine).process.pid;
    const c = makeContract({ fields: [{ name: "id", type: "integer" }] });
    await spark.validate([{ id: 1 }], c);
    await spark.validate([{ id: "x" }], c);
    expect((spark as SparkEngine).process.pid).toBe(pid);
  });

  for (const seed of [1, 2]) {
    it(`gives DuckDB's result on a 2000-record corpus (seed ${seed})`, async () => {
      const records = generateCorpus(2000, seed);
      const a = await duck.validate(records, parityContract);
      const b = await spark.validate(records, parityContract);
      expect(b.bad.map((x) => x.index)).toEqual(a.bad.map((x) => x.index));
      expect(b.bad).toEqual(a.bad);
      expect(b.good).toEqual(a.good);
      expect(b.ruleCounts).toEqual(a.ruleCounts);
      expect(b.datasetRules).toEqual(a.datasetRules);
      expect(a.good.length).toBeGreaterThan(100);
      expect(a.bad.length).toBeGreaterThan(100);
    });
  }

  it("matches the JavaScript definition of every type on every edge value", async () => {
    const fields = parityContract.fields;
    const cases = fields.flatMap((f) => EDGE_VALUES.map((v) => ({ f, v })));
    const records = cases.map(({ f, v }) => ({ [f.name]: v }));
    const res = await spark.validate(records, makeContract({ fields }));
    const bad = new Set(res.bad.map((b) => b.index));
    let g = 0;
    cases.forEach(({ f, v }, i) => {
      const expected = coerceValue(v, f);
      const where = `spark: ${f.name} <- ${showValue(v)}`;
      expect(bad.has(i), where).toBe(!expected.ok);
      if (!bad.has(i)) expect(res.good[g++]![f.name], where).toEqual(expected.ok ? expected.value : undefined);
    });
    expect(g).toBe(res.good.length);
  });

  it("keeps the last record per key for a merge target, as DuckDB does", async () => {
    const base = makeContract({ fields: [{ name: "k", type: "string" }, { name: "v", type: "integer" }], primaryKey: ["k"] });
    const c = { ...base, materialization: { ...base.materialization, strategy: "merge" as const } };
    const records = [{ k: "a", v: 1 }, { k: "b", v: 2 }, { k: "a", v: 3 }, { k: null, v: 4 }];
    const a = await duck.validate(records, c);
    const b = await spark.validate(records, c);
    expect(b.good).toEqual(a.good);
    expect(b.supersededCount).toBe(a.supersededCount);
    expect(b.bad).toEqual(a.bad);
  });

  it("refuses rules Spark would read differently, naming the rule and the reason", async () => {
    const regex = makeContract({ fields: [{ name: "s", type: "string" }], rowRules: [{ kind: "regex_match", id: "posix", field: "s", pattern: "^[[:alpha:]]+$" }] });
    await expect(spark.validate([{ s: "a" }], regex)).rejects.toThrow(/rule posix.*spark.*POSIX/s);
    const cast = makeContract({ fields: [{ name: "n", type: "integer" }], rowRules: [{ kind: "sql", id: "dcast", sql: "n::VARCHAR <> ''" }] });
    await expect(spark.validate([{ n: 1 }], cast)).rejects.toBeInstanceOf(ConfigError);
    // A function both have under one name with different meanings (log: base 10 on DuckDB).
    const fn = makeContract({ fields: [{ name: "n", type: "integer" }], rowRules: [{ kind: "sql", id: "lg", sql: "log(n) > 0" }] });
    await expect(spark.validate([{ n: 1 }], fn)).rejects.toThrow(/rule lg.*log\(\)/s);
    // A column Spark's analyser cannot resolve: refused when the contract compiles, before any batch.
    const col = makeContract({ fields: [{ name: "n", type: "integer" }], rowRules: [{ kind: "sql", id: "nocol", sql: "`m` > 0" }] });
    await expect(spark.validate([{ n: 1 }], col)).rejects.toThrow(/engine "spark"|nocol/);
  });
});
