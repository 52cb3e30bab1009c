import { describe, expect, it } from "vitest";
import { ContractError, defaultCheckpointKey, parseContract, type Contract, type RowRule } from "../../src/contract/index.js";

function load(yaml: string): Contract {
  return parseContract(yaml, "c.yaml");
}

function ids(c: Contract): string[] {
  return c.rowRules.map((r) => r.id);
}

function rule(c: Contract, id: string): RowRule {
  const r = c.rowRules.find((x) => x.id === id);
  if (!r) throw new Error(`no rule ${id}; have ${ids(c).join(", ")}`);
  return r;
}

const FIELDS = `
model:
  fields:
    - {name: order_id, type: long}
    - {name: status, type: string}
    - {name: email, type: string}
    - {name: amount, type: double}
    - {name: created_at, type: timestamp}
`;

describe("top-level keys", () => {
  it("reads version, info, dataset and primary_key", () => {
    const c = load(`
version: 1.2.0
info:
  title: Bronze Orders
  owner: data-team@example.com
  domain: sales
  system: shop
  target_layer: bronze
  table_name: bronze_shop_orders
  status: production
  contact: {email: a@example.com}
dataset: orders
primary_key: [order_id, line_no]
`);
    expect(c.version).toBe("1.2.0");
    expect(c.info).toEqual({
      title: "Bronze Orders",
      owner: "data-team@example.com",
      domain: "sales",
      system: "shop",
      targetLayer: "bronze",
      tableName: "bronze_shop_orders",
      status: "production",
      contact: { email: "a@example.com" },
    });
    expect(c.dataset).toBe("orders");
    expect(c.primaryKey).toEqual(["order_id", "line_no"]);
    expect(c.warnings).toEqual([]);
    expect(c.file).toBe("c.yaml");
    expect(c.raw["dataset"]).toBe("orders");
  });

  it("keeps a numeric version as written", () => {
    expect(load("version: 1.0\ndataset: d\n").version).toBe("1.0");
    expect(load("version: 2\ndataset: d\n").version).toBe("2");
  });

  it("accepts primary_key as a single string", () => {
    expect(load("dataset: d\nprimary_key: order_id\n").primaryKey).toEqual(["order_id"]);
  });

  it("resolves primary_key to the declared spelling of a field", () => {
    const c = load(`dataset: d\nprimary_key: [ORDER_ID]\n${FIELDS}`);
    expect(c.primaryKey).toEqual(["order_id"]);
  });

  it("reads the layer from a top-level tier when info has none", () => {
    expect(load("dataset: d\ntier: silver\n").info.targetLayer).toBe("silver");
  });

  it("has sensible defaults for an almost empty contract", () => {
    const c = load("dataset: events\n");
    expect(c.fields).toEqual([]);
    expect(c.rowRules).toEqual([]);
    expect(c.datasetRules).toEqual([]);
    expect(c.primaryKey).toEqual([]);
    expect(c.materialization).toEqual({ strategy: "append", strategyDeclared: false, format: "duckdb", table: "events", partitionBy: [] });
    expect(c.quarantine).toEqual({ enabled: true, target: "events_quarantine", format: "duckdb", includeErrorReason: true });
    expect(c.schemaPolicy).toEqual({ evolution: "allow", unknownFields: "allow" });
    expect(c.source).toBeUndefined();
    expect(c.trigger).toBeUndefined();
    expect(c.serviceLevels).toBeUndefined();
    expect(c.version).toBeUndefined();
    expect(defaultCheckpointKey(c)).toBe("stream::events");
  });

  it("derives the dataset from info.title, then from the file name, with a warning", () => {
    const fromTitle = load("info: {title: Silver Customer Master}\n");
    expect(fromTitle.dataset).toBe("silver_customer_master");
    expect(fromTitle.warnings).toEqual([expect.objectContaining({ code: "derived", message: expect.stringContaining("'silver_customer_master' from info.title") })]);
    const fromFile = parseContract("version: 1\n", "contracts/Bronze-Clicks.yaml");
    expect(fromFile.dataset).toBe("bronze_clicks");
    expect(defaultCheckpointKey(fromFile)).toBe("stream::bronze_clicks");
  });

  it("requires a dataset when nothing can name it", () => {
    expect(() => parseContract("version: 1\n")).toThrow(/missing required key 'dataset'/);
  });
});

describe("model.fields", () => {
  it("maps every type alias to its canonical type", () => {
    const aliases: Record<string, string[]> = {
      string: ["string", "str", "varchar", "text", "VARCHAR(255)", "char", "uuid"],
      integer: ["int", "integer", "long", "bigint", "int64", "int32", "smallint", "tinyint", "short", "byte"],
      double: ["double", "float", "float64", "float32", "real", "number", "Double Precision"],
      decimal: ["decimal", "numeric", "decimal(12,2)", "NUMERIC(10, 0)", "decimal(5)"],
      boolean: ["boolean", "bool"],
      date: ["date"],
      timestamp: ["timestamp", "datetime", "timestamp_ntz", "timestamptz", "timestamp_tz", "TIMESTAMP"],
      json: ["json", "struct", "object", "array", "map", "list", "variant", "array<string>", "struct<a: int, b: string>"],
    };
    for (const [canonical, spellings] of Object.entries(aliases)) {
      const yaml = `dataset: d\nmodel:\n  fields:\n${spellings.map((s, i) => `    - {name: f${i}, type: "${s}"}`).join("\n")}\n`;
      const c = load(yaml);
      expect(c.fields.map((f) => f.type), canonical).toEqual(spellings.map(() => canonical));
      expect(c.fields.map((f) => f.declaredType)).toEqual(spellings);
    }
  });

  it("keeps decimal precision and scale, defaulting to 38/9", () => {
    const c = load(`dataset: d\nmodel:\n  fields:\n    - {name: a, type: "decimal(12,2)"}\n    - {name: b, type: decimal}\n    - {name: c, type: "numeric(7)"}\n`);
    expect(c.fields.map((f) => [f.precision, f.scale])).toEqual([[12, 2], [38, 9], [7, 0]]);
  });

  it("reads precision and scale written as keys beside type: decimal, and refuses them where they cannot apply", () => {
    const c = load(`dataset: d\nmodel:\n  fields:\n    - {name: a, type: decimal, precision: 38, scale: 0}\n    - {name: b, type: numeric, scale: 2}\n`);
    expect(c.fields.map((f) => [f.precision, f.scale])).toEqual([[38, 0], [38, 2]]);
    expect(c.warnings).toEqual([]);
    expect(() => load(`dataset: d\nmodel:\n  fields:\n    - {name: a, type: "decimal(12,2)", scale: 0}\n`)).toThrow(/already gives the precision and scale/);
    expect(() => load(`dataset: d\nmodel:\n  fields:\n    - {name: a, type: string, precision: 10}\n`)).toThrow(/only a decimal field has a precision and scale/);
    expect(() => load(`dataset: d\nmodel:\n  fields:\n    - {name: a, type: decimal, precision: 10, scale: 12}\n`)).toThrow(/scale 12 is larger than its precision 10/);
    expect(() => load(`dataset: d\nmodel:\n  fields:\n    - {name: a, type: decimal, precision: 2.5}\n`)).toThrow(/precision/);
  });

  it("carries binary columns as strings with a warning", () => {
    const c = load("dataset: d\nmodel:\n  fields:\n    - {name: blob, type: binary}\n");
    expect(c.fields[0]?.type).toBe("string");
    expect(c.warnings[0]?.code).toBe("unsupported");
  });

  it("reads required, nullable, pii, description, aliases and constraints", () => {
    const c = load(`
dataset: d
model:
  fields:
    - name: customer_id
      type: long
      required: true
      pii: false
      description: Unique customer identifier
    - name: email
      type: string
      pii: true
      aliases: [e_mail, mail]
      max_length: 320
    - name: phone
      type: string
      aliases: telephone
    - name: age
      type: integer
      min: 18
      max: 120
      nullable: false
    - name: tier
      type: string
      accepted_values: [gold, silver]
`);
    const [id, email, phone, age, tier] = c.fields;
    expect(id).toMatchObject({ name: "customer_id", type: "integer", declaredType: "long", required: true, nullable: false, pii: false, description: "Unique customer identifier", aliases: [] });
    expect(id?.loc).toEqual({ file: "c.yaml", line: 5, column: 7, path: "model.fields[0]" });
    expect(email).toMatchObject({ required: false, nullable: true, pii: true, aliases: ["e_mail", "mail"], maxLength: 320 });
    expect(phone?.aliases).toEqual(["telephone"]);
    expect(age).toMatchObject({ required: false, nullable: false, min: 18, max: 120 });
    expect(tier?.acceptedValues).toEqual(["gold", "silver"]);
  });

  it("accepts the original's boolean spellings", () => {
    const c = load("dataset: d\nmodel:\n  fields:\n    - {name: a, type: int, required: 'yes', pii: 'off'}\n");
    expect(c.fields[0]).toMatchObject({ required: true, pii: false });
  });

  it("may be absent, or have no fields", () => {
    expect(load("dataset: d\nmodel: {}\n").fields).toEqual([]);
    expect(load("dataset: d\nmodel:\n  fields: []\n").fields).toEqual([]);
  });
});

describe("implicit rules from field declarations", () => {
  const yaml = `
dataset: d
model:
  fields:
    - {name: order_id, type: long, required: true}
    - {name: status, type: string, accepted_values: [NEW, PAID]}
    - {name: amount, type: double, min: 0, max: 1000}
    - {name: shipped_on, type: date, min: "2020-01-01"}
    - {name: note, type: string, max_length: 10}
    - {name: code, type: string, nullable: false}
`;

  it("adds not_null, accepted_values, range and max_length rules with derived ids", () => {
    const c = load(yaml);
    expect(ids(c)).toEqual(["not_null:order_id", "accepted_values:status", "range:amount", "range:shipped_on", "max_length:note", "not_null:code"]);
    expect(rule(c, "not_null:order_id")).toMatchObject({ kind: "not_null", field: "order_id", severity: "error", origin: "required", category: "completeness" });
    expect(rule(c, "accepted_values:status")).toMatchObject({ kind: "accepted_values", field: "status", values: ["NEW", "PAID"], origin: "field" });
    expect(rule(c, "range:amount")).toMatchObject({ kind: "range", field: "amount", min: 0, max: 1000, inclusive: true, origin: "field" });
    // Date bounds (allowed by the original) cannot be a numeric range: they become a guarded expression.
    expect(rule(c, "range:shipped_on")).toMatchObject({ kind: "sql", sql: `"shipped_on" >= '2020-01-01'` });
    expect(rule(c, "max_length:note")).toMatchObject({ kind: "sql", sql: `"note" IS NULL OR length("note") <= 10` });
    expect(rule(c, "not_null:code").description).toBe("code is not nullable");
  });

  it("quality.enforce_required: false turns off only the not-null rules", () => {
    const c = load(yaml + "quality:\n  enforce_required: false\n");
    expect(ids(c)).toEqual(["accepted_values:status", "range:amount", "range:shipped_on", "max_length:note"]);
  });

  it("does not duplicate a check the author already wrote", () => {
    const c = load(
      yaml +
        `quality:
  row_rules:
    - not_null: {field: order_id, name: order_id_present, severity: warning}
    - accepted_values: {field: status, values: [NEW]}
    - range: {field: amount, min: 1}
    - name: code_present
      sql: code IS NOT NULL
`,
    );
    expect(ids(c)).toEqual(["range:shipped_on", "max_length:note", "order_id_present", "accepted_values:status", "range:amount", "code_present"]);
    expect(rule(c, "accepted_values:status")).toMatchObject({ values: ["NEW"], origin: "declared" });
  });

  it("a named range with date bounds also covers the field's own min/max", () => {
    const c = load(`dataset: d\nmodel:\n  fields:\n    - {name: day, type: date, min: "2000-01-01"}\nquality:\n  row_rules:\n    - range: {field: day, min: "2010-01-01", name: recent}\n`);
    expect(ids(c)).toEqual(["recent"]);
  });

  it("reads a field's own rules, defaulting their field to the enclosing one", () => {
    const c = load(`
dataset: d
model:
  fields:
    - name: customer_id
      type: long
      rules:
        - name: customer_id_positive
          sql: customer_id > 0
          category: correctness
        - sql: customer_id < 1000000
        - not_null: true
          severity: warning
        - accepted_values: [1, 2, 3]
        - regex_match: {pattern: "^[0-9]+$"}
`);
    expect(ids(c)).toEqual(["customer_id_positive", "sql:customer_id:1", "not_null:customer_id", "accepted_values:customer_id", "regex_match:customer_id"]);
    expect(c.rowRules.every((r) => r.origin === "field")).toBe(true);
    expect(rule(c, "customer_id_positive").category).toBe("correctness");
    expect(rule(c, "not_null:customer_id").severity).toBe("warning");
  });
});

describe("quality.row_rules", () => {
  it("reads sql rules with name, severity, category and description", () => {
    const c = load(`dataset: d\n${FIELDS}quality:
  row_rules:
    - name: email_domain_valid
      sql: "email NOT LIKE '%@temp-mail.%'"
      severity: warning
      category: Validity
      description: no disposable addresses
    - sql: amount > 0
    - sql: amount < 100
      severity: INFO
`);
    expect(c.rowRules).toEqual([
      {
        id: "email_domain_valid",
        kind: "sql",
        sql: "email NOT LIKE '%@temp-mail.%'",
        severity: "warning",
        category: "validity",
        description: "no disposable addresses",
        origin: "declared",
        loc: { file: "c.yaml", line: 13, column: 7, path: "quality.row_rules[0].sql" },
      },
      expect.objectContaining({ id: "sql:1", sql: "amount > 0", severity: "error" }),
      expect.objectContaining({ id: "sql:2", severity: "info" }),
    ]);
  });

  it("reads every not_null form", () => {
    const c = load(`dataset: d\n${FIELDS}quality:
  row_rules:
    - not_null: email
    - not_null: {field: order_id, name: order_id_required, category: completeness, description: must be there, severity: error}
    - not_null:
        fields: [status, created_at]
        severity: warning
    - not_null: [amount]
    - not_null:
        columns: [EMAIL]
        name: email_again
`);
    expect(c.rowRules.map((r) => [r.id, r.kind === "not_null" ? r.field : "", r.severity])).toEqual([
      ["not_null:email", "email", "error"],
      ["order_id_required", "order_id", "error"],
      ["not_null:status", "status", "warning"],
      ["not_null:created_at", "created_at", "warning"],
      ["not_null:amount", "amount", "error"],
      ["email_again", "email", "error"],
    ]);
    expect(rule(c, "order_id_required")).toMatchObject({ category: "completeness", description: "must be there" });
  });

  it("suffixes a shared name with the field when one not_null names several fields", () => {
    const c = load(`dataset: d\n${FIELDS}quality:\n  row_rules:\n    - not_null: {fields: [status, email], name: contact}\n`);
    expect(ids(c)).toEqual(["contact:status", "contact:email"]);
  });

  it("reads accepted_values, regex_match and range", () => {
    const c = load(`dataset: d\n${FIELDS}quality:
  row_rules:
    - accepted_values: {field: status, values: [ACTIVE, 1, true]}
    - regex_match:
        field: email
        pattern: "^[^@]+@[^@]+\\\\.[^@]+$"
        category: validity
    - range: {field: amount, min: 18, max: 120, inclusive: false}
    - range: {column: order_id, min: 1}
    - range: {field: created_at, min: "2020-01-01", max: "2030-01-01", inclusive: false}
    - accepted_values: {field: email, values: [a], name: only_a}
      severity: warning
`);
    expect(c.rowRules.map(({ loc: _loc, ...r }) => r)).toEqual([
      { id: "accepted_values:status", kind: "accepted_values", field: "status", values: ["ACTIVE", 1, true], severity: "error", origin: "declared" },
      { id: "regex_match:email", kind: "regex_match", field: "email", pattern: "^[^@]+@[^@]+\\.[^@]+$", severity: "error", category: "validity", origin: "declared" },
      { id: "range:amount", kind: "range", field: "amount", min: 18, max: 120, inclusive: false, severity: "error", origin: "declared" },
      { id: "range:order_id", kind: "range", field: "order_id", min: 1, inclusive: true, severity: "error", origin: "declared" },
      { id: "range:created_at", kind: "sql", sql: `"created_at" > '2020-01-01' AND "created_at" < '2030-01-01'`, severity: "error", origin: "declared" },
      { id: "only_a", kind: "accepted_values", field: "email", values: ["a"], severity: "warning", origin: "declared" },
    ]);
  });

  it("reads accepted_values keyed by its field: {status: [values]}", () => {
    const c = load(`dataset: d\n${FIELDS}quality:\n  row_rules:\n    - accepted_values:\n        STATUS: [NEW, PAID]\n        severity: warning\n`);
    expect(c.rowRules.map(({ loc: _loc, ...r }) => r)).toEqual([
      { id: "accepted_values:status", kind: "accepted_values", field: "status", values: ["NEW", "PAID"], severity: "warning", origin: "declared" },
    ]);
    // A field the contract lacks is still refused, by name.
    expect(() => load(`dataset: d\n${FIELDS}quality:\n  row_rules:\n    - accepted_values: {currency: [GBP]}\n`)).toThrow(/currency/);
  });

  it("accepts labels beside the kind as well as inside it (inside wins)", () => {
    const c = load(`dataset: d\n${FIELDS}quality:\n  row_rules:\n    - regex_match: {field: email, pattern: "@", severity: info}\n      name: has_at\n      severity: warning\n`);
    expect(c.rowRules[0]).toMatchObject({ id: "has_at", severity: "info" });
  });

  it("resolves rule fields case-insensitively to the declared spelling", () => {
    const c = load(`dataset: d\n${FIELDS}quality:\n  row_rules:\n    - not_null: EMAIL\n`);
    expect(c.rowRules[0]).toMatchObject({ id: "not_null:email", field: "email" });
  });

  it("does not check rule fields when the contract declares none", () => {
    const c = load("dataset: d\nquality:\n  row_rules:\n    - not_null: anything\n    - sql: whatever > 1\n");
    expect(ids(c)).toEqual(["not_null:anything", "sql:1"]);
  });

  it("accepts RE2-only pattern syntax: named groups and inline flags", () => {
    const c = load(`dataset: d\nquality:\n  row_rules:\n    - regex_match: {field: a, pattern: "(?i)^(?P<user>[a-z]+)@"}\n`);
    expect(c.rowRules[0]).toMatchObject({ kind: "regex_match", pattern: "(?i)^(?P<user>[a-z]+)@" });
  });
});

describe("quality.dataset_rules", () => {
  it("reads unique, null_ratio and row_count_between in all forms", () => {
    const c = load(`dataset: d\n${FIELDS}quality:
  dataset_rules:
    - unique: order_id
    - unique: [order_id, created_at]
    - unique: {field: email, name: email_unique, category: uniqueness, severity: warning}
    - unique: {fields: [status, email]}
      name: status_email
    - null_ratio: {field: email, max: 0.2}
    - null_ratio: {column: status, threshold: 0}
    - row_count_between: {min: 1, max: 10000000}
    - row_count_between: {max: 5, name: small_batch}
`);
    expect(c.datasetRules.map(({ loc: _loc, ...r }) => r)).toEqual([
      { id: "unique:order_id", kind: "unique", fields: ["order_id"], severity: "error", origin: "declared" },
      { id: "unique:order_id,created_at", kind: "unique", fields: ["order_id", "created_at"], severity: "error", origin: "declared" },
      { id: "email_unique", kind: "unique", fields: ["email"], severity: "warning", category: "uniqueness", origin: "declared" },
      { id: "status_email", kind: "unique", fields: ["status", "email"], severity: "error", origin: "declared" },
      { id: "null_ratio:email", kind: "null_ratio", field: "email", max: 0.2, severity: "error", origin: "declared" },
      { id: "null_ratio:status", kind: "null_ratio", field: "status", max: 0, severity: "error", origin: "declared" },
      { id: "row_count_between", kind: "row_count_between", min: 1, max: 10000000, severity: "error", origin: "declared" },
      { id: "small_batch", kind: "row_count_between", max: 5, severity: "error", origin: "declared" },
    ]);
  });

  it("reads a null_ratio above 1 as a percentage, as the original does, with a warning", () => {
    const c = load(`dataset: d\n${FIELDS}quality:\n  dataset_rules:\n    - null_ratio: {field: email, max: 20}\n`);
    expect(c.datasetRules[0]).toMatchObject({ max: 0.2 });
    expect(c.warnings[0]).toMatchObject({ code: "suspicious", message: expect.stringContaining("percentage") });
  });
});

describe("materialization, quarantine, schema policy, source, trigger, service levels", () => {
  it("reads materialization", () => {
    const c = load(`
dataset: orders
materialization:
  strategy: MERGE
  target_path: lake/silver
  format: parquet
  partition_by: order_date
  table: silver_orders
`);
    expect(c.materialization).toEqual({
      strategy: "merge",
      strategyDeclared: true,
      format: "parquet",
      targetPath: "lake/silver",
      table: "silver_orders",
      partitionBy: ["order_date"],
    });
    expect(c.quarantine).toMatchObject({ target: "silver_orders_quarantine", format: "parquet" });
  });

  it("accepts every strategy", () => {
    for (const s of ["append", "merge", "overwrite", "scd2"]) {
      expect(load(`dataset: d\nmaterialization: {strategy: ${s}}\n`).materialization.strategy).toBe(s);
    }
  });

  it("keeps merge without a primary key loadable (lint reports it)", () => {
    const c = load("dataset: d\nmaterialization: {strategy: merge}\n");
    expect(c.materialization.strategy).toBe("merge");
    expect(c.primaryKey).toEqual([]);
  });

  it("names the table after info.table_name when materialization.table is absent", () => {
    expect(load("dataset: d\ninfo: {title: T, table_name: silver_crm_customers}\n").materialization.table).toBe("silver_crm_customers");
  });

  it("loads a format no engine here writes, keeps it as declaredFormat, and warns; delta is a format of its own", () => {
    const c = load("dataset: d\nmaterialization: {strategy: merge, format: iceberg}\nquarantine: {format: json}\n");
    expect(c.materialization).toMatchObject({ format: "duckdb", declaredFormat: "iceberg" });
    expect(c.quarantine).toMatchObject({ format: "duckdb", declaredFormat: "json" });
    expect(c.warnings.map((w) => w.code)).toEqual(["unsupported", "unsupported"]);
    expect(c.warnings[0]?.message).toContain("format 'iceberg' is written by no engine here");
    const delta = load("dataset: d\nmaterialization: {strategy: merge, format: delta}\n");
    expect(delta.materialization).toMatchObject({ format: "delta" });
    expect(delta.materialization.declaredFormat).toBeUndefined();
    expect(delta.warnings).toEqual([]);
  });

  it("reads quarantine", () => {
    const c = load("dataset: d\nquarantine:\n  enabled: false\n  target: bad_rows\n  format: parquet\n  include_error_reason: false\n  write_mode: append\n");
    expect(c.quarantine).toEqual({ enabled: false, target: "bad_rows", format: "parquet", includeErrorReason: false });
    expect(load("dataset: d\nquarantine: false\n").quarantine.enabled).toBe(false);
  });

  it("reads schema_policy, and the original's server-level spellings", () => {
    expect(load("dataset: d\nschema_policy: {evolution: strict, unknown_fields: quarantine}\n").schemaPolicy).toEqual({ evolution: "strict", unknownFields: "quarantine" });
    expect(load("dataset: d\nschema_policy: {unknown_fields: drop}\n").schemaPolicy).toEqual({ evolution: "allow", unknownFields: "drop" });
    expect(load("dataset: d\nserver: {type: local, path: ., schema_evolution: strict}\n").schemaPolicy).toEqual({ evolution: "strict", unknownFields: "quarantine" });
    expect(load("dataset: d\nserver: {type: local, path: ., allow_schema_drift: false}\n").schemaPolicy.unknownFields).toBe("quarantine");
    expect(
      load("dataset: d\nschema_policy: {unknown_fields: allow}\nserver: {type: local, path: ., schema_policy: {unknown_fields: drop}}\n").schemaPolicy.unknownFields,
    ).toBe("drop");
  });

  it("keeps source as written", () => {
    const c = load("dataset: d\nsource:\n  type: kafka\n  topic: orders\n  brokers: [localhost:9092]\n  consumer_group: g\n");
    expect(c.source).toEqual({ type: "kafka", topic: "orders", brokers: ["localhost:9092"], consumer_group: "g" });
  });

  it("finds the trigger at the top level, in source or in materialization, and normalises it", () => {
    expect(load("dataset: d\ntrigger: available_now\n").trigger).toBe("available_now");
    expect(load("dataset: d\ntrigger: AvailableNow\n").trigger).toBe("available_now");
    expect(load("dataset: d\nsource: {type: stream, trigger: continuous}\n").trigger).toBe("continuous");
    expect(load("dataset: d\nmaterialization: {trigger: {mode: microbatch}}\n").trigger).toBe("micro_batch");
    expect(load("dataset: d\ntrigger: {type: processing_time, interval: 10s}\n").trigger).toBe("processing_time");
  });

  it("reads service_levels.freshness as a string or {threshold}", () => {
    expect(load("dataset: d\nservice_levels: {freshness: 15m, availability: 99.9}\n").serviceLevels).toEqual({ freshness: "15m", availability: 99.9 });
    expect(load("dataset: d\nservice_levels:\n  freshness: {threshold: 2h, field: updated_at}\n").serviceLevels).toEqual({ freshness: "2h" });
  });
});

describe("rule ids", () => {
  it("must be unique across row and dataset rules", () => {
    expect(() => load(`dataset: d\nquality:\n  row_rules:\n    - {name: x, not_null: a}\n    - {name: x, not_null: b}\n`)).toThrow(
      /c\.yaml:5:17 quality\.row_rules\[1\]\.not_null: duplicate rule id 'x' \(also used by quality\.row_rules\[0\]\.not_null\)/,
    );
    expect(() => load(`dataset: d\nquality:\n  row_rules:\n    - {name: x, sql: a > 1}\n  dataset_rules:\n    - {unique: a, name: x}\n`)).toThrow(/duplicate rule id 'x'/);
  });

  it("identical rules are one rule, written once or twice, in any shorthand", () => {
    const c = load(`dataset: d\n${FIELDS}quality:\n  row_rules:\n    - not_null: email\n    - not_null: email\n  dataset_rules:\n    - unique: order_id\n    - unique: [order_id]\n`);
    expect(c.rowRules.filter((r) => r.id === "not_null:email")).toHaveLength(1);
    expect(c.datasetRules.map((r) => r.id)).toEqual(["unique:order_id"]);
    // The same name on two different checks is still refused.
    expect(() => load(`dataset: d\n${FIELDS}quality:\n  dataset_rules:\n    - {unique: order_id, name: u}\n    - {unique: email, name: u}\n`)).toThrow(/duplicate rule id 'u'/);
  });

  it("are stable: the same contract yields the same ids", () => {
    const yaml = `dataset: d\n${FIELDS}quality:\n  row_rules:\n    - sql: amount > 0\n    - not_null: email\n`;
    expect(ids(load(yaml))).toEqual(ids(load(yaml)));
    expect(ids(load(yaml))).toEqual(["sql:0", "not_null:email"]);
  });

  it("a ContractError is thrown for problems, never a plain Error", () => {
    expect(() => load("dataset: d\nquality:\n  row_rules:\n    - {name: x, sql: a > 1}\n    - {name: x, sql: a > 2}\n")).toThrow(ContractError);
  });
});
