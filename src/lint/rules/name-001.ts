import { formatPath } from "../../contract/yaml.js";
import { tableNameOf, tableNameProblem, writesDuckDb } from "../lake-names.js";
import type { ContractRule } from "../types.js";

export const name001: ContractRule = {
  id: "NAME-001",
  severity: "critical",
  name: "UnusableTableName",
  title: "Table name the lake refuses",
  description:
    "The table name (`materialization.table`, else `info.table_name`, else `dataset`) is also a " +
    "directory name for Parquet, so the lake accepts only one safe path segment: no `/` or `\\`, " +
    "not `.` or `..`, and nothing starting with `_lakelogic`, which names LakeLogic's own tables " +
    "(the checkpoints). In a DuckDB lake `lakelogic_stage` is also taken: the writer's staging table " +
    "would shadow a table of that name. Such a contract fails when the stream starts, or writes to the wrong table.",
  fix: "Give `materialization.table` a plain name such as `orders` or `orders_v2`.",
  tags: ["materialization", "names"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  table: ../../shared/orders
`,
    good: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  table: orders
`,
  },
  check(contract) {
    const table = tableNameOf(contract);
    if (!table) return [];
    const problem = tableNameProblem(table.value, writesDuckDb(contract));
    if (problem === undefined) return [];
    return [
      {
        message: `${formatPath(table.path)} "${table.value}" names the table, and the lake refuses it: ${problem}.`,
        suggestion: "Use a plain table name (letters, digits, _ or .), e.g. materialization.table: orders.",
        path: table.path,
      },
    ];
  },
};
