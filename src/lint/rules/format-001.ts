import { LAKE_FORMATS } from "../../lake/config.js";
import type { ContractRule, RuleHit } from "../types.js";

export const format001: ContractRule = {
  id: "FORMAT-001",
  severity: "critical",
  name: "UnwritableFormat",
  title: "Table format no engine here writes",
  description:
    "`materialization.format` names a format this runtime's engines do not write (`delta`, `iceberg`, `csv`, …). " +
    "The run refuses it rather than write the rows as DuckDB or Parquet, where the table's readers would not look.",
  fix: "Write `materialization.format: duckdb` or `parquet` for this runtime.",
  tags: ["materialization"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  format: delta
`,
    good: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  format: parquet
`,
  },
  check(contract) {
    const hits: RuleHit[] = [];
    const format = contract.get(["materialization", "format"]);
    if (typeof format !== "string" || format.trim() === "") return hits;
    if (LAKE_FORMATS.includes(format.trim().toLowerCase())) return hits;
    hits.push({
      message: `materialization.format "${format}" is not written by this runtime's engines (${LAKE_FORMATS.join(", ")}): the run refuses it.`,
      suggestion: "Use duckdb or parquet.",
      path: ["materialization", "format"],
    });
    return hits;
  },
};
