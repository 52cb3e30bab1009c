import { formatPath } from "../../contract/yaml.js";
import { quarantineTargetOf, quarantineTargetProblem, tableNameOf, writesDuckDb } from "../lake-names.js";
import type { ContractRule } from "../types.js";

export const name002: ContractRule = {
  id: "NAME-002",
  severity: "critical",
  name: "QuarantineTargetClash",
  title: "Quarantine target clashes with a table the lake uses",
  description:
    "The quarantine target (`quarantine.target`, `table` or `location`) sits beside the data table, " +
    "in the same DuckDB database or lake directory, so it must not be the data table itself (names " +
    "compare without case), a name starting with `_lakelogic` (LakeLogic's own tables, such as " +
    "`_lakelogic_checkpoints`, where `checkpoint: target` keeps the cursors), `lakelogic_stage` in a " +
    "DuckDB lake (the writer's staging table, which would shadow it), or `.` / `..`. A target with a `/` is a " +
    "path and is not judged here.",
  fix: "Name the quarantine after its table, e.g. `orders_quarantine` (the default when no target is given).",
  tags: ["quarantine", "names"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
quarantine:
  target: _lakelogic_checkpoints
`,
    good: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
quarantine:
  target: orders_quarantine
`,
  },
  check(contract) {
    const target = quarantineTargetOf(contract);
    if (!target || target.value.includes("/")) return [];
    const table = tableNameOf(contract)?.value;
    const problem = quarantineTargetProblem(target.value, table, writesDuckDb(contract));
    if (problem === undefined) return [];
    return [
      {
        message: `${formatPath(target.path)} "${target.value}" clashes with a table the lake uses: ${problem}.`,
        suggestion: `Name the quarantine after its table, e.g. ${formatPath(target.path)}: ${table ?? "orders"}_quarantine.`,
        path: target.path,
      },
    ];
  },
};
