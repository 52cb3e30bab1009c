/**
 * createEngine, the optional Polars dependency, lifecycle, and the two forms of the
 * composite conversions (DuckDB native casts vs the expansions Polars runs) agreeing.
 */
import { DuckDBInstance } from "../../src/util/duckdb.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DECIMAL_RE, TIMESTAMP_RE } from "../../src/engine/canonical.js";
import { expandDecimalCanon, expandTimestampToMicros, inlineStaged } from "../../src/engine/composite.js";
import { toSql } from "../../src/engine/duckdb.js";
import { createEngine } from "../../src/engine/index.js";
import type { Expr } from "../../src/engine/ir.js";
import type { ValidationResult } from "../../src/engine/types.js";
import { ConfigError, MissingDependencyError } from "../../src/errors.js";
import { EDGE_VALUES } from "./corpus.js";
import { makeContract } from "../support/contract.js";

afterEach(() => {
  vi.doUnmock("nodejs-polars");
  vi.resetModules();
});

describe("createEngine", () => {
  it("defaults to duckdb and knows polars", async () => {
    const d = await createEngine();
    const p = await createEngine("polars");
    expect(d.name).toBe("duckdb");
    expect(p.name).toBe("polars");
    await d.close();
    await p.close();
  });

  it("refuses an unknown engine name", async () => {
    await expect(createEngine("flink" as "duckdb")).rejects.toThrow(ConfigError);
  });

  it("says how to install nodejs-polars when it is missing", async () => {
    vi.resetModules();
    vi.doMock("nodejs-polars", () => {
      throw new Error("Cannot find package 'nodejs-polars'");
    });
    const fresh = await import("../../src/engine/index.js");
    const err = await fresh.createEngine("polars").catch((e: unknown) => e);
    // A fresh module graph, so compare by code rather than class identity.
    expect((err as MissingDependencyError).code).toBe("MISSING_DEPENDENCY");
    expect((err as MissingDependencyError).packageName).toBe("nodejs-polars");
    expect((err as Error).message).toMatch(/The polars engine needs the optional package "nodejs-polars"/);
  });

  it("rejects work after close", async () => {
    for (const name of ["duckdb", "polars"] as const) {
      const e = await createEngine(name);
      await e.close();
      await expect(e.validate([{}], makeContract())).rejects.toThrow(/closed/);
    }
  });

  it("lets close wait for a running batch", async () => {
    const e = await createEngine("duckdb");
    const c = makeContract({ fields: [{ name: "n", type: "integer" }] });
    const running = e.validate(
      Array.from({ length: 20_000 }, (_, i) => ({ n: i })),
      c,
    );
    await e.close();
    expect((await running).good).toHaveLength(20_000);
  });
});

describe("batches asked for before the previous one is done", () => {
  it("each gets its own result, the same as one at a time, on both engines — from the first call of a contract on", async () => {
    const contract = () =>
      makeContract({
        fields: [
          { name: "n", type: "integer" },
          { name: "s", type: "string" },
        ],
        rowRules: [{ kind: "range", field: "n", min: 0, inclusive: true }, { kind: "not_null", field: "s" }],
      });
    const batch = (k: number) => Array.from({ length: 3000 + k * 500 }, (_, i) => ({ n: (i % 7) - k, s: i % 11 === k ? null : `r${k}-${i}` }));
    const batches = [0, 1, 2, 3, 4].map(batch);
    for (const name of ["duckdb", "polars"] as const) {
      const one = await createEngine(name);
      const c1 = contract();
      const expected: ValidationResult[] = [];
      for (const b of batches) expected.push(await one.validate(b, c1));
      await one.close();
      // A fresh engine and contract: the first calls also race the contract's compilation.
      const many = await createEngine(name);
      const c2 = contract();
      const got = await Promise.all(batches.map((b) => many.validate(b, c2)));
      await many.close();
      got.forEach((r, i) => {
        expect(r.goodCount, `${name} batch ${i}`).toBe(expected[i]!.goodCount);
        expect(r.good, `${name} batch ${i}`).toEqual(expected[i]!.good);
        expect(r.bad.map((b) => [b.index, b.errors.map((e) => e.ruleId)])).toEqual(
          expected[i]!.bad.map((b) => [b.index, b.errors.map((e) => e.ruleId)]),
        );
      });
    }
  });
});

describe("composite conversions", () => {
  const texts = [
    ...EDGE_VALUES.filter((v): v is string => typeof v === "string"),
    "0.5",
    "1.5",
    "2.5",
    "-2.5",
    "0.994",
    "0.995",
    "99.995",
    "-99.995",
    "9.9999",
    "0",
    "-0",
    "000.000",
    "123456789012345678.999",
    "1999-12-31T23:59:59.9999995Z",
    "2000-02-29T00:00:00-00:30",
    "1970-01-01T00:00:00+00:00",
  ];

  it("decimal: the expansion equals DuckDB's cast for every precision/scale tried", async () => {
    const inst = await DuckDBInstance.create(":memory:");
    const con = await inst.connect();
    const re = new RegExp(DECIMAL_RE);
    const inputs = texts.map((t) => re.exec(t)?.[1]).filter((t): t is string => t !== undefined);
    for (const [p, s] of [
      [5, 2],
      [3, 0],
      [10, 4],
      [38, 9],
      [20, 19],
    ] as const) {
      const col: Expr = { op: "col", name: "g" };
      const native = toSql({ op: "decimalCanon", e: col, precision: p, scale: s });
      const expanded = toSql(inlineStaged(expandDecimalCanon(col, p, s, "x")));
      const rows = (
        await con.runAndReadAll(`SELECT g, ${native} AS a, ${expanded} AS b FROM unnest(from_json($1::VARCHAR, '["VARCHAR"]')) t(g)`, [JSON.stringify(inputs)])
      ).getRowObjectsJS();
      for (const r of rows) expect(r["b"], `decimal(${p},${s}) <- ${r["g"] as string}`).toBe(r["a"]);
    }
    con.closeSync();
    inst.closeSync();
  });

  it("timestamp: the expansion equals DuckDB's cast", async () => {
    const inst = await DuckDBInstance.create(":memory:");
    const con = await inst.connect();
    await con.run("SET TimeZone = 'UTC'");
    const re = new RegExp(TIMESTAMP_RE);
    const inputs = texts.map((t) => re.exec(t)?.[1]).filter((t): t is string => t !== undefined);
    expect(inputs.length).toBeGreaterThan(20);
    const col: Expr = { op: "col", name: "g" };
    const native = toSql({ op: "timestampToMicros", e: col });
    const expanded = toSql(inlineStaged(expandTimestampToMicros(col, "x")));
    const rows = (
      await con.runAndReadAll(`SELECT g, ${native} AS a, ${expanded} AS b FROM unnest(from_json($1::VARCHAR, '["VARCHAR"]')) t(g)`, [JSON.stringify(inputs)])
    ).getRowObjectsJS();
    for (const r of rows) expect(r["b"], r["g"] as string).toBe(r["a"]);
    con.closeSync();
    inst.closeSync();
  });
});
