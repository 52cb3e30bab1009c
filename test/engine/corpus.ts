/**
 * A seeded corpus of awkward records for the engine parity tests: every field of every
 * record draws from a pool of edge cases for each type (and for the other types, so type
 * errors are common), plus nulls, missing keys, unknown keys and non-object records.
 */
import type { Contract } from "../../src/contract/types.js";
import { makeContract } from "../support/contract.js";
import { mulberry32 } from "../support/random.js";


const cyclic: Record<string, unknown> = { a: 1 };
cyclic["self"] = cyclic;

/** Values that exercise coercion; most are valid for one type and invalid for the others. */
export const EDGE_VALUES: unknown[] = [
  // null-ish
  null,
  undefined,
  // strings: unicode, quotes, control characters
  "",
  " ",
  "plain",
  "ÉCOLE",
  "e\u0301cole", // combining acute
  "👩‍👩‍👧‍👦 family",
  "🎉",
  "שלום עולם", // RTL
  "مرحبا",
  'quote " and \' apostrophe',
  "back\\slash",
  "new\nline\ttab\rcr",
  "nul\u0000char",
  "\u001e record separator",
  "\ud800 lone surrogate",
  "٣", // Arabic-Indic digit: \d in Rust regex, not in RE2
  "ＡＢＣ",
  // integers
  0,
  -0,
  1,
  42,
  -17,
  "42",
  " 42 ",
  "\t-7\n",
  "+42",
  "007",
  "4.0",
  "1e3",
  4.5,
  "4.5",
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  9007199254740993n,
  2n ** 62n,
  "9223372036854775807",
  "-9223372036854775808",
  "9223372036854775808",
  "-9223372036854775809",
  1e20,
  1e21,
  "123456789012345678901234567890",
  // doubles
  1.5,
  -2.25,
  0.1,
  0.30000000000000004,
  1e-7,
  5e-324,
  1e308,
  1.7976931348623157e308,
  "1e308",
  "1e309",
  "-1e309",
  "1e-400",
  "-0",
  "-0.0",
  " 2.5e3 ",
  "1E5",
  ".5",
  "5.",
  "0x10",
  "NaN",
  "Infinity",
  "-Infinity",
  "inf",
  NaN,
  Infinity,
  -Infinity,
  // decimals
  "12.345",
  "12.355",
  "-12.345",
  "0.005",
  "-0.005",
  "-0.001",
  "9999999999.99",
  "9999999999.995",
  "99999999999",
  12.345,
  0.125,
  "0000000000000000000000000001.5",
  "0.99999999999999999999999999999999999999999",
  "12,50",
  // booleans
  true,
  false,
  "true",
  "FALSE",
  " True ",
  "1",
  "0",
  "yes",
  "t",
  2,
  // dates
  "2024-02-29",
  "2023-02-29",
  "2024-13-01",
  "2024-00-10",
  "2024-04-31",
  "0000-01-01",
  "0001-01-01",
  "9999-12-31",
  "2024-1-1",
  " 2024-03-01 ",
  "20240301",
  // timestamps
  "2024-01-01T10:00:00Z",
  "2024-01-01T10:00:00.123Z",
  "2024-01-01T10:00:00.123456789Z",
  "2024-01-01T10:00:00.9999999Z",
  "2024-01-01T10:00:00+05:30",
  "2024-01-01T10:00:00-0800",
  "2024-01-01T10:00:00+05",
  "2024-01-01T23:59:59-23:59",
  "2024-01-01 10:00",
  "2024-01-01T10:00",
  "2024-01-01T10:00Z",
  "2024-02-29T12:00:00+14:00",
  "2023-02-29T12:00:00Z",
  "2024-01-01T24:00:00Z",
  "2024-01-01T10:60:00Z",
  "2024-01-01T10:00:60Z",
  "2024-01-01t10:00:00z",
  "2024-01-01T10:00:00,5Z",
  "2024-01-01T10:00:00+24:00",
  "0001-01-01T00:00:00Z",
  "0001-01-01T00:30:00+01:00",
  "9999-12-31T23:59:59.999999Z",
  "9999-12-31T23:00:00-01:00",
  " 2024-06-01T00:00:00Z\n",
  new Date(Date.UTC(2024, 5, 1, 12, 30, 15, 250)),
  new Date(Number.NaN),
  1704103200000,
  // nested
  { a: 1, b: [1, 2, { c: "x" }] },
  [],
  [1, "two", null],
  { nested: { deeper: { deepest: "🎉" } } },
  { undef: undefined, n: 1 },
  { big: Number(12345678901234567890123n) },
  cyclic,
  { b: 1n },
  new Map([["a", 1]]),
];

/** Fields of every type; the parity contract puts a rule of every kind on them. */
export const parityContract: Contract = makeContract({
  dataset: "parity",
  fields: [
    { name: "id", type: "integer" },
    { name: "s", type: "string", aliases: ["s_alias"] },
    { name: "i", type: "integer" },
    { name: "d", type: "double" },
    { name: "m", type: "decimal", precision: 12, scale: 2 },
    { name: "m0", type: "decimal", precision: 5, scale: 0 },
    { name: "b", type: "boolean" },
    { name: "dt", type: "date" },
    { name: "ts", type: "timestamp" },
    { name: "j", type: "json" },
  ],
  rowRules: [
    { kind: "not_null", field: "id" },
    { kind: "accepted_values", field: "s", values: ["plain", "ÉCOLE", "🎉", "42", "true"], severity: "warning" },
    { kind: "regex_match", field: "s", pattern: "^[^\\d]*$", severity: "info" },
    { kind: "regex_match", field: "s", pattern: "\\w\\s\\w", severity: "warning" },
    { kind: "range", field: "i", min: -100, max: 2 ** 53, inclusive: true },
    { kind: "range", field: "d", min: -1e6, max: 1e300, inclusive: false, severity: "warning" },
    { kind: "range", field: "m", min: 0, inclusive: true, severity: "warning" },
    { kind: "accepted_values", field: "b", values: [true], severity: "info" },
    { kind: "accepted_values", field: "i", values: [0, 1, 42, "7"], severity: "info" },
    { kind: "regex_match", field: "ts", pattern: "T1[0-9]:", severity: "info" },
    { kind: "sql", id: "sql_amount", sql: "m IS NULL OR m < 1000000", severity: "warning" },
    { kind: "sql", id: "sql_date", sql: "dt IS NULL OR dt >= DATE '2000-01-01'", severity: "warning" },
    { kind: "sql", id: "sql_len", sql: "s IS NULL OR length(s) < 20" },
    { kind: "sql", id: "sql_ts", sql: "ts IS NULL OR ts < TIMESTAMP '2030-01-01 00:00:00'", severity: "info" },
  ],
  datasetRules: [
    { kind: "unique", fields: ["id"] },
    { kind: "unique", fields: ["s", "b"] },
    { kind: "unique", fields: ["d"] },
    { kind: "null_ratio", field: "j", max: 0.5 },
    { kind: "row_count_between", min: 1, max: 1_000_000 },
  ],
  unknownFields: "allow",
});

const FIELDS = ["s", "i", "d", "m", "m0", "b", "dt", "ts", "j"];

export function generateCorpus(count: number, seed: number): unknown[] {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const out: unknown[] = [];
  for (let n = 0; n < count; n++) {
    const roll = r();
    if (roll < 0.01) {
      out.push(pick<unknown>([null, [1, 2], "a string", 42, new Date(0), new Map()]));
      continue;
    }
    const rec: Record<string, unknown> = { id: r() < 0.02 ? pick(EDGE_VALUES) : n % 50 === 0 ? n - 1 : n };
    for (const f of FIELDS) {
      const x = r();
      if (x < 0.08) continue; // key missing
      rec[f] = x < 0.5 ? pick(EDGE_VALUES) : typicalValue(f, r);
    }
    if (r() < 0.05) rec["s_alias"] = pick(EDGE_VALUES);
    if (r() < 0.05) {
      // defineProperty: an own "__proto__" key, as JSON.parse would make it.
      Object.defineProperty(rec, pick(["extra", "Extra", "__proto__", "🎉key", "s "]), {
        value: pick(EDGE_VALUES),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    out.push(rec);
  }
  return out;
}

function typicalValue(field: string, r: () => number): unknown {
  const n = Math.floor(r() * 1000);
  switch (field) {
    case "s":
      return ["plain", "ÉCOLE", "🎉", "a b", "x1"][n % 5];
    case "i":
      return n % 3 === 0 ? String(n) : n;
    case "d":
      return n / 7;
    case "m":
      return n % 2 ? (n * 1.37).toFixed(n % 4) : n * 1.005;
    case "m0":
      return n * 13;
    case "b":
      return n % 2 === 0;
    case "dt":
      return `20${String(n % 30).padStart(2, "0")}-0${1 + (n % 9)}-${String(1 + (n % 28)).padStart(2, "0")}`;
    case "ts":
      return new Date(Date.UTC(2024, 0, 1) + n * 3_600_123).toISOString();
    default:
      return n % 2 ? { n, tags: ["a", "b"] } : [n];
  }
}
