/**
 * A `sql` rule the guard accepts can still throw inside the engine on one value (a cast that
 * does not convert, strptime on a malformed string, a pattern taken from a field). That row is
 * quarantined with the rule id and the engine's message; the other rows are validated as usual.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, EngineName, ValidationResult } from "../../src/engine/types.js";
import { ConfigError } from "../../src/errors.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { makeContract, type ContractInput } from "../support/contract.js";

function failures(res: ValidationResult): Record<number, string[]> {
  return Object.fromEntries(res.bad.map((b) => [b.index, b.errors.map((e) => e.ruleId)]));
}
function counts(res: ValidationResult): Record<string, number> {
  return Object.fromEntries(res.ruleCounts.map((c) => [c.ruleId, c.failed]));
}

const castRule: ContractInput = {
  fields: [
    { name: "id", type: "integer" },
    { name: "code", type: "string" },
  ],
  rowRules: [{ kind: "sql", id: "code_positive", sql: "CAST(code AS INTEGER) > 0" }],
};

const strptimeRule: ContractInput = {
  fields: [
    { name: "id", type: "integer" },
    { name: "d", type: "string" },
  ],
  rowRules: [{ kind: "sql", id: "d_parses", sql: "strptime(d, '%Y-%m-%d') IS NOT NULL" }],
};

describe.each<EngineName>(["duckdb", "polars"])("a value that makes a rule throw on %s", (engineName) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await createEngine(engineName);
  });
  afterAll(async () => {
    await engine.close();
  });

  it("quarantines the row of a cast that does not convert, with the rule id and the engine's message", async () => {
    const records = [
      { id: 1, code: "7" },
      { id: 2, code: "abc" },
      { id: 3, code: "-1" },
      { id: 4, code: null },
      { id: 5, code: "12" },
    ];
    const res = await engine.validate(records, makeContract(castRule));
    // Row 2 does not convert; row 3 is a plain failure; row 4 is NULL, which fails too.
    expect(failures(res)).toEqual({ 1: ["code_positive"], 2: ["code_positive"], 3: ["code_positive"] });
    expect(res.good).toEqual([
      { id: 1, code: "7" },
      { id: 5, code: "12" },
    ]);
    expect(res.goodCount).toBe(2);
    const poison = res.bad.find((b) => b.index === 1)!;
    expect(poison.record).toBe(records[1]);
    expect(poison.errors[0]!.message).toMatch(/^code_positive: cannot be evaluated: /);
    expect(poison.errors[0]!.message).toMatch(/abc/);
    // Plain failures keep their own message.
    expect(res.bad.find((b) => b.index === 2)!.errors[0]!.message).toBe("code_positive: not true: CAST(code AS INTEGER) > 0");
    expect(counts(res)).toMatchObject({ code_positive: 3 });
  });

  it("quarantines the row strptime cannot parse", async () => {
    const records = [
      { id: 1, d: "2024-01-31" },
      { id: 2, d: "31/01/2024" },
      { id: 3, d: "2024-02-01" },
    ];
    const res = await engine.validate(records, makeContract(strptimeRule));
    expect(failures(res)).toEqual({ 1: ["d_parses"] });
    expect(res.bad[0]!.errors[0]!.message).toMatch(/^d_parses: cannot be evaluated: .*31\/01\/2024/s);
    expect(res.good.map((r) => r["id"])).toEqual([1, 3]);
  });

  it("finds every poison row of a batch, keeps arrival order, and keeps other failures", async () => {
    const records = Array.from({ length: 3000 }, (_, i) => ({
      id: i,
      code: i % 997 === 5 ? `x${i}` : String((i % 50) + 1),
      ...(i === 10 ? { id: "ten" } : {}),
    }));
    const res = await engine.validate(records, makeContract(castRule));
    const poison = records.flatMap((r, i) => (String(r.code).startsWith("x") ? [i] : []));
    expect(poison).toEqual([5, 1002, 1999, 2996]);
    expect(res.bad.map((b) => b.index)).toEqual([5, 10, 1002, 1999, 2996]);
    expect(failures(res)[10]).toEqual(["type:id"]);
    for (const i of poison) expect(res.bad.find((b) => b.index === i)!.errors[0]!.message).toMatch(new RegExp(`x${i}`));
    expect(res.goodCount).toBe(3000 - 5);
    expect(res.good.length).toBe(3000 - 5);
    expect(res.good[5]).toEqual({ id: 6, code: "7" });
    expect(counts(res)).toMatchObject({ code_positive: 4, "type:id": 1 });
  });

  it("quarantines a poison row even when the rule is only a warning", async () => {
    const contract = makeContract({
      ...castRule,
      rowRules: [{ kind: "sql", id: "code_positive", sql: "CAST(code AS INTEGER) > 0", severity: "warning" }],
    });
    const res = await engine.validate(
      [
        { id: 1, code: "0" },
        { id: 2, code: "zz" },
      ],
      contract,
    );
    expect(failures(res)).toEqual({ 1: ["code_positive"] });
    expect(res.good).toEqual([{ id: 1, code: "0" }]);
    expect(counts(res)).toMatchObject({ code_positive: 2 });
  });

  it("quarantines every row when every row is poison, and validates the next batch as usual", async () => {
    const contract = makeContract(castRule);
    const res = await engine.validate(
      Array.from({ length: 40 }, (_, i) => ({ id: i, code: `bad${i}` })),
      contract,
    );
    expect(res.goodCount).toBe(0);
    expect(res.good).toEqual([]);
    expect(res.bad.map((b) => b.index)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const next = await engine.validate([{ id: 1, code: "3" }], contract);
    expect(next.good).toEqual([{ id: 1, code: "3" }]);
  });
});

describe("a pattern taken from a field", () => {
  const contract = makeContract({
    fields: [
      { name: "a", type: "string" },
      { name: "b", type: "string" },
    ],
    rowRules: [{ kind: "sql", id: "a_matches_b", sql: "regexp_matches(a, b)" }],
  });

  it("duckdb: quarantines the row whose pattern does not compile", async () => {
    const engine = await createEngine("duckdb");
    try {
      const res = await engine.validate(
        [
          { a: "abc", b: "^a" },
          { a: "abc", b: "(" },
          { a: "abc", b: "^z" },
          { a: "xyz", b: "y" },
        ],
        contract,
      );
      expect(failures(res)).toEqual({ 1: ["a_matches_b"], 2: ["a_matches_b"] });
      expect(res.bad[0]!.errors[0]!.message).toMatch(/^a_matches_b: cannot be evaluated: .*missing \)/s);
      expect(res.good.map((r) => r["b"])).toEqual(["^a", "y"]);
    } finally {
      await engine.close();
    }
  });

  it("polars: the rule is refused when the contract is first used (its SQL has no regexp_matches)", async () => {
    const engine = await createEngine("polars");
    try {
      await expect(engine.validate([{ a: "abc", b: "^a" }], contract)).rejects.toThrow(ConfigError);
    } finally {
      await engine.close();
    }
  });
});

describe.each<EngineName>(["duckdb", "polars"])("a stream with a poison value on %s", (engineName) => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it("goes on: the poison record is quarantined with the rule id and the message, every batch is committed", async () => {
    const target = mkdtempSync(join(tmpdir(), "ll-poison-"));
    dirs.push(target);
    const contract = parseContract(`
dataset: poison_rows
model:
  fields:
    - { name: id, type: integer }
    - { name: code, type: string }
quality:
  row_rules:
    - name: code_positive
      sql: "CAST(code AS INTEGER) > 0"
materialization:
  strategy: append
  format: duckdb
`);
    const records = Array.from({ length: 9 }, (_, i) => ({ id: i, code: i === 4 ? "four" : String(i + 1) }));
    const summary = await new StreamSink(contract, records, {
      engine: engineName,
      targetPath: target,
      checkpoint: "memory",
      batchSize: 3,
    }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 9, goodCount: 8, badCount: 1, stoppedBy: "end" });
    expect((await readTable(contract, { targetPath: target })).map((r) => Number(r["id"]))).toEqual([0, 1, 2, 3, 5, 6, 7, 8]);
    const [q, ...more] = await readQuarantine(contract, { targetPath: target });
    expect(more).toEqual([]);
    expect(q!.ruleIds).toEqual(["code_positive"]);
    expect(q!.reasons[0]).toMatch(/^code_positive: cannot be evaluated: .*four/s);
  });
});

describe("poison values on both engines", () => {
  it("split the batch the same way: same bad rows and rule ids, same good rows, counts and dataset rules", async () => {
    const [duck, polars] = await Promise.all([createEngine("duckdb"), createEngine("polars")]);
    try {
      const contract = makeContract({
        fields: [
          { name: "id", type: "integer" },
          { name: "code", type: "string" },
          { name: "d", type: "string" },
        ],
        rowRules: [
          { kind: "sql", id: "code_positive", sql: "CAST(code AS INTEGER) > 0" },
          { kind: "sql", id: "d_parses", sql: "d IS NULL OR strptime(d, '%Y-%m-%d') IS NOT NULL", severity: "warning" },
        ],
        datasetRules: [{ kind: "unique", fields: ["code"] }, { kind: "row_count_between", min: 1 }],
      });
      const records = Array.from({ length: 500 }, (_, i) => ({
        id: i,
        code: i % 61 === 7 || i === 101 ? `c${i}` : String((i % 40) + 1),
        d: i % 47 === 3 || i === 101 ? "3 March" : i % 2 === 0 ? null : "2024-03-03",
      }));
      const [a, b] = await Promise.all([duck.validate(records, contract), polars.validate(records, contract)]);
      const shape = (r: ValidationResult) => r.bad.map((x) => [x.index, x.errors.map((e) => e.ruleId)]);
      expect(shape(b)).toEqual(shape(a));
      expect(b.good).toEqual(a.good);
      expect(b.ruleCounts).toEqual(a.ruleCounts);
      expect(b.datasetRules).toEqual(a.datasetRules);
      // Both kinds of poison occur, once alone and once on the same row.
      expect(a.bad.some((x) => x.errors.length === 2)).toBe(true);
      expect(new Set(a.bad.flatMap((x) => x.errors.map((e) => e.ruleId)))).toEqual(new Set(["code_positive", "d_parses"]));
    } finally {
      await duck.close();
      await polars.close();
    }
  });
});
