import { describe, expect, it } from "vitest";
import { ContractError, checkRuleExpression, parseContract, RuleExpressionError } from "../../src/contract/index.js";

const FIELDS = ["name", "status", "payload", "path", "created_at"];

function reason(sql: string): string {
  try {
    checkRuleExpression(sql, { fields: FIELDS });
  } catch (e) {
    expect(e).toBeInstanceOf(RuleExpressionError);
    return (e as RuleExpressionError).reason;
  }
  throw new Error(`expected ${JSON.stringify(sql)} to be refused`);
}

describe("rule functions whose output can outgrow their input", () => {
  const refused: Array<[string, RegExp]> = [
    ["replace(name, 'a', 'aaaaaaaaaa') <> ''", /function replace\(\) is not allowed: it builds a new string/],
    ["regexp_replace(name, '', 'xxxxxxxx', 'g') <> ''", /function regexp_replace\(\) is not allowed: it builds a new string/],
    ["length(concat(name, name, name, name)) > 0", /function concat\(\) is not allowed: it builds a new string/],
    ["concat_ws(name, name, name) <> ''", /function concat_ws\(\) is not allowed: it builds a new string/],
    ["translate(name, 'a', '€') <> ''", /function translate\(\) is not allowed: it builds a new string/],
    ["name.replace('a', 'bb') <> ''", /function replace\(\) is not allowed/],
    ["name.main.concat(name) <> ''", /function concat\(\) is not allowed/],
    ["name || name || name <> ''", /the \|\| operator is not allowed: it builds a new string/],
    ["json_extract(payload, '$..*') IS NOT NULL", /json_extract\(\).*recursive/],
    ["json_extract_string(payload, '$.**') IS NOT NULL", /json_extract_string\(\).*recursive/],
    ["json_extract(payload, path) IS NOT NULL", /json_extract\(\).*a string literal/],
    ["json_extract_string(payload, lower('$..x')) IS NOT NULL", /json_extract_string\(\).*a string literal/],
    ["payload.json_extract('$..a') IS NOT NULL", /json_extract\(\).*recursive/],
    ["main.json_extract(payload, '$..a') IS NOT NULL", /json_extract\(\).*a string literal/],
    ["json_extract(payload) IS NOT NULL", /json_extract\(\).*a string literal/],
  ];
  for (const [sql, why] of refused) {
    it(`refuses ${sql}`, () => {
      const r = reason(sql);
      expect(r).toMatch(why);
      expect(r).toMatch(/a rule is a boolean check/);
    });
  }

  const accepted = [
    "json_extract_string(payload, '$.customer.id') IS NOT NULL",
    "json_extract(payload, '$.items[0]') IS NOT NULL",
    "payload.json_extract_string('$.a') = 'x'",
    "json_extract_string(payload, '$.items[*].sku') IS NOT NULL",
    "json_type(payload, '$.a') = 'OBJECT' AND json_exists(payload, '$.b') AND json_array_length(payload, '$.c') > 0",
    "upper(name) = lower(status) AND length(trim(name)) < 10 AND left(name, 2) = right(status, 2)",
    "strftime(created_at, '%Y') = '2024' AND md5(name) <> sha256(status)",
  ];
  for (const sql of accepted) {
    it(`accepts ${sql}`, () => {
      expect(() => checkRuleExpression(sql, { fields: FIELDS })).not.toThrow();
    });
  }

  it("reports the refusal with the file, line, column and key path of the rule", () => {
    const yaml = [
      "dataset: d",
      "model:",
      "  fields:",
      "    - {name: name, type: string}",
      "quality:",
      "  row_rules:",
      "    - not_null: name",
      "    - sql: \"length(replace(name, 'a', 'aaaa')) > 0\"",
      "",
    ].join("\n");
    let caught: unknown;
    try {
      parseContract(yaml, "c.yaml");
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ContractError);
    expect((caught as ContractError).message).toMatch(/^c\.yaml:8:7 quality\.row_rules\[1\]\.sql: function replace\(\) is not allowed: it builds a new string/);
  });
});
