import { quoteString } from "../util/sql-text.js";
import type { ColumnPlan } from "./columns.js";

/**
 * `SELECT c0, c1, …` (the given plans' columns, converted to the column types) over a JSON
 * document `{"c0":[…],"c1":[…],…}` bound as $1: its lists unnested side by side. Binding one
 * string and unnesting it in DuckDB is several times cheaper than appending data chunks built
 * value by value in JS.
 *
 * `(SELECT $1)` rather than `$1`: as a bare parameter DuckDB treats the document as a constant
 * and its optimizer copies the expanded lists around; joined with a table (the merge's delete,
 * quarantine's NOT EXISTS) that cost ~4 ms per 10k keys (measured on 1.5.6), the subquery ~0.
 */
export function documentSelect(plans: readonly ColumnPlan[], which: readonly number[]): string {
  const struct = `{${which.map((i) => `"c${i}":["${plans[i]!.payload.jsonType}"]`).join(",")}}`;
  return (
    `SELECT ${which.map((i) => `${plans[i]!.payload.sql(`r.c${i}`)} AS c${i}`).join(", ")} FROM ` +
    `(SELECT ${which.map((i) => `unnest(j.c${i}) AS c${i}`).join(", ")} ` +
    `FROM (SELECT from_json_strict((SELECT $1::VARCHAR), ${quoteString(struct)}) AS j)) AS r`
  );
}
