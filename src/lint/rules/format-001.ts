import { LAKE_FORMATS } from "../../lake/config.js";
import type { ContractRule, RuleHit } from "../types.js";

export const format001: ContractRule = {
  id: "FORMAT-001",
  severity: "critical",
  name: "UnwritableFormat",
  title: "Table format no engine here writes",
  description:
    "`materialization.format` names a format no engine here writes (`iceberg`, `csv`, …): StreamSink and " +
    "the Temporal runtime write `duckdb` and `parquet`, SparkStreamSink writes `delta`. " +
    "The run refuses it rather than write the rows as another format, where the table's readers would not look.",
  fix: "Write `materialization.format: duckdb` or `parquet` (StreamSink, Temporal), or `delta` (SparkStreamSink).",
  tags: ["materialization"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  format: iceberg
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
    const name = format.trim().toLowerCase();
    // delta is Spark's (SparkStreamSink, docs/spark.md); StreamSink refuses it when the lake opens, naming Spark.
    if (LAKE_FORMATS.includes(name) || name === "delta") return hits;
    hits.push({
      message: `materialization.format "${format}" is written by no engine here (${LAKE_FORMATS.join(", ")}, or delta on Spark): the run refuses it.`,
      suggestion: "Use duckdb or parquet, or delta with SparkStreamSink.",
      path: ["materialization", "format"],
    });
    return hits;
  },
};
