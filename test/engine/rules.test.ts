/**
 * Row rules, schema policy, dataset rules and severities, identically on both engines.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, EngineName, ValidationResult } from "../../src/engine/types.js";
import { makeContract, type ContractInput } from "../support/contract.js";

/** Input index → rule ids of the bad rows. */
function failures(res: ValidationResult): Record<number, string[]> {
  return Object.fromEntries(res.bad.map((b) => [b.index, b.errors.map((e) => e.ruleId)]));
}
function counts(res: ValidationResult): Record<string, number> {
  return Object.fromEntries(res.ruleCounts.map((c) => [c.ruleId, c.failed]));
}

describe.each<EngineName>(["duckdb", "polars"])("rules on %s", (engineName) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await createEngine(engineName);
  });
  afterAll(async () => {
    await engine.close();
  });
  const run = (records: unknown[], input: ContractInput): Promise<ValidationResult> =>
    engine.validate(records, makeContract(input));

  it("not_null fails on null, undefined and a missing key, and on nothing else", async () => {
    const res = await run([{ a: null }, { a: undefined }, {}, { a: "" }, { a: 0 }, { a: false }, { a: [] }], {
      fields: [{ name: "a", type: "json" }],
      rowRules: [{ kind: "not_null", field: "a" }],
    });
    expect(failures(res)).toEqual({ 0: ["not_null:a"], 1: ["not_null:a"], 2: ["not_null:a"] });
    expect(res.bad[0]!.errors[0]!.message).toBe("a is null");
    expect(res.good).toEqual([{ a: "" }, { a: 0 }, { a: false }, { a: [] }]);
  });

  it("accepted_values compares canonical values of the field's type and lets null pass", async () => {
    const res = await run(
      [
        { s: "b", n: 1, m: "12.5", f: true },
        { s: "B", n: "7", m: 12.5, f: true },
        { s: "c", n: 2, m: "12.51", f: false },
        { s: null, n: null, m: null, f: null },
      ],
      {
        fields: [
          { name: "s", type: "string" },
          { name: "n", type: "integer" },
          { name: "m", type: "decimal", precision: 5, scale: 2 },
          { name: "f", type: "boolean" },
        ],
        rowRules: [
          { kind: "accepted_values", field: "s", values: ["a", "b"] },
          { kind: "accepted_values", field: "n", values: [1, "7", 4.5] },
          { kind: "accepted_values", field: "m", values: ["12.50"] },
          { kind: "accepted_values", field: "f", values: ["TRUE"] },
        ],
      },
    );
    expect(failures(res)).toEqual({
      1: ["accepted_values:s"],
      2: ["accepted_values:s", "accepted_values:n", "accepted_values:m", "accepted_values:f"],
    });
    expect(res.bad[0]!.errors[0]!.message).toBe('s: "B" is not one of "a", "b"');
  });

  it("regex_match is a partial match (anchors work), uses ASCII classes, and lets null pass", async () => {
    const res = await run(
      [{ s: "xxabcxx", t: "abc", d: "٣", n: 12345 }, { s: "ab", t: "xabc", d: "3", n: 12 }, { s: null, t: null, d: null, n: null }],
      {
        fields: [
          { name: "s", type: "string" },
          { name: "t", type: "string" },
          { name: "d", type: "string" },
          { name: "n", type: "integer" },
        ],
        rowRules: [
          { kind: "regex_match", field: "s", pattern: "abc" },
          { kind: "regex_match", field: "t", pattern: "^abc$" },
          { kind: "regex_match", field: "d", pattern: "^\\d$" },
          { kind: "regex_match", field: "n", pattern: "^[0-9]{4,}$" },
        ],
      },
    );
    expect(failures(res)).toEqual({
      0: ["regex_match:d"],
      1: ["regex_match:s", "regex_match:t", "regex_match:n"],
    });
    expect(res.bad[0]!.errors[0]!.message).toBe('d: "٣" does not match /^\\d$/');
  });

  it("range honours inclusive, open ends, decimals, and lets null pass", async () => {
    const fields: ContractInput["fields"] = [
      { name: "i", type: "integer" },
      { name: "m", type: "decimal", precision: 6, scale: 2 },
      { name: "d", type: "double" },
    ];
    const rowRules: ContractInput["rowRules"] = [
      { kind: "range", field: "i", min: 1, max: 10, inclusive: true, id: "i_in" },
      { kind: "range", field: "i", min: 1, max: 10, inclusive: false, id: "i_ex" },
      { kind: "range", field: "m", min: 0.5, inclusive: true },
      { kind: "range", field: "d", max: 0, inclusive: false },
    ];
    const res = await run(
      [
        { i: 1, m: "0.50", d: -1 },
        { i: 10, m: 0.494, d: 0 },
        { i: 5, m: 0.495, d: -0.5 },
        { i: 11, m: null, d: null },
        { i: null, m: "1", d: -1e300 },
      ],
      { fields, rowRules },
    );
    expect(failures(res)).toEqual({
      0: ["i_ex"],
      1: ["i_ex", "range:m", "range:d"],
      3: ["i_in", "i_ex"],
    });
    expect(res.bad.find((b) => b.index === 3)!.errors[0]!.message).toBe("i: 11 is out of range (>= 1 and <= 10)");
  });

  it("sql rules see typed columns; only TRUE passes", async () => {
    const res = await run(
      [
        { amount: "12.50", day: "2024-03-01", ts: "2024-03-01T10:00:00Z", name: "Ann" },
        { amount: "0", day: "1999-12-31", ts: "2024-03-01T10:00:00+05:00", name: "bob" },
        { amount: null, day: null, ts: null, name: null },
      ],
      {
        fields: [
          { name: "amount", type: "decimal", precision: 8, scale: 2 },
          { name: "day", type: "date" },
          { name: "ts", type: "timestamp" },
          { name: "name", type: "string" },
        ],
        rowRules: [
          { kind: "sql", id: "positive", sql: "amount * 2 > 0" },
          { kind: "sql", id: "recent", sql: "day >= DATE '2000-01-01'" },
          { kind: "sql", id: "morning", sql: "ts >= TIMESTAMP '2024-03-01 09:00:00'" },
          { kind: "sql", id: "capital", sql: "upper(substr(name, 1, 1)) = substr(name, 1, 1) AND length(name) = 3" },
        ],
      },
    );
    // NULL is not TRUE: every sql rule fails on the all-null row.
    expect(failures(res)).toEqual({
      1: ["positive", "recent", "morning", "capital"],
      2: ["positive", "recent", "morning", "capital"],
    });
    expect(res.bad[0]!.errors[0]).toEqual({ ruleId: "positive", message: "positive: not true: amount * 2 > 0" });
  });

  it("the documented portable SQL subset behaves the same on both engines", async () => {
    const exprs: Record<string, string> = {
      cmp: "n >= 2 AND n <> 3",
      arith: "(n * 2 + 1) % 3 = 0",
      between: "n BETWEEN 2 AND 4",
      in_list: "s IN ('ab', 'cd')",
      like: "s LIKE 'a%'",
      case_when: "CASE WHEN n > 2 THEN s = 'cd' ELSE TRUE END",
      coalesce: "coalesce(s, 'zz') <> 'zz'",
      is_null: "s IS NOT NULL",
      funcs: "length(trim(s)) = 2 AND upper(s) = 'AB' OR lower(s) = 'cd'",
      substr: "substr(s, 1, 1) = 'a'",
      date_lit: "dt < DATE '2024-06-01'",
      ts_lit: "ts >= TIMESTAMP '2024-01-01 12:00:00'",
      decimal: "m * 2 = 5.00",
      bool: "f",
      not_bool: "NOT f",
      json_text: "j = '{\"a\":1}'",
    };
    const res = await run(
      [
        { n: 1, s: "ab", dt: "2024-01-01", ts: "2024-01-01T13:00:00+00:00", m: "2.5", f: true, j: { a: 1 } },
        { n: 3, s: "cd", dt: "2024-07-01", ts: "2024-01-01T11:00:00Z", m: 1, f: false, j: [1] },
        { n: 4, s: null, dt: null, ts: null, m: null, f: null, j: null },
      ],
      {
        fields: [
          { name: "n", type: "integer" },
          { name: "s", type: "string" },
          { name: "dt", type: "date" },
          { name: "ts", type: "timestamp" },
          { name: "m", type: "decimal", precision: 6, scale: 2 },
          { name: "f", type: "boolean" },
          { name: "j", type: "json" },
        ],
        rowRules: Object.entries(exprs).map(([id, sql]) => ({ kind: "sql" as const, id, sql, severity: "warning" as const })),
      },
    );
    expect(res.bad).toEqual([]);
    // Failures per rule over the three rows: row 0 / row 1 / row 2 (NULL fails).
    const failedBy = (id: string): number => counts(res)[id]!;
    expect(Object.fromEntries(Object.keys(exprs).map((id) => [id, failedBy(id)]))).toEqual({
      cmp: 2, // 1 < 2; 3 = 3
      arith: 1, // 3, 7, 9 → 7 % 3 = 1
      between: 1,
      in_list: 1, // null
      like: 2,
      case_when: 1, // n=4, s null → NULL
      coalesce: 1,
      is_null: 1,
      funcs: 1,
      substr: 2,
      date_lit: 2,
      ts_lit: 2,
      decimal: 2,
      bool: 2,
      not_bool: 2,
      json_text: 2,
    });
  });

  it("regex_match reads booleans, decimals, dates and timestamps in their canonical text", async () => {
    const res = await run([{ f: true, m: "7", d: " 2024-01-05 ", t: "2024-01-05T10:00:00+01:00" }], {
      fields: [
        { name: "f", type: "boolean" },
        { name: "m", type: "decimal", precision: 4, scale: 1 },
        { name: "d", type: "date" },
        { name: "t", type: "timestamp" },
      ],
      rowRules: [
        { kind: "regex_match", field: "f", pattern: "^true$" },
        { kind: "regex_match", field: "m", pattern: "^7\\.0$" },
        { kind: "regex_match", field: "d", pattern: "^2024-01-05$" },
        { kind: "regex_match", field: "t", pattern: "^2024-01-05T09:00:00\\.000000Z$" },
      ],
    });
    expect(res.bad).toEqual([]);
  });

  it("a row carries every rule it failed; rules on a field that failed its type are skipped", async () => {
    const res = await run([{ id: "x", code: "zz", n: 0 }, { id: 1, code: "zz", n: 0 }], {
      fields: [
        { name: "id", type: "integer" },
        { name: "code", type: "string" },
        { name: "n", type: "integer" },
      ],
      rowRules: [
        { kind: "range", field: "id", min: 5, inclusive: true },
        { kind: "sql", id: "id_even", sql: "id % 2 = 0" },
        { kind: "accepted_values", field: "code", values: ["a"] },
        { kind: "regex_match", field: "code", pattern: "^[a-z]$" },
        { kind: "sql", id: "n_pos", sql: "n > 0" },
      ],
    });
    expect(failures(res)).toEqual({
      0: ["type:id", "accepted_values:code", "regex_match:code", "n_pos"],
      1: ["range:id", "id_even", "accepted_values:code", "regex_match:code", "n_pos"],
    });
  });

  it("warning and info rules are counted but keep the row good; a bad row lists them too", async () => {
    const res = await run([{ n: 5 }, { n: -5 }, { n: 500 }], {
      fields: [{ name: "n", type: "integer" }],
      rowRules: [
        { kind: "range", field: "n", min: 0, inclusive: true, severity: "error" },
        { kind: "range", field: "n", max: 100, inclusive: true, severity: "warning", id: "n_small" },
        { kind: "sql", sql: "n <> 5", severity: "info", id: "not_five" },
      ],
    });
    expect(res.good).toEqual([{ n: 5 }, { n: 500 }]);
    expect(failures(res)).toEqual({ 1: ["range:n"] });
    expect(res.ruleCounts).toEqual([
      { ruleId: "range:n", severity: "error", failed: 1 },
      { ruleId: "n_small", severity: "warning", failed: 1 },
      { ruleId: "not_five", severity: "info", failed: 1 },
    ]);
    const both = await run([{ n: 500, m: "x" }], {
      fields: [
        { name: "n", type: "integer" },
        { name: "m", type: "integer" },
      ],
      rowRules: [{ kind: "range", field: "n", max: 100, inclusive: true, severity: "warning" }],
    });
    expect(failures(both)).toEqual({ 0: ["type:m", "range:n"] });
  });

  it("unknown_fields: allow keeps unknown keys as they are, drop drops them, quarantine rejects the row", async () => {
    const records = [{ id: 1, extra: { deep: [1] }, "🎉": "x", ID: 7 }, { id: 2 }];
    const fields: ContractInput["fields"] = [{ name: "id", type: "integer", aliases: ["ID"] }];
    const allow = await run(records, { fields, unknownFields: "allow" });
    expect(allow.good).toEqual([{ id: 1, extra: { deep: [1] }, "🎉": "x" }, { id: 2 }]);
    expect(allow.good[0]!["extra"]).toBe(records[0]!.extra);
    const drop = await run(records, { fields, unknownFields: "drop" });
    expect(drop.good).toEqual([{ id: 1 }, { id: 2 }]);
    const quarantine = await run(records, { fields, unknownFields: "quarantine" });
    expect(quarantine.good).toEqual([{ id: 2 }]);
    expect(quarantine.bad).toEqual([
      {
        index: 0,
        record: records[0],
        errors: [{ ruleId: "schema:unknown_fields", message: "unknown fields: extra, 🎉" }],
      },
    ]);
  });

  it("unknown_fields: allow finds extra keys next to undefined values, aliases, inherited names and null prototypes", async () => {
    const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { id: 5, toString: "t", more: 1 });
    const records: Array<Record<string, unknown>> = [
      { id: 1, note: "n" }, // as many keys as fields: one is extra, a field is missing
      { id: 2, toString: undefined, extra: true }, // a field present as undefined
      { id: 3, ID: 4 }, // the alias next to the name: known, not extra
      { ID: 6, toString: "s" }, // only the alias
      nullProto,
      { id: 7, toString: "u" }, // exactly the fields
    ];
    const fields: ContractInput["fields"] = [
      { name: "id", type: "integer", aliases: ["ID"] },
      { name: "toString", type: "string" },
    ];
    const res = await run(records, { fields, unknownFields: "allow" });
    expect(res.good).toEqual([
      { id: 1, toString: null, note: "n" },
      { id: 2, toString: null, extra: true },
      { id: 3, toString: null },
      { id: 6, toString: "s" },
      { id: 5, toString: "t", more: 1 },
      { id: 7, toString: "u" },
    ]);
  });

  it("an own __proto__ key is data, never the row's prototype", async () => {
    const rec = JSON.parse('{"id": 1, "__proto__": {"polluted": true}}') as Record<string, unknown>;
    const res = await run([rec], { fields: [{ name: "id", type: "integer" }], unknownFields: "allow" });
    const row = res.good[0]!;
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.hasOwn(row, "__proto__")).toBe(true);
    expect((row as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("with no fields declared, rows pass through as they are and rules read keys as text", async () => {
    const records = [
      { a: 1, b: "x", nested: { c: [1] } },
      { a: "1", b: "yy" },
      { a: "abc", b: null },
      { b: "x" },
    ];
    const res = await run(records, {
      rowRules: [
        { kind: "not_null", field: "a", severity: "warning" },
        { kind: "accepted_values", field: "b", values: ["x", "yy"] },
        { kind: "range", field: "a", min: 0, max: 5, inclusive: true },
        { kind: "regex_match", field: "b", pattern: "^x" },
        { kind: "sql", id: "short_b", sql: "b IS NULL OR length(b) < 2" },
      ],
      unknownFields: "quarantine",
    });
    expect(failures(res)).toEqual({ 1: ["regex_match:b", "short_b"], 2: ["range:a"] });
    expect(res.good).toEqual([records[0], records[3]]);
    expect(res.good[0]).not.toBe(records[0]);
    expect(counts(res)["not_null:a"]).toBe(1);
  });

  it("a record that is not a plain object is a bad row and nothing else is checked", async () => {
    const records: unknown[] = [[1], null, "text", 5, new Date(0), new Map(), { id: 1 }];
    const res = await run(records, { fields: [{ name: "id", type: "integer" }], rowRules: [{ kind: "not_null", field: "id" }] });
    expect(res.good).toEqual([{ id: 1 }]);
    expect(res.bad.map((b) => [b.index, b.errors])).toEqual(
      [0, 1, 2, 3, 4, 5].map((i) => [i, [{ ruleId: "record:not_object", message: expect.stringMatching(/^record is not an object/) as unknown }]]),
    );
    expect(res.bad[0]!.errors[0]!.message).toBe("record is not an object (got array)");
    expect(counts(res)["record:not_object"]).toBe(6);
  });

  it("dataset rules measure the batch's good rows and never quarantine", async () => {
    const records = [
      { id: 1, x: 0, e: null },
      { id: 1, x: -0, e: "a" },
      { id: 2, x: 1.5, e: null },
      { id: null, x: 2, e: "b" },
      { id: null, x: 3, e: "c" },
      { id: 3, x: "bad", e: null },
    ];
    const res = await run(records, {
      fields: [
        { name: "id", type: "integer" },
        { name: "x", type: "double" },
        { name: "e", type: "string" },
      ],
      datasetRules: [
        { kind: "unique", fields: ["id"] },
        { kind: "unique", fields: ["x"], severity: "warning" },
        { kind: "unique", fields: ["id", "e"] },
        { kind: "null_ratio", field: "e", max: 0.25 },
        { kind: "row_count_between", min: 1, max: 4, severity: "info" },
      ],
    });
    expect(res.good).toHaveLength(5);
    expect(failures(res)).toEqual({ 5: ["type:x"] });
    expect(res.datasetRules.map(({ ruleId, passed, observed, severity }) => ({ ruleId, passed, observed, severity }))).toEqual([
      // Nulls are equal to each other for uniqueness: (1,1) and (null,null) are duplicates.
      { ruleId: "unique:id", passed: false, observed: 2, severity: "error" },
      // 0 and -0 are the same value.
      { ruleId: "unique:x", passed: false, observed: 1, severity: "warning" },
      { ruleId: "unique:id,e", passed: true, observed: 0, severity: "error" },
      { ruleId: "null_ratio:e", passed: false, observed: 0.4, severity: "error" },
      { ruleId: "row_count_between", passed: false, observed: 5, severity: "info" },
    ]);
  });

  it("handles an empty batch and a batch with no objects", async () => {
    const input: ContractInput = {
      fields: [{ name: "id", type: "integer" }],
      rowRules: [{ kind: "not_null", field: "id" }],
      datasetRules: [{ kind: "row_count_between", min: 1 }],
    };
    const empty = await run([], input);
    expect(empty).toEqual({
      good: [],
      goodCount: 0,
      supersededCount: 0,
      bad: [],
      ruleCounts: [{ ruleId: "not_null:id", severity: "error", failed: 0 }],
      datasetRules: [expect.objectContaining({ ruleId: "row_count_between", passed: false, observed: 0 }) as unknown],
    });
    const junk = await run([1, "x"], input);
    expect(junk.bad.map((b) => b.index)).toEqual([0, 1]);
  });

  it("keeps arrival order over many rows", async () => {
    const records = Array.from({ length: 25_000 }, (_, i) => (i % 7 === 3 ? { id: -i } : { id: i, pad: "x".repeat(i % 40) }));
    const res = await run(records, {
      fields: [
        { name: "id", type: "integer" },
        { name: "pad", type: "string" },
      ],
      rowRules: [{ kind: "range", field: "id", min: 0, inclusive: true }],
    });
    const expectedGood = records.filter((_, i) => i % 7 !== 3).map((r) => ({ id: r.id, pad: r.pad ?? null }));
    expect(res.good).toEqual(expectedGood);
    expect(res.bad.map((b) => b.index)).toEqual(records.flatMap((_, i) => (i % 7 === 3 && i !== 3 * 0 ? [i] : [])));
  });

  it("validates concurrent batches for different contracts correctly", async () => {
    const a: ContractInput = { fields: [{ name: "n", type: "integer" }], rowRules: [{ kind: "range", field: "n", min: 0, inclusive: true }] };
    const b: ContractInput = { fields: [{ name: "n", type: "string" }], rowRules: [{ kind: "regex_match", field: "n", pattern: "^1" }] };
    const ca = makeContract(a);
    const cb = makeContract(b);
    const jobs = Array.from({ length: 6 }, (_, k) =>
      engine.validate(
        Array.from({ length: 500 }, (_, i) => ({ n: (i % 3) - 1 + k })),
        k % 2 ? cb : ca,
      ),
    );
    const results = await Promise.all(jobs);
    results.forEach((res, k) => {
      const values = Array.from({ length: 500 }, (_, i) => (i % 3) - 1 + k);
      const expectedBad = values.filter((v) => (k % 2 ? !String(v).startsWith("1") : v < 0)).length;
      expect(res.bad.length).toBe(expectedBad);
      expect(res.good.length).toBe(500 - expectedBad);
    });
  });

  it("rejects sql rules that do not compile or are not expressions, naming the rule", async () => {
    const broken = makeContract({
      fields: [{ name: "n", type: "integer" }],
      rowRules: [
        { kind: "sql", id: "fine", sql: "n > 0" },
        { kind: "sql", id: "broken", sql: "n > 'abc'" },
      ],
    });
    await expect(engine.validate([{ n: 1 }], broken)).rejects.toThrow(ConfigError);
    await expect(engine.validate([{ n: 1 }], broken)).rejects.toThrow(/broken/);
    const sneaky = makeContract({
      fields: [{ name: "n", type: "integer" }],
      rowRules: [{ kind: "sql", id: "sneaky", sql: "n IN (SELECT 1 FROM read_csv('x'))" }],
    });
    await expect(engine.validate([{ n: 1 }], sneaky)).rejects.toThrow(/sneaky/);
  });

  it("rejects a pattern the regex engine cannot compile", async () => {
    const c = makeContract({ fields: [{ name: "s", type: "string" }], rowRules: [{ kind: "regex_match", field: "s", pattern: "([a-z" }] });
    await expect(engine.validate([{ s: "a" }], c)).rejects.toThrow(ConfigError);
  });

  it("runs contracts from the YAML loader (required fields, field-level constraints)", async () => {
    const contract = parseContract(`
version: "1"
dataset: orders
model:
  fields:
    - { name: order_id, type: long, required: true }
    - { name: status, type: string, accepted_values: [new, paid] }
    - { name: amount, type: "decimal(10,2)", min: 0 }
quality:
  row_rules:
    - regex_match: { field: status, pattern: "^[a-z]+$" }
    - name: big_order
      sql: amount < 1000
      severity: warning
schema_policy:
  unknown_fields: drop
`);
    const res = await engine.validate(
      [
        { order_id: 1, status: "new", amount: 5 },
        { order_id: null, status: "lost", amount: -1, note: "x" },
        { order_id: "2", status: "paid", amount: "2000" },
      ],
      contract,
    );
    expect(res.good).toEqual([
      { order_id: 1, status: "new", amount: "5.00" },
      { order_id: 2, status: "paid", amount: "2000.00" },
    ]);
    expect(failures(res)).toEqual({ 1: ["not_null:order_id", "accepted_values:status", "range:amount"] });
    expect(counts(res)["big_order"]).toBe(1);
  });
});
