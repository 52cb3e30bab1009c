/**
 * `sql` rules are parsed and bound by DuckDB over the contract's typed fields when the contract
 * is loaded (sql-bind.ts): a rule the engine would fail on is a ContractError at the rule's `sql`
 * key, with DuckDB's reason, before any record is read. Valid contracts still load.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ContractError, contractFromObject, loadContract, parseContract } from "../../src/contract/index.js";
import { lintFiles } from "../../src/lint/index.js";
import { StreamSink } from "../../src/sink/index.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-sql-bind-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const FIELDS = `dataset: calls
model:
  fields:
    - { name: call_id, type: string, required: true }
    - { name: duration_ms, type: long }
    - { name: started_at, type: timestamp }
    - { name: cost, type: "decimal(10,2)" }
`;

function contractFile(name: string, quality: string): string {
  const path = join(tmp, `${name}.yaml`);
  writeFileSync(path, `${FIELDS}quality:\n${quality}`);
  return path;
}

async function refusal(path: string): Promise<ContractError> {
  const err = await loadContract(path).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ContractError);
  return err as ContractError;
}

const where = (e: ContractError) => e.problems.map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`);

describe("loadContract binds sql rules with DuckDB", () => {
  it("refuses a row rule that does not parse, at its sql key, with the parser's message", async () => {
    const path = contractFile("syntax", "  row_rules:\n    - name: duration_not_negative\n      sql: duration_ms >= 0 AND\n");
    // Loading without DuckDB (synchronous) accepts it: the guard sees only allowed tokens.
    expect(parseContract(`${FIELDS}quality:\n  row_rules:\n    - {name: r, sql: duration_ms >= 0 AND}\n`).rowRules).toHaveLength(2);
    const e = await refusal(path);
    expect(where(e)).toEqual(["11:7 quality.row_rules[0].sql: Parser Error: syntax error at end of input"]);
    expect([e.file, e.line, e.column]).toEqual([path, 11, 7]);
    expect(e.message).toMatch(/^.*syntax\.yaml:11:7 quality\.row_rules\[0\]\.sql: Parser Error: syntax error at end of input; expected a boolean SQL expression/);
    // DuckDB's excerpt of the statement around the rule is not the author's text: left out.
    expect(e.message).not.toMatch(/LINE 1|SELECT|coalesce/);
  });

  it("refuses rules that do not bind over the typed fields: a function given the wrong type, text compared with a number", async () => {
    const path = contractFile(
      "types",
      "  row_rules:\n    - sql: length(duration_ms) < 10\n    - sql: \"call_id > 5\"\n    - sql: \"started_at > '2024-13-01'\"\n",
    );
    const e = await refusal(path);
    expect(where(e)).toEqual([
      expect.stringMatching(/^10:7 quality\.row_rules\[0\]\.sql: Binder Error: No function matches the given name and argument types 'length\(BIGINT\)'.* Candidate functions: length\(VARCHAR\) -> BIGINT, /),
      "11:7 quality.row_rules[1].sql: Binder Error: Cannot compare values of type VARCHAR and type INTEGER_LITERAL - an explicit cast is required",
      expect.stringMatching(/^12:7 quality\.row_rules\[2\]\.sql: Conversion Error: .*"2024-13-01"/),
    ]);
  });

  it("refuses a dataset sql rule that does not parse or bind, at its sql key", async () => {
    const path = contractFile(
      "dataset",
      "  dataset_rules:\n    - sql: SELECT count(*) FROM {dataset} WHERE duration_ms <\n      must_be_less_than: 1\n    - sql: SELECT sum(call_id) FROM {dataset}\n      must_be_less_than: 1\n",
    );
    const e = await refusal(path);
    expect(where(e)).toEqual([
      "10:7 quality.dataset_rules[0].sql: Parser Error: syntax error at end of input",
      expect.stringMatching(/^12:7 quality\.dataset_rules\[1\]\.sql: Binder Error: No function matches the given name and argument types 'sum\(VARCHAR\)'/),
    ]);
  });

  it("refuses a range whose date bound does not convert, at the rule", async () => {
    const path = contractFile("range", "  row_rules:\n    - range: {field: started_at, min: '2024-02-30'}\n");
    expect(where(await refusal(path))).toEqual([expect.stringMatching(/^10:7 quality\.row_rules\[0\]: Conversion Error: .*2024-02-30/)]);
  });

  it("names the rule when the contract was given as an object (no positions)", async () => {
    const err = await loadContract({ dataset: "d", model: { fields: [{ name: "a", type: "long" }] }, quality: { row_rules: [{ name: "a_positive", sql: "a > 0 AND" }] } }).catch((e: unknown) => e);
    expect((err as ContractError).message).toBe(
      "sql rule 'a_positive': Parser Error: syntax error at end of input; expected a boolean SQL expression over the contract's fields that DuckDB parses and binds (see docs/contracts.md, Rule expressions)",
    );
  });

  it("loads valid sql rules on every field type, dataset sql rules, and a contract without fields", async () => {
    const path = contractFile(
      "valid",
      [
        "  row_rules:",
        "    - sql: duration_ms >= 0 AND cost < 100.5",
        "    - sql: \"started_at >= TIMESTAMP '2024-01-01' AND length(call_id) = 36\"",
        "    - range: {field: started_at, min: '2024-01-01', max: '2030-12-31T23:59:59'}",
        "  dataset_rules:",
        "    - sql: SELECT count(*) FROM {dataset} WHERE duration_ms < 0",
        "      must_be_less_than: 1",
        "",
      ].join("\n"),
    );
    const c = await loadContract(path);
    expect(c.rowRules.filter((r) => r.kind === "sql")).toHaveLength(3);
    expect(c.datasetRules).toHaveLength(1);
    // Schemaless: the keys a rule names are text.
    const schemaless = await loadContract("dataset: raw\nquality:\n  row_rules:\n    - sql: \"length(payload) > 0 AND kind IN ('a', 'b')\"\n");
    expect(schemaless.rowRules).toHaveLength(1);
  });

  it("StreamSink binds a contract built without loadContract before it reads a record", async () => {
    const contract = contractFromObject({ dataset: "d", model: { fields: [{ name: "a", type: "long" }] }, quality: { row_rules: [{ name: "r", sql: "a >= 0 AND" }] } });
    let read = 0;
    function* records(): Generator<Record<string, unknown>> {
      read++;
      yield { a: 1 };
    }
    const sink = new StreamSink(contract, records(), { checkpoint: "memory", targetPath: join(tmp, "lake"), handleSignals: false });
    await expect(sink.run("available_now")).rejects.toThrow(/sql rule 'r': Parser Error: syntax error at end of input/);
    expect(read).toBe(0);
  });
});

describe("lint binds sql rules too", () => {
  it("reports a rule DuckDB refuses as LOAD-001 at its sql key", async () => {
    const path = contractFile("lint-syntax", "  row_rules:\n    - name: duration_not_negative\n      sql: duration_ms >= 0 AND\n");
    const findings = await lintFiles([path]);
    expect(findings.map((f) => `${f.id} ${f.severity} ${f.line}:${f.column} ${f.path}`)).toEqual(["LOAD-001 critical 11:7 quality.row_rules[0].sql"]);
    expect(findings[0]?.message).toContain("Parser Error: syntax error at end of input");
  });
});
