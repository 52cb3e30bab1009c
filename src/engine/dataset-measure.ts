/**
 * What each dataset rule measures over a batch's good rows (unique → distinct key count,
 * null_ratio → null count, row_count_between → unused, sql → its query's value), once per engine: as one SQL aggregate
 * over the DuckDB statement's evaluated rows, and as one Polars computation over the good rows.
 */
import type * as PolarsModule from "nodejs-polars";
import { datasetValueSql } from "../contract/sql-bind.js";
import { quoteIdent } from "../util/sql-text.js";
import { BAD_COL, type DatasetPlan } from "./plan-types.js";

type Pl = typeof PolarsModule.default;

/** The aggregate over the rows for which `good` (SQL) is true: the rows written. */
export function duckdbMeasure(d: DatasetPlan, good = `NOT ${BAD_COL}`): string {
  switch (d.rule.kind) {
    case "unique":
      return `count(DISTINCT row(${d.cols.map(quoteIdent).join(", ")})) FILTER (WHERE ${good})`;
    case "null_ratio":
      return `count_if(${good} AND ${quoteIdent(d.cols[0]!)})`;
    case "row_count_between":
      return "0";
    case "sql": {
      // The query's one value over the written rows; `ev` names the columns as the fields.
      const { select, where } = d.rule.query;
      return `(SELECT ${datasetValueSql(select)} FROM ev WHERE ${good}${where !== undefined ? ` AND (${where})` : ""})`;
    }
  }
}

export function polarsMeasure(pl: Pl, good: PolarsModule.DataFrame, d: DatasetPlan): number | null {
  switch (d.rule.kind) {
    case "unique":
      // Column names, not expressions: a select by name builds no expression (see polars.ts).
      return good.select(...d.cols).unique().height;
    case "null_ratio":
      return Number(good.getColumn(d.cols[0]!).cast(pl.Int64).sum() ?? 0);
    case "row_count_between":
      return 0;
    case "sql": {
      const { select, where } = d.rule.query;
      const query = `SELECT ${datasetValueSql(select)} AS v FROM batch${where !== undefined ? ` WHERE ${where}` : ""}`;
      const out = pl.SQLContext({ batch: good.lazy() }).execute(query, { eager: true });
      const v = out.getColumn("v").toArray()[0] as number | null | undefined;
      return v === null || v === undefined ? null : Number(v);
    }
  }
}
