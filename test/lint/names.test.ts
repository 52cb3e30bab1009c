import { describe, expect, it } from "vitest";
import { lintText, type Finding } from "../../src/lint/index.js";

const lint = (yaml: string): Finding[] => lintText(yaml, "c.yaml");
const only = (yaml: string, id: string): Finding[] => lint(yaml).filter((f) => f.id === id);
const lineOf = (yaml: string, prefix: string): number => yaml.split("\n").findIndex((l) => l.trimStart().startsWith(prefix)) + 1;

function contract(parts: { dataset?: string; info?: string; materialization?: string; quarantine?: string }): string {
  const lines = ["version: 1.0.0", `dataset: ${parts.dataset ?? "orders"}`];
  if (parts.info) lines.push("info:", parts.info);
  lines.push("primary_key: [order_id]", "model:", "  fields:", "    - { name: order_id, type: string, required: true }");
  lines.push("materialization:", "  strategy: merge");
  if (parts.materialization) lines.push(parts.materialization);
  if (parts.quarantine) lines.push("quarantine:", parts.quarantine);
  return lines.join("\n") + "\n";
}

describe("NAME-001 a table name the lake refuses", () => {
  const bad = ["../../x", "a/b", "a\\\\b", "..", ".", "_lakelogic_checkpoints", "_lakelogic_other", "lakelogic_stage", "LakeLogic_Stage"];
  for (const table of bad) {
    it(`flags materialization.table: ${table}`, () => {
      const yaml = contract({ materialization: `  table: "${table}"` });
      const found = only(yaml, "NAME-001");
      expect(found).toHaveLength(1);
      expect(found[0]!.severity).toBe("critical");
      expect(found[0]!.path).toBe("materialization.table");
      expect(found[0]!.line).toBe(lineOf(yaml, "table:"));
      expect(found[0]!.message).toContain(JSON.parse(`"${table}"`) as string);
    });
  }

  it("flags the dataset when it names the table, and info.table_name when that does", () => {
    const byDataset = contract({ dataset: '"../orders"' });
    expect(only(byDataset, "NAME-001").map((f) => f.path)).toEqual(["dataset"]);
    const byInfo = contract({ info: "  table_name: ../orders" });
    expect(only(byInfo, "NAME-001").map((f) => f.path)).toEqual(["info.table_name"]);
    // materialization.table wins over both, so a good one there silences them.
    const overridden = contract({ dataset: '"../orders"', materialization: "  table: orders" });
    expect(only(overridden, "NAME-001")).toEqual([]);
  });

  it("accepts ordinary names", () => {
    for (const table of ["orders", "Orders_2024", "lakelogic_orders", "orders.v2"]) {
      expect(only(contract({ materialization: `  table: ${table}` }), "NAME-001")).toEqual([]);
    }
  });
});

describe("NAME-002 a quarantine target that clashes with a table the lake uses", () => {
  const clashes: Array<[string, string]> = [
    ["the checkpoint table", "_lakelogic_checkpoints"],
    ["a reserved _lakelogic name", "_lakelogic_quarantine"],
    ["the DuckDB writer's staging table", "lakelogic_stage"],
    ["the data table", "orders"],
    ["the data table in other case", "ORDERS"],
    ["a parent directory", ".."],
  ];
  for (const [what, target] of clashes) {
    it(`flags ${what} (${target})`, () => {
      const yaml = contract({ quarantine: `  target: "${target}"` });
      const found = only(yaml, "NAME-002");
      expect(found).toHaveLength(1);
      expect(found[0]!.severity).toBe("critical");
      expect(found[0]!.path).toBe("quarantine.target");
      expect(found[0]!.line).toBe(lineOf(yaml, "target:"));
      expect(found[0]!.message).toContain(target);
    });
  }

  it("reads quarantine.table and quarantine.location as the loader does", () => {
    expect(only(contract({ quarantine: "  table: _lakelogic_checkpoints" }), "NAME-002").map((f) => f.path)).toEqual([
      "quarantine.table",
    ]);
    expect(only(contract({ quarantine: "  location: orders" }), "NAME-002").map((f) => f.path)).toEqual([
      "quarantine.location",
    ]);
  });

  it("compares with the table the contract names, not with the dataset", () => {
    const yaml = contract({ materialization: "  table: orders_v2", quarantine: "  target: orders_v2" });
    expect(only(yaml, "NAME-002")).toHaveLength(1);
    expect(only(contract({ materialization: "  table: orders_v2", quarantine: "  target: orders" }), "NAME-002")).toEqual([]);
  });

  it("does not flag a target with a / (a path), nor ordinary names", () => {
    for (const target of ["bad/orders", "../quarantine/orders", "orders_quarantine", "orders_bad"]) {
      expect(only(contract({ quarantine: `  target: "${target}"` }), "NAME-002")).toEqual([]);
    }
  });

  it("leaves a bad table to NAME-001 only", () => {
    const yaml = contract({ materialization: '  table: "../x"' });
    expect(lint(yaml).map((f) => f.id)).toEqual(["NAME-001"]);
  });
});

describe("the DuckDB staging table name", () => {
  it("is taken only in a DuckDB lake", () => {
    const parquet = "  format: parquet\n  table: lakelogic_stage";
    expect(only(contract({ materialization: parquet }), "NAME-001")).toEqual([]);
    expect(only(contract({ materialization: "  format: parquet", quarantine: "  target: lakelogic_stage" }), "NAME-002")).toEqual([]);
    expect(only(contract({ materialization: "  format: DuckDB\n  table: lakelogic_stage" }), "NAME-001")).toHaveLength(1);
  });
});
