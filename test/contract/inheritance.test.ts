import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ContractError, loadContract, parseContract } from "../../src/contract/index.js";

const REG = join(import.meta.dirname, "fixtures", "registry");
const SHOP = join(REG, "sales", "shop");

async function refusal(p: Promise<unknown>): Promise<ContractError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ContractError) return e;
    throw e;
  }
  throw new Error("expected a ContractError");
}

describe("domain → system → environment → contract", () => {
  it("fills a contract's gaps from its layer's registry defaults", async () => {
    const c = await loadContract(join(SHOP, "contracts", "silver", "orders.yaml"));
    // _domain.yaml materialization._all, then _system.yaml materialization.silver (layer from the contracts: index).
    expect(c.materialization.format).toBe("parquet");
    expect(c.materialization.strategy).toBe("merge");
    // table: "" is not set: the dataset names the table.
    expect(c.materialization.table).toBe("orders");
    // No target path anywhere: the layer's storage path is the lake directory.
    expect(c.materialization.targetPath).toBe("./lake-dev/silver");
    // {quarantine_path} → storage.quarantine_path ← environments.dev.quarantine_root, {domain}, {system}.
    expect(c.quarantine.target).toBe("./q-dev/sales/shop");
    expect(c.quarantine.format).toBe("parquet");
    expect(c.schemaPolicy).toEqual({ evolution: "strict", unknownFields: "quarantine" });
    // Extra keys of the index entry pass through where the contract has none.
    expect(c.trigger).toBe("available_now");
    const messages = c.warnings.map((w) => w.message).join("\n");
    expect(messages).toMatch(/slo is ignored/);
    expect(messages).toMatch(/gold_layer="curated" but _domain\.yaml has gold_layer="gold"/);
    expect(messages).toMatch(/materialization\.target_path is not set; using \{silver_path\}/);
  });

  it("the contract wins over every registry default, and blank values count as not set", async () => {
    const c = await loadContract(join(SHOP, "contracts", "silver", "orders_relaxed.yaml"));
    expect(c.materialization.strategy).toBe("append");
    expect(c.materialization.targetPath).toBe("./lake-dev/silver");
    expect(c.quarantine.target).toBe("./q-dev/sales/shop");
    // unknown_fields from the contract's own schema_policy, evolution from the layer's server default.
    expect(c.schemaPolicy).toEqual({ evolution: "strict", unknownFields: "allow" });
    expect(c.source).toEqual({ type: "file", path: "./lake-dev/landing/orders" });
  });

  it("an unresolved placeholder is an error naming it, the file, the key and how to give it", async () => {
    const e = await refusal(loadContract(join(SHOP, "contracts", "gold", "totals.yaml")));
    const p = e.problems[0]!;
    expect(p.file).toBe(join(SHOP, "_system.yaml"));
    expect(p.path).toBe("materialization.gold.target_path");
    expect(p.line).toBe(19);
    expect(e.message).toMatch(/placeholder \{gold_path\} has no value/);
    expect(e.message).toMatch(/--var gold_path=<value>/);
  });

  it("values given at run time fill placeholders and win over the registry's", async () => {
    const c = await loadContract(join(SHOP, "contracts", "gold", "totals.yaml"), { vars: { gold_path: "/lake/gold" } });
    expect(c.materialization.targetPath).toBe("/lake/gold");
    expect(c.materialization.strategy).toBe("overwrite");
    const o = await loadContract(join(SHOP, "contracts", "silver", "orders.yaml"), { vars: { quarantine_root: "/elsewhere" } });
    expect(o.quarantine.target).toBe("/elsewhere/sales/shop");
  });

  it("an environment value read from an unset variable is no value: the error says which", async () => {
    delete process.env["LAKELOGIC_TEST_UNSET_ROOT"];
    const e = await refusal(loadContract(join(SHOP, "contracts", "silver", "orders_relaxed.yaml"), { environment: "prod" }));
    expect(e.file).toBe(join(SHOP, "contracts", "silver", "orders_relaxed.yaml"));
    expect(e.path).toBe("source.path");
    expect(e.message).toMatch(/\{data_root\} has no value \(environments\.prod\.data_root reads \$\{LAKELOGIC_TEST_UNSET_ROOT\}, which is not set/);
  });

  it("registry files pass the contract's guards (YAML alias expansion)", async () => {
    const e = await refusal(loadContract(join(REG, "bomb", "sys", "c", "contract.yaml")));
    expect(e.file).toBe(join(REG, "bomb", "sys", "_system.yaml"));
    expect(e.message).toMatch(/aliases expand too often/);
  });
});

describe("placeholders without a registry", () => {
  it("resolve from vars; a missing one is an error, never a literal directory name", () => {
    const yaml = 'dataset: d\nmaterialization: {target_path: "{lake}/x"}\n';
    expect(parseContract(yaml, "c.yaml", { vars: { lake: "/data" } }).materialization.targetPath).toBe("/data/x");
    expect(() => parseContract(yaml, "c.yaml")).toThrow(/c\.yaml:2:19 materialization\.target_path: placeholder \{lake\} has no value/);
  });

  it("leave ${ENV} references and {{ templates }} alone", () => {
    const c = parseContract('dataset: d\nsource: {type: kafka, password: "${PG_PASSWORD}", subject: "{{ event }}"}\n', "c.yaml");
    expect(c.source).toMatchObject({ password: "${PG_PASSWORD}", subject: "{{ event }}" });
  });
});

describe("blank optional strings are not set", () => {
  it("target_path, table, strategy, format and quarantine.target", () => {
    const c = parseContract('dataset: d\nmaterialization: {target_path: "", table: "", strategy: "", format: ""}\nquarantine: {target: "", format: " "}\n', "c.yaml");
    expect(c.materialization).toMatchObject({ strategy: "append", format: "duckdb", table: "d" });
    expect(c.materialization.targetPath).toBeUndefined();
    expect(c.quarantine.target).toBe("d_quarantine");
  });
});
