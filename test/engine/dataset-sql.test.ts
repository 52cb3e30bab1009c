/**
 * Dataset `sql` rules (`SELECT <aggregate> FROM {dataset} [WHERE …]` with must_be_*): evaluated
 * over each batch's good rows on both engines, refused at load when they could read anything
 * else, and a query that throws is reported as its rule failing (the batch stands).
 */
import { describe, expect, it } from "vitest";
import { ContractError, parseContract as loadContractText } from "../../src/contract/index.js";
import { createEngine, type EngineName } from "../../src/engine/index.js";

const contract = (rules: string, extra = "") =>
  loadContractText(
    `dataset: orders
model:
  fields:
    - {name: order_id, type: long, required: true}
    - {name: amount, type: double}
    - {name: status, type: string}
quality:
  row_rules:
    - not_null: order_id
  dataset_rules:
${rules}
${extra}`,
    "orders.yaml",
  );

const rows = [
  { order_id: 1, amount: 10, status: "new" },
  { order_id: 2, amount: -5, status: "new" },
  { order_id: 3, amount: 30, status: "paid" },
  { order_id: null, amount: -100, status: "new" }, // bad: never counted by dataset rules
];

describe.each<EngineName>(["duckdb", "polars"])("dataset sql rules on %s", (name) => {
  it("evaluates the query over the good rows and judges it by its bound", async () => {
    const c = contract(`    - name: few_negative
      sql: "SELECT count(*) FROM {dataset} WHERE amount < 0"
      must_be_less_than: 1
    - name: mean_amount
      sql: SELECT avg(amount) FROM source
      must_be_between: [10, 20]
    - name: enough_paid
      sql: "SELECT sum(CASE WHEN status = 'paid' THEN 1 ELSE 0 END) FROM orders;"
      must_be_greater_than: 0`);
    const engine = await createEngine(name);
    try {
      const res = await engine.validate(rows, c);
      expect(res.goodCount).toBe(3);
      const byId = Object.fromEntries(res.datasetRules.map((r) => [r.ruleId, r]));
      expect(byId["few_negative"]).toMatchObject({ passed: false, observed: 1 });
      expect(byId["mean_amount"]).toMatchObject({ passed: true, observed: 35 / 3 });
      expect(byId["enough_paid"]).toMatchObject({ passed: true, observed: 1 });
    } finally {
      await engine.close();
    }
  });

  it("a NULL value fails the rule; a query that throws is reported as failing and the rows stand", async () => {
    const c = contract(`    - name: avg_of_none
      sql: "SELECT avg(amount) FROM {dataset} WHERE amount > 1000"
      must_be_less_than: 5
    - name: throws
      sql: "SELECT sum(CAST(status AS INTEGER)) FROM {dataset}"
      must_be_greater_than: 0`);
    const engine = await createEngine(name);
    try {
      const res = await engine.validate(rows, c);
      expect(res.goodCount).toBe(3);
      const byId = Object.fromEntries(res.datasetRules.map((r) => [r.ruleId, r]));
      expect(byId["avg_of_none"]).toMatchObject({ passed: false });
      expect(byId["avg_of_none"]!.message).toContain("NULL");
      // DuckDB throws on CAST('new' AS INTEGER); Polars casts it to NULL: the rule fails either way.
      expect(byId["throws"]!.passed).toBe(false);
      if (name === "duckdb") expect(byId["throws"]!.error).toContain("Conversion Error");
    } finally {
      await engine.close();
    }
  });
});

describe("dataset sql rules at load", () => {
  const refused = (sql: string) => () => contract(`    - sql: "${sql}"\n      must_be_less_than: 1`);
  it.each([
    ["another table", "SELECT count(*) FROM customers"],
    ["a file read", "SELECT count(*) FROM read_csv('/etc/passwd')"],
    ["a join", "SELECT count(*) FROM {dataset} JOIN customers ON true"],
    ["grouping", "SELECT count(*) FROM {dataset} GROUP BY status"],
    ["a subquery", "SELECT (SELECT 1) FROM {dataset}"],
    ["two values", "SELECT count(*), 1 FROM {dataset}"],
    ["an unknown field", "SELECT sum(amout) FROM {dataset}"],
    ["an amplifying aggregate", "SELECT length(string_agg(status)) FROM {dataset}"],
  ])("refuses %s, naming the rule's sql key", (_what, sql) => {
    expect(refused(sql)).toThrow(ContractError);
    expect(refused(sql)).toThrow(/dataset_rules\[0\]\.sql|dataset_rules\.0\.sql/);
  });

  it("refuses two bounds, and accepts none with a warning", () => {
    expect(() => contract(`    - sql: "SELECT count(*) FROM {dataset}"\n      must_be_less_than: 1\n      must_be_greater_than: 0`)).toThrow(/both given/);
    const c = contract(`    - sql: "SELECT count(*) FROM {dataset}"`);
    expect(c.datasetRules[0]).toMatchObject({ kind: "sql", bounds: {} });
    expect(c.warnings.map((w) => w.message).join("\n")).toContain("passes whenever its query gives a value");
  });
});
