/**
 * The Polars engine hands a batch's text columns over as one joined string each, split on
 * Polars' threads (withTextColumns). The values must come back exactly: any string, including
 * ones holding the separator, the empty string apart from null, lone surrogates as a Series of
 * each value gives them — and through the engine, the same split and rows as DuckDB's.
 */
import type * as PolarsModule from "nodejs-polars";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { TEXT_SEPARATOR, textInExprs, withTextColumns } from "../../src/engine/polars-text.js";
import type { Engine } from "../../src/engine/types.js";
import { makeContract } from "../support/contract.js";

type Pl = typeof PolarsModule.default;
let pl: Pl;
let duck: Engine;
let polars: Engine;
beforeAll(async () => {
  const mod = (await import("nodejs-polars")) as unknown as { default?: Pl } & Pl;
  pl = mod.default ?? mod;
  duck = await createEngine("duckdb");
  polars = await createEngine("polars");
});
afterAll(async () => {
  await duck.close();
  await polars.close();
});

const SEP = TEXT_SEPARATOR;
/** Values that a joined form could confuse: empty vs null, the separator, surrogates, breaks. */
const TRICKY: Array<string | null> = [
  "",
  null,
  "a",
  " ",
  "é😀",
  "line\nbreak\r\n",
  "\t",
  "x".repeat(5000),
  "\uFFFD",
  "\uD800",
  "a\uDC00b",
  "end\uD83D",
  "\uDE00start",
];
const WITH_SEP: Array<string | null> = [...TRICKY, SEP, `a${SEP}b`, `${SEP}${SEP}`, `${SEP}`, `tail${SEP}`];

/** Each column through withTextColumns and through a Series of its values (the exact reference). */
async function roundTrip(columns: Array<Array<string | null>>): Promise<{ joined: unknown[][]; reference: unknown[][] }> {
  const names = columns.map((_, k) => `t${k}`);
  const n = columns[0]!.length;
  const base = [pl.Series("i", Int32Array.from({ length: n }, (_, i) => i), pl.Int32)];
  const lf = withTextColumns(pl, base, columns, names.map((name) => textInExprs(pl, name)));
  const df = await lf.collect();
  expect(df.columns.sort()).toEqual(["i", ...names].sort());
  expect(df.height).toBe(n);
  const ref = pl.DataFrame(columns.map((v, k) => pl.Series(names[k]!, v, pl.Utf8)));
  return {
    joined: names.map((name) => df.getColumn(name).toArray() as unknown[]),
    reference: names.map((name) => ref.getColumn(name).toArray() as unknown[]),
  };
}

describe("withTextColumns", () => {
  it("gives back every value exactly, null apart from the empty string", async () => {
    const { joined, reference } = await roundTrip([TRICKY, [...TRICKY].reverse()]);
    expect(joined).toEqual(reference);
    // The reference itself: null stays null, "" stays "", a lone surrogate becomes U+FFFD.
    expect(reference[0]!.slice(0, 2)).toEqual(["", null]);
    expect(reference[0]![9]).toBe("\uFFFD");
  });

  it("gives back columns whose values hold the separator, beside ones that do not", async () => {
    const other = WITH_SEP.map((_, i) => `v${i}`);
    const { joined, reference } = await roundTrip([WITH_SEP, other, WITH_SEP.map((v) => (v === null ? "" : v))]);
    expect(joined).toEqual(reference);
    expect(joined[0]).toContain(`a${SEP}b`);
  });

  it("keeps one-row, all-null, all-empty and null-free columns", async () => {
    for (const column of [[""], [null], [SEP], ["x"]]) {
      const { joined, reference } = await roundTrip([column]);
      expect(joined).toEqual(reference);
    }
    const n = 300;
    const { joined, reference } = await roundTrip([
      Array.from({ length: n }, () => null),
      Array.from({ length: n }, () => ""),
      Array.from({ length: n }, (_, i) => `r${i}`),
      Array.from({ length: n }, (_, i) => (i % 2 ? null : "")),
    ]);
    expect(joined).toEqual(reference);
    expect(joined[3]!.slice(0, 2)).toEqual(["", null]);
  });
});

describe("the Polars engine's text columns", () => {
  const contract = makeContract({
    fields: [
      { name: "s", type: "string" },
      { name: "t", type: "string" },
    ],
    rowRules: [{ kind: "regex_match", field: "t", pattern: "^[a-z]*$" }],
  });
  const records = [
    ...WITH_SEP.map((s, i) => ({ s, t: i % 3 ? "ok" : "" })),
    ...WITH_SEP.map((t) => ({ s: "x", t })),
    { t: "missing s" },
    {},
  ];

  it("splits and keeps the rows as DuckDB does, values exact, in one batch and one by one", async () => {
    for (const batch of [records, ...records.map((r) => [r])]) {
      const [a, b] = await Promise.all([duck.validate(batch, contract), polars.validate(batch, contract)]);
      expect(b.bad).toEqual(a.bad);
      expect(b.good).toEqual(a.good);
    }
    const all = await polars.validate(records, contract);
    const kept = all.good.map((r) => r["s"]);
    expect(kept).toContain(`a${SEP}b`);
    expect(kept).toContain("");
    expect(kept).toContain(null);
  });
});
