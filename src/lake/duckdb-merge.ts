import { quoteIdent, quoteString } from "../util/sql-text.js";
import type { ColumnPlan } from "./columns.js";
import { documentSelect } from "./duckdb-document-select.js";

/** $1 a keys document: delete the table's rows with those keys (`nullSql`: the keys with a NULL part). */
export interface KeyDelete {
  sql: string;
  nullSql: string;
}

/**
 * Merge: delete by a keys document spelt from the rows (PayloadBatch.keysDoc) or by the engine
 * (GoodChunks' keys.doc), or by the keys of a Parquet file of good rows (`parquet`, $1 the file:
 * GoodParquet); `firstInRange`: $1, $2 the first key part's range as text, select a stored row in
 * it (GoodChunks' keys.range); `parquetKeys`: $1 the file, its first key part's range as text and
 * whether a key part is NULL.
 */
export interface MergeDeletes {
  rows: KeyDelete;
  text: KeyDelete;
  parquet: KeyDelete;
  firstInRange: string;
  parquetKeys: string;
}

/** The merge's statements for `table` (quoted), keyed by the plans at `keyPlans`. */
export function mergeDeletes(table: string, plans: readonly ColumnPlan[], keyPlans: readonly number[]): MergeDeletes {
  /** Keys `s` from a document; `key(p, i)`: key plan p's (the i-th key part's) value there, in the column's type. */
  const keyDelete = (keys: string, key: (p: number, i: number) => string): KeyDelete => {
    const match = (op: string) => keyPlans.map((p, i) => `t.${quoteIdent(plans[p]!.name)} ${op} ${key(p, i)}`).join(" AND ");
    const someNull = keyPlans.map((p, i) => `${key(p, i)} IS NULL`).join(" OR ");
    return {
      sql: `DELETE FROM ${table} AS t USING ${keys} WHERE ${match("=")}`,
      nullSql: `DELETE FROM ${table} AS t USING ${keys} WHERE (${someNull}) AND ${match("IS NOT DISTINCT FROM")}`,
    };
  };
  // The engine's keys document: one list per key part, DuckDB's text of each value.
  const struct = `{${keyPlans.map((_, i) => `"k${i}":["VARCHAR"]`).join(",")}}`;
  const textKeys =
    `(SELECT ${keyPlans.map((_, i) => `unnest(j.k${i}) AS k${i}`).join(", ")} ` +
    `FROM (SELECT from_json_strict((SELECT $1::VARCHAR), ${quoteString(struct)}) AS j)) AS s`;
  const first = plans[keyPlans[0]!]!;
  // A GoodParquet file's column c<p> is plan p's, in the column's type.
  const file = "read_parquet($1::VARCHAR)";
  return {
    rows: keyDelete(`(${documentSelect(plans, keyPlans)}) AS s`, (p) => `s.c${p}`),
    text: keyDelete(textKeys, (p, i) => `CAST(s.k${i} AS ${plans[p]!.sqlType})`),
    parquet: keyDelete(`(SELECT ${keyPlans.map((p) => `c${p}`).join(", ")} FROM ${file}) AS s`, (p) => `s.c${p}`),
    parquetKeys:
      `SELECT CAST(min(c${keyPlans[0]!}) AS VARCHAR), CAST(max(c${keyPlans[0]!}) AS VARCHAR), ` +
      `bool_or(${keyPlans.map((p) => `c${p} IS NULL`).join(" OR ")}) FROM ${file}`,
    firstInRange:
      `SELECT 1 FROM ${table} WHERE ${quoteIdent(first.name)} ` +
      `BETWEEN CAST($1::VARCHAR AS ${first.sqlType}) AND CAST($2::VARCHAR AS ${first.sqlType}) LIMIT 1`,
  };
}
