/**
 * The Polars engine shares one built expression among identical IR subtrees (building one costs
 * about a millisecond in nodejs-polars). Sharing is only sound if two IRs that mean different
 * things never get the same key — JSON alone spells NaN, ±Infinity and null alike, and -0 as 0.
 */
import { describe, expect, it } from "vitest";
import type { Expr } from "../../src/engine/ir.js";
import { exprKey } from "../../src/engine/polars.js";

const lit = (value: string | number | bigint | null, type: "utf8" | "int64" | "float64" = "float64"): Expr => ({ op: "lit", value, type });
const gt = (b: Expr): Expr => ({ op: "cmp", fn: ">", a: { op: "col", name: "amount" }, b });

describe("exprKey", () => {
  it("gives equal IR trees, built apart, the same key", () => {
    expect(exprKey(gt(lit(0)))).toBe(exprKey(gt(lit(0))));
    expect(exprKey(gt(lit(9007199254740993n, "int64")))).toBe(exprKey(gt(lit(9007199254740993n, "int64"))));
  });

  it("tells apart literals that JSON would spell alike", () => {
    const values: Array<string | number | bigint | null> = [null, Number.NaN, Infinity, -Infinity, 0, -0, "0", 5n, "5n", "5", 5];
    const keys = values.map((v) => exprKey(gt(lit(v))));
    expect(new Set(keys).size).toBe(values.length);
  });

  it("tells apart trees that differ in one node", () => {
    expect(exprKey(gt(lit(1)))).not.toBe(exprKey({ op: "cmp", fn: ">=", a: { op: "col", name: "amount" }, b: lit(1) }));
    expect(exprKey(gt(lit(1)))).not.toBe(exprKey(gt(lit(1, "int64"))));
  });
});
