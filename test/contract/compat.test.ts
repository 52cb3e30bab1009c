import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ContractError, defaultCheckpointKey, loadContract, parseContract } from "../../src/contract/index.js";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));
const SILVER = join(FIXTURES, "silver_shop_orders.yaml");

describe("a contract written for the Python original", () => {
  it("loads unchanged, reading what this runtime uses and warning about what it does not do", async () => {
    const c = await loadContract(SILVER);
    expect(c.file).toBe(SILVER);
    expect(c.version).toBe("1.0.0");
    expect(c.dataset).toBe("orders");
    expect(defaultCheckpointKey(c)).toBe("stream::orders");
    expect(c.primaryKey).toEqual(["order_id"]);
    expect(c.info).toMatchObject({ title: "Silver Shop Orders", owner: "orders-team@example.com", domain: "sales", system: "shop", targetLayer: "silver", tableName: "silver_shop_orders", version: "2.3.0" });

    expect(c.fields.map((f) => [f.name, f.type])).toEqual([
      ["order_id", "integer"],
      ["order_number", "string"],
      ["customer_id", "integer"],
      ["email", "string"],
      ["status", "string"],
      ["amount", "decimal"],
      ["currency", "string"],
      ["placed_at", "timestamp"],
      ["shipped_at", "timestamp"],
      ["is_gift", "boolean"],
      ["items", "json"],
      ["updated_at", "timestamp"],
    ]);
    expect(c.fields.find((f) => f.name === "amount")).toMatchObject({ precision: 12, scale: 2, min: 0, max: 1000000 });
    expect(c.fields.find((f) => f.name === "email")).toMatchObject({ pii: true, maxLength: 320 });

    expect(c.rowRules.map((r) => `${r.id} ${r.kind} ${r.severity} ${r.origin}`)).toEqual([
      "not_null:order_id not_null error required",
      "range:order_id range error field",
      "not_null:order_number not_null error required",
      "order_number_shape sql error field",
      "not_null:customer_id not_null error required",
      "max_length:email sql error field",
      "accepted_values:status accepted_values error field",
      "not_null:placed_at not_null error required",
      "not_null:email not_null warning declared",
      "not_null:currency not_null warning declared",
      "accepted_values:currency accepted_values error declared",
      "regex_match:email regex_match error declared",
      // The declared range on amount replaces the one the field's own min/max would add.
      "range:amount range error declared",
      "shipped_after_placed sql error declared",
      "no_test_emails sql info declared",
    ]);
    expect(c.datasetRules.map((r) => `${r.id} ${r.kind} ${r.severity}`)).toEqual([
      "unique:order_id unique error",
      "order_number_unique unique warning",
      "null_ratio:email null_ratio error",
      "row_count_between row_count_between error",
      "paid_share sql error",
    ]);

    expect(c.materialization).toEqual({
      strategy: "merge",
      strategyDeclared: true,
      format: "parquet",
      targetPath: "lakehouse/silver/orders",
      table: "silver_shop_orders",
      partitionBy: ["placed_at"],
    });
    expect(c.quarantine).toEqual({ enabled: true, target: "lakehouse/quarantine/orders", format: "parquet", includeErrorReason: true });
    expect(c.schemaPolicy).toEqual({ evolution: "compatible", unknownFields: "quarantine" });
    expect(c.source).toMatchObject({ type: "kafka", topic: "shop.orders.v1", consumer_group: "lakelogic_silver_orders" });
    expect(c.trigger).toBe("available_now");
    expect(c.serviceLevels).toEqual({ freshness: "15m", availability: 99.9 });

    // Nothing is unknown; two things are written for the original but not done here.
    expect(c.warnings.map((w) => `${w.code} ${w.loc?.path}`)).toEqual(["unsupported transformations", "unsupported quality.row_rules[6]"]);
    // raw is the document exactly as parsed.
    expect(c.raw).toEqual(parse(readFileSync(SILVER, "utf8")));
  });

  it("accepts field-level primary_key: true when it agrees with the top-level primary_key", () => {
    const c = parseContract(
      "dataset: d\nprimary_key: [id]\nmodel:\n  fields:\n    - {name: id, type: long, required: true, primary_key: true}\n",
    );
    expect(c.primaryKey).toEqual(["id"]);
    expect(c.warnings).toEqual([]);
  });

  it("accepts the original's rule extras: phase and category", () => {
    const c = parseContract(
      "dataset: d\nquality:\n  row_rules:\n    - {name: late, sql: a > 1, phase: post, category: Correctness}\n",
    );
    expect(c.rowRules[0]).toMatchObject({ id: "late", category: "correctness" });
    expect(c.warnings).toEqual([]);
  });

  it("reads `on`, `yes` and `off` as strings, as the original does", () => {
    const c = parseContract("dataset: d\ntransformations:\n  - deduplicate: {on: [id]}\nmetadata: {flag: yes, mode: off}\n");
    expect(c.raw).toMatchObject({ transformations: [{ deduplicate: { on: ["id"] } }], metadata: { flag: "yes", mode: "off" } });
  });
});

describe("loadContract inputs", () => {
  const dir = mkdtempSync(join(tmpdir(), "contract-test-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("loads a .yml path and derives the dataset from info.title", async () => {
    const c = await loadContract(join(FIXTURES, "bronze_minimal.yml"));
    expect(c.dataset).toBe("bronze_clicks");
    expect(c.source).toEqual({ type: "sse", url: "http://127.0.0.1:8080/stream" });
    expect(c.rowRules.map((r) => r.id)).toEqual(["not_null:id"]);
  });

  it("resolves a relative path against baseDir", async () => {
    const c = await loadContract("bronze_minimal.yml", { baseDir: FIXTURES });
    expect(c.dataset).toBe("bronze_clicks");
    expect(c.file).toBe(join(FIXTURES, "bronze_minimal.yml"));
  });

  it("resolves a relative path against the working directory by default", async () => {
    const rel = relative(process.cwd(), SILVER);
    expect((await loadContract(rel)).file).toBe(rel);
  });

  it("treats an existing file without a YAML extension as a path", async () => {
    const p = join(dir, "contract.txt");
    writeFileSync(p, "dataset: from_txt\n");
    expect((await loadContract(p)).dataset).toBe("from_txt");
  });

  it("treats any other string as YAML text", async () => {
    const c = await loadContract("dataset: inline\nmaterialization: {strategy: overwrite}\n");
    expect(c.dataset).toBe("inline");
    expect(c.file).toBeUndefined();
    expect(c.materialization.strategy).toBe("overwrite");
  });

  it("reports text-only problems at <contract>:line:col", async () => {
    await expect(loadContract("dataset: d\nmaterialization: {strategy: replace}\n")).rejects.toThrow(
      /^<contract>:2:19 materialization\.strategy: unknown strategy 'replace'/,
    );
  });

  it("runs the Python package's upsert as merge, and says so", async () => {
    const c = await loadContract("dataset: d\nprimary_key: [id]\nmaterialization: {strategy: upsert}\n");
    expect(c.materialization.strategy).toBe("merge");
    expect(c.warnings).toContainEqual(expect.objectContaining({ code: "derived", message: expect.stringMatching(/upsert runs as merge/) }));
  });

  it("reads one line of YAML that happens to end in .yaml as text", async () => {
    expect((await loadContract("dataset: orders.yaml")).dataset).toBe("orders.yaml");
  });

  it("accepts a plain object", async () => {
    const c = await loadContract({ dataset: "obj", primary_key: "id", model: { fields: [{ name: "id", type: "int", required: true }] } });
    expect(c.dataset).toBe("obj");
    expect(c.primaryKey).toEqual(["id"]);
    expect(c.rowRules.map((r) => r.id)).toEqual(["not_null:id"]);
    expect(c.fields[0]?.loc).toBeUndefined();
  });

  it("reports a missing file as a ContractError naming it", async () => {
    const missing = join(dir, "nope.yaml");
    const err = await loadContract(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContractError);
    expect((err as ContractError).message).toBe(`${missing} contract file not found; expected a readable YAML file`);
    expect((err as ContractError).file).toBe(missing);
  });

  it("reports problems in a file with its path, line and column", async () => {
    const p = join(dir, "bronze.yaml");
    writeFileSync(p, "dataset: d\nquality:\n  row_rules:\n    - regex_match:\n        field: email\n        pattern: '[a-'\n");
    const err = (await loadContract(p).catch((e: unknown) => e)) as ContractError;
    expect(err).toBeInstanceOf(ContractError);
    expect(err.message).toMatch(new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:6:9 quality\\.row_rules\\[0\\]\\.regex_match\\.pattern: invalid regular expression`));
    expect([err.file, err.line, err.column, err.path]).toEqual([p, 6, 9, "quality.row_rules[0].regex_match.pattern"]);
  });

  it("rejects input that is neither a string nor an object", async () => {
    await expect(loadContract([] as unknown as Record<string, unknown>)).rejects.toThrow(ContractError);
  });
});
