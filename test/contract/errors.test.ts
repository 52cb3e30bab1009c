import { describe, expect, it } from "vitest";
import { ContractError, contractFromObject, parseContract, type ContractProblem } from "../../src/contract/index.js";
import { LakeLogicError } from "../../src/errors.js";

function problems(yaml: string, file = "bronze.yaml"): readonly ContractProblem[] {
  try {
    parseContract(yaml, file);
  } catch (e) {
    if (e instanceof ContractError) return e.problems;
    throw e;
  }
  throw new Error("expected a ContractError");
}

function first(yaml: string, file = "bronze.yaml"): ContractError {
  try {
    parseContract(yaml, file);
  } catch (e) {
    if (e instanceof ContractError) return e;
    throw e;
  }
  throw new Error("expected a ContractError");
}

const BASE = `version: 1.0.0
dataset: orders
model:
  fields:
    - name: order_id
      type: long
    - name: email
      type: string
    - name: amount
      type: double
quality:
  row_rules:
    - not_null: order_id
`;

describe("ContractError", () => {
  it("is a LakeLogicError with code CONTRACT and the position of the first problem", () => {
    const yaml = BASE + `    - regex_match:\n        field: email\n        pattern: "[unclosed"\n`;
    const e = first(yaml);
    expect(e).toBeInstanceOf(LakeLogicError);
    expect(e.code).toBe("CONTRACT");
    expect(e.name).toBe("ContractError");
    expect(e.file).toBe("bronze.yaml");
    expect(e.line).toBe(16);
    expect(e.column).toBe(9);
    expect(e.path).toBe("quality.row_rules[1].regex_match.pattern");
    expect(e.message).toMatch(
      /^bronze\.yaml:16:9 quality\.row_rules\[1\]\.regex_match\.pattern: invalid regular expression: .*; expected a regular expression in RE2 syntax/,
    );
  });

  it("collects every problem, sorted by position, one per line of the message", () => {
    const yaml = `dataset: d
materialization:
  strategy: replace
model:
  fields:
    - name: a
      type: integr
    - name: b
quality:
  row_rules:
    - not_nul: a
`;
    const e = first(yaml, "x.yaml");
    expect(e.problems.map((p) => [p.line, p.column, p.path])).toEqual([
      [3, 3, "materialization.strategy"],
      [7, 7, "model.fields[0].type"],
      [8, 7, "model.fields[1].type"],
      [11, 7, "quality.row_rules[0].not_nul"],
    ]);
    expect(e.message.split("\n")).toEqual([
      "x.yaml:3:3 materialization.strategy: unknown strategy 'replace'; expected append, merge, overwrite or scd2",
      expect.stringMatching(/^x\.yaml:7:7 model\.fields\[0\]\.type: unknown type 'integr' \(did you mean integer\?\); expected string, integer/),
      "x.yaml:8:7 model.fields[1].type: missing required key 'type'; expected a type: string, integer, double, decimal, boolean, date, timestamp or json",
      expect.stringMatching(/^x\.yaml:11:7 quality\.row_rules\[0\]\.not_nul: unknown rule kind 'not_nul' \(did you mean not_null\?\)/),
    ]);
  });
});

describe("YAML and top-level shape", () => {
  it("reports unparseable YAML with its position", () => {
    const e = first("dataset: d\nquality:\n  row_rules: [\n    - x\n", "bad.yaml");
    expect(e.problems.length).toBeGreaterThan(0);
    expect(e.line).toBeGreaterThanOrEqual(3);
    expect(e.message).toMatch(/^bad\.yaml:\d+:\d+ invalid YAML: /);
    expect(e.path).toBe("");
  });

  it("refuses duplicate keys", () => {
    expect(first("dataset: a\ndataset: b\n").message).toMatch(/^bronze\.yaml:2:1 invalid YAML: Map keys must be unique/);
  });

  it("refuses a non-mapping top level", () => {
    expect(first("- a\n- b\n").message).toBe("bronze.yaml:1:1 the top level is a list; expected a mapping of contract keys (dataset, model, quality, …)");
    expect(first("just text\n").message).toMatch(/the top level is "just text"/);
    expect(first("").message).toBe("bronze.yaml:1:1 the contract is empty; expected a mapping with dataset, model, quality, materialization, …");
  });

  it("refuses an ODCS document instead of loading it half-understood", () => {
    expect(first("apiVersion: v3.0.0\nkind: DataContract\nid: x\n").message).toMatch(/Open Data Contract Standard/);
  });
});

describe("wrong types and missing keys", () => {
  const cases: Array<[string, string, string]> = [
    ["model: [a]\n", "model", "found a list; expected a mapping"],
    ["model:\n  fields: {a: 1}\n", "model.fields", "found a mapping; expected a list of fields"],
    ["model:\n  fields:\n    - just_a_name\n", "model.fields[0]", 'found "just_a_name"; expected a field mapping'],
    ["model:\n  fields:\n    - {type: int}\n", "model.fields[0].name", "missing required key 'name'"],
    ["model:\n  fields:\n    - {name: a, type: int, required: maybe}\n", "model.fields[0].required", 'found "maybe"; expected true or false'],
    ["model:\n  fields:\n    - {name: a, type: [int]}\n", "model.fields[0].type", "found a list; expected a type name"],
    ["model:\n  fields:\n    - {name: a, type: \"decimal(40,2)\"}\n", "model.fields[0].type", "decimal precision 40 is out of range"],
    ["model:\n  fields:\n    - {name: a, type: \"decimal(4,6)\"}\n", "model.fields[0].type", "decimal scale 6 is larger than its precision 4"],
    ["model:\n  fields:\n    - {name: a, type: int}\n    - {name: A, type: int}\n", "model.fields[1].name", "duplicate field 'A' (also declared at model.fields[0])"],
    ["model:\n  fields:\n    - {name: a, type: int, aliases: [b]}\n    - {name: b, type: int}\n", "model.fields[0].aliases", "alias 'b' is the name of a declared field"],
    ["model:\n  fields:\n    - {name: a, type: int, max_length: -1}\n", "model.fields[0].max_length", "found -1"],
    ["model:\n  fields:\n    - {name: a, type: int, accepted_values: []}\n", "model.fields[0].accepted_values", "is empty"],
    ["model:\n  primary_key: [a]\n", "model.primary_key", "primary_key belongs at the top level"],
    ['model:\n  fields:\n    - {name: "a\\u200Bb", type: int}\n', "model.fields[0].name", "invisible character U+200B"],
    ['model:\n  fields:\n    - {name: "a\\tb", type: int}\n', "model.fields[0].name", "control or invisible character U+0009"],
    ["model:\n  fields:\n    - {name: a, type: int, unique: true}\n", "model.fields[0].unique", "field-level unique is not read; expected a dataset rule: quality.dataset_rules: [{unique: a}]"],
    ["model:\n  fields:\n    - {name: a, type: int, primary_key: true}\n", "model.fields[0].primary_key", "list 'a' in the top-level primary_key"],
    ["primary_key: {a: 1}\n", "primary_key", "found a mapping; expected a name or a list of names"],
    ["quality: [a]\n", "quality", "found a list; expected a mapping"],
    ["quality:\n  row_rules: {not_null: a}\n", "quality.row_rules", "found a mapping; expected a list of rules"],
    ["quality:\n  row_rules:\n    - not_null\n", "quality.row_rules[0]", 'found "not_null"; expected a rule mapping'],
    ["quality:\n  row_rules:\n    -\n", "quality.row_rules[0]", "empty rule entry"],
    ["quality:\n  row_rules:\n    - {name: x}\n", "quality.row_rules[0]", "the rule says nothing to check"],
    ["quality:\n  row_rules:\n    - {not_null: a, sql: b > 1}\n", "quality.row_rules[0].sql", "one rule per list item, found not_null and sql"],
    ["quality:\n  row_rules:\n    - {sql: ''}\n", "quality.row_rules[0].sql", "is empty"],
    ["quality:\n  row_rules:\n    - {sql: [a]}\n", "quality.row_rules[0].sql", "found a list; expected a SQL boolean expression"],
    ["quality:\n  row_rules:\n    - {sql: a > 1, severity: fatal}\n", "quality.row_rules[0].severity", "unknown severity 'fatal' (did you mean error?); expected error, warning or info"],
    ["quality:\n  row_rules:\n    - {sql: a > 1, severity: warn}\n", "quality.row_rules[0].severity", "unknown severity 'warn' (did you mean warning?)"],
    ["quality:\n  row_rules:\n    - {sql: a > 1, severity: high}\n", "quality.row_rules[0].severity", "unknown severity 'high'; expected error, warning or info"],
    ["quality:\n  row_rules:\n    - accepted_values: {field: a}\n", "quality.row_rules[0].accepted_values.values", "missing required key 'values'"],
    ["quality:\n  row_rules:\n    - accepted_values: {field: a, values: [[1]]}\n", "quality.row_rules[0].accepted_values.values[0]", "found a list; expected a string, number or boolean value"],
    ["quality:\n  row_rules:\n    - accepted_values: [a, b]\n", "quality.row_rules[0].accepted_values", "found a list; expected a mapping, e.g. accepted_values: {field: …}"],
    ["quality:\n  row_rules:\n    - regex_match: {field: a}\n", "quality.row_rules[0].regex_match.pattern", "missing required key 'pattern'"],
    ["quality:\n  row_rules:\n    - regex_match: {field: a, patern: x}\n", "quality.row_rules[0].regex_match.patern", "missing required key 'pattern' (found 'patern': did you mean pattern?)"],
    ["quality:\n  row_rules:\n    - regex_match: {fild: a, pattern: x}\n", "quality.row_rules[0].regex_match.fild", "missing required key 'field' (found 'fild': did you mean field?)"],
    ["quality:\n  row_rules:\n    - regex_match: {field: a, pattern: \"(?=x)\"}\n", "quality.row_rules[0].regex_match.pattern", "look-around"],
    ["quality:\n  row_rules:\n    - regex_match: {field: a, pattern: \"(a)\\\\1\"}\n", "quality.row_rules[0].regex_match.pattern", "backreferences are not supported"],
    ["quality:\n  row_rules:\n    - range: {field: a}\n", "quality.row_rules[0].range", "a range needs min, max or both"],
    ["quality:\n  row_rules:\n    - range: {field: a, min: 5, max: 1}\n", "quality.row_rules[0].range", "min 5 is greater than max 1"],
    ["quality:\n  row_rules:\n    - range: {field: a, min: [1]}\n", "quality.row_rules[0].range.min", "found a list"],
    ["quality:\n  row_rules:\n    - range: {field: a, min: 1, inclusive: sometimes}\n", "quality.row_rules[0].range.inclusive", 'found "sometimes"'],
    ["quality:\n  row_rules:\n    - not_null: {fields: []}\n", "quality.row_rules[0].not_null.fields", "is empty"],
    ["quality:\n  row_rules:\n    - not_null:\n", "quality.row_rules[0].not_null", "is empty"],
    ["quality:\n  row_rules:\n    - unique: a\n", "quality.row_rules[0].unique", "unique is a dataset rule; expected it under quality.dataset_rules"],
    ["quality:\n  dataset_rules:\n    - not_null: a\n", "quality.dataset_rules[0].not_null", "not_null is a row rule; expected it under quality.row_rules"],
    ["quality:\n  dataset_rules:\n    - uniqe: a\n", "quality.dataset_rules[0].uniqe", "unknown rule kind 'uniqe' (did you mean unique?)"],
    ["quality:\n  dataset_rules:\n    - unique: {name: x}\n", "quality.dataset_rules[0].unique.field", "missing required key 'field'"],
    ["quality:\n  dataset_rules:\n    - unique: []\n", "quality.dataset_rules[0].unique", "is empty"],
    ["quality:\n  dataset_rules:\n    - null_ratio: {field: a}\n", "quality.dataset_rules[0].null_ratio.max", "missing required key 'max'"],
    ["quality:\n  dataset_rules:\n    - null_ratio: {field: a, max: -0.1}\n", "quality.dataset_rules[0].null_ratio.max", "found -0.1; expected a ratio from 0 to 1"],
    ["quality:\n  dataset_rules:\n    - null_ratio: {field: a, max: lots}\n", "quality.dataset_rules[0].null_ratio.max", 'found "lots"; expected a ratio from 0 to 1'],
    ["quality:\n  dataset_rules:\n    - row_count_between: {}\n", "quality.dataset_rules[0].row_count_between", "needs min, max or both"],
    ["quality:\n  dataset_rules:\n    - row_count_between: {min: 10, max: 1}\n", "quality.dataset_rules[0].row_count_between", "min 10 is greater than max 1"],
    ["quality:\n  enforce_required: 2\n", "quality.enforce_required", "found 2; expected true or false"],
    ["materialization: append\n", "materialization", 'found "append"; expected a mapping'],
    ["materialization: {strategy: merg}\n", "materialization.strategy", "unknown strategy 'merg' (did you mean merge?)"],
    ["materialization: {format: parket}\n", "materialization.format", "unknown format 'parket' (did you mean parquet?)"],
    ["materialization: {partition_by: {a: 1}}\n", "materialization.partition_by", "found a mapping"],
    ["quarantine: {enabled: nope}\n", "quarantine.enabled", 'found "nope"; expected true or false'],
    ["schema_policy: {unknown_fields: quarantien}\n", "schema_policy.unknown_fields", "unknown policy 'quarantien' (did you mean quarantine?)"],
    ["schema_policy: {evolution: stict}\n", "schema_policy.evolution", "unknown evolution 'stict' (did you mean strict?)"],
    ["source: {topic: x}\n", "source.type", "missing required key 'type'"],
    ["source: {tpye: kafka}\n", "source.tpye", "missing required key 'type' (found 'tpye': did you mean type?)"],
    ["source: kafka\n", "source", 'found "kafka"; expected a mapping'],
    ["service_levels: {freshness: [1]}\n", "service_levels.freshness", "found a list; expected a duration"],
    ["info: [a]\n", "info", "found a list; expected a mapping"],
    ["info: {title: [a]}\n", "info.title", "found a list; expected a string"],
  ];
  for (const [body, path, message] of cases) {
    it(`${path}: ${message}`, () => {
      const ps = problems("dataset: d\n" + body);
      const p = ps.find((x) => x.path === path);
      expect(p, `problems were: ${ps.map((x) => `${x.path}: ${x.message}`).join(" | ")}`).toBeDefined();
      expect(`${p!.message}${p!.expected ? `; expected ${p!.expected}` : ""}`).toContain(message);
      expect(p!.line).toBeGreaterThan(0);
    });
  }

  it("points a misspelt required key at the misspelling", () => {
    const e = first("dataset: d\nmodel:\n  fields:\n    - nmae: order_id\n      type: long\n");
    expect(e.message).toBe(
      "bronze.yaml:4:7 model.fields[0].nmae: missing required key 'name' (found 'nmae': did you mean name?); expected the field's name",
    );
  });

  it("refuses a misspelt dataset instead of deriving another name", () => {
    expect(first("info: {title: Orders}\ndatset: orders\n").message).toBe(
      "bronze.yaml:2:1 datset: missing required key 'dataset' (found 'datset': did you mean dataset?); expected a dataset name (it names the table and the checkpoint key)",
    );
  });

  it("reads an empty dataset as not set: the name is derived, with a warning", () => {
    const c = parseContract('dataset: ""\n', "bronze.yaml");
    expect(c.dataset).toBe("bronze");
    expect(c.warnings.map((w) => w.code)).toContain("derived");
  });
});

describe("field references", () => {
  it("refuses rules on unknown fields, with a suggestion", () => {
    const e = first(BASE + "    - not_null: emial\n    - range: {field: amout, min: 0}\n  dataset_rules:\n    - unique: [order_id, emali]\n");
    expect(e.problems.map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`)).toEqual([
      "14:7 quality.row_rules[1].not_null: 'emial' is not a field of this contract (did you mean email?)",
      "15:15 quality.row_rules[2].range.field: 'amout' is not a field of this contract (did you mean amount?)",
      "17:26 quality.dataset_rules[0].unique[1]: 'emali' is not a field of this contract (did you mean email?)",
    ]);
    expect(e.problems[0]?.expected).toBe("one of the fields under model.fields: order_id, email, amount");
  });

  it("refuses a primary key that is not a field", () => {
    expect(first(BASE + "primary_key: [order_ID, oder_id]\n").message).toMatch(/primary_key\[1\]: 'oder_id' is not a field of this contract \(did you mean order_id\?\)/);
  });

  it("refuses sql rules that name unknown fields or do unsafe things, at the sql key", () => {
    const e = first(BASE + "    - name: r1\n      sql: amout > 0\n    - name: r2\n      sql: \"read_csv('/etc/passwd') IS NOT NULL\"\n");
    expect(e.problems.map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`)).toEqual([
      "15:7 quality.row_rules[1].sql: amout is not a field of this contract (did you mean amount?)",
      expect.stringMatching(/^17:7 quality\.row_rules\[2\]\.sql: function read_csv\(\) is not allowed: it reads files/),
    ]);
    expect(e.problems[0]?.expected).toMatch(/a boolean SQL expression over the contract's fields/);
  });

  it("guards sql in a field's own rules", () => {
    const e = first("dataset: d\nmodel:\n  fields:\n    - name: a\n      type: int\n      rules:\n        - sql: \"a > 0; DROP TABLE t\"\n");
    expect(e.message).toMatch(/^bronze\.yaml:7:11 model\.fields\[0\]\.rules\[0\]\.sql: ';' outside a string literal/);
  });
});

describe("warnings", () => {
  it("refuses a misspelt section: its setting would be lost (materialisation runs as append)", () => {
    const e = first("dataset: d\nprimary_key: [a]\nmodel:\n  fields:\n    - {name: a, type: int}\nmaterialisation:\n  strategy: merge\n");
    expect(e.message).toBe(
      "bronze.yaml:6:1 materialisation: unknown key 'materialisation' in the contract (did you mean materialization?); " +
        "expected materialization, or x-materialisation for a key of another tool",
    );
    expect([e.file, e.line, e.column, e.path]).toEqual(["bronze.yaml", 6, 1, "materialisation"]);
  });

  it("refuses a misspelt field key: requird would leave the field nullable", () => {
    const e = first("dataset: d\nmodel:\n  fields:\n    - name: a\n      type: int\n      requird: true\n");
    expect(e.problems.map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`)).toEqual([
      "6:7 model.fields[0].requird: unknown key 'requird' in a field (did you mean required?)",
    ]);
  });

  it("refuses misspelt keys in every section, each at its position", () => {
    const e = first(
      `dataset: d
model:
  fields:
    - {name: a, type: int, masking: hash}
quality:
  row_rule:
    - not_null: a
  row_rules:
    - regex_match: {field: a, pattern: x, severty: warning}
materialization:
  stratgy: merge
  cluster_by: [a]
quarantine:
  enabeld: false
schema_policy:
  unknown_field: drop
info:
  titel: T
  tableName: t
  cost_center: CC-1
service_levels:
  freshnes: 1h
primay_key: [a]
`,
    );
    expect(e.problems.map((p) => `${p.line} ${p.path}: ${p.message}`)).toEqual([
      "6 quality.row_rule: unknown key 'row_rule' in quality (did you mean row_rules?)",
      "9 quality.row_rules[0].regex_match.severty: unknown key 'severty' in regex_match (did you mean severity?)",
      "11 materialization.stratgy: unknown key 'stratgy' in materialization (did you mean strategy?)",
      "14 quarantine.enabeld: unknown key 'enabeld' in quarantine (did you mean enabled?)",
      "16 schema_policy.unknown_field: unknown key 'unknown_field' in schema_policy (did you mean unknown_fields?)",
      "18 info.titel: unknown key 'titel' in info (did you mean title?)",
      "22 service_levels.freshnes: unknown key 'freshnes' in service_levels (did you mean freshness?)",
      "23 primay_key: unknown key 'primay_key' in the contract (did you mean primary_key?)",
    ]);
  });

  it("warns about unknown keys far from every known one, and still loads", () => {
    const c = parseContract(
      "dataset: d\nmodel:\n  fields:\n    - {name: a, type: int, colour: red}\nsomething_else: 1\n_private: 2\nx-materialisation: 3\ninfo: {cost_center: CC-1}\n",
      "w.yaml",
    );
    expect(c.warnings).toEqual([
      { code: "unknown-key", message: "model.fields[0].colour: unknown key 'colour' in a field is ignored", loc: { file: "w.yaml", line: 4, column: 28, path: "model.fields[0].colour" } },
      { code: "unknown-key", message: "something_else: unknown key 'something_else' in the contract is ignored", loc: { file: "w.yaml", line: 5, column: 1, path: "something_else" } },
    ]);
  });

  it("warns when a field is both required and nullable", () => {
    const c = parseContract("dataset: d\nmodel:\n  fields:\n    - {name: a, type: int, required: true, nullable: true}\n");
    expect(c.warnings[0]).toMatchObject({ code: "suspicious", message: expect.stringContaining("both required and nullable") });
    expect(c.rowRules.map((r) => r.id)).toEqual(["not_null:a"]);
  });

  it("warns about partition columns that are not fields", () => {
    const c = parseContract("dataset: d\nmodel:\n  fields:\n    - {name: day, type: date}\nmaterialization: {partition_by: [dya]}\n");
    expect(c.warnings[0]?.message).toContain("partition column 'dya' is not a field of this contract (did you mean day?)");
  });
});

describe("contracts given as objects", () => {
  it("report problems by key path, without positions", () => {
    let caught: unknown;
    try {
      contractFromObject({ dataset: "d", quality: { row_rules: [{ regex_match: { field: "a", pattern: "(" } }] } });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ContractError);
    const e = caught as ContractError;
    expect(e.line).toBeUndefined();
    expect(e.message).toMatch(/^quality\.row_rules\[0\]\.regex_match\.pattern: invalid regular expression/);
  });
});
