import type { DuckDBConnection } from "../util/duckdb.js";
import type { Row } from "../engine/types.js";
import { quoteIdent } from "../util/sql-text.js";
import { buildChunks, selectRows } from "./chunks.js";
import type { ColumnPlan } from "./columns.js";

/**
 * The staging tables of the writers that build a batch in an in-memory DuckDB before handing it
 * on (parquet, delta): `stage` (good rows), `dstage` (the keys a merge batch deletes).
 */

/** The key columns of `a` and `b` match, NULL parts matching each other. */
export function keyMatch(plans: readonly ColumnPlan[], keyPlans: readonly number[], a: string, b: string): string {
  return keyPlans.map((p) => `${a}.${quoteIdent(plans[p]!.name)} IS NOT DISTINCT FROM ${b}.${quoteIdent(plans[p]!.name)}`).join(" AND ");
}

/**
 * Stage the keys the batch deletes in `dstage`, and drop the batch's own rows of those keys from
 * `stage` (its deletes come after them). Returns how many staged rows were dropped.
 */
export async function stageDeletes(conn: DuckDBConnection, plans: readonly ColumnPlan[], keyPlans: readonly number[], deletes: readonly Row[]): Promise<number> {
  const selection = selectRows(plans, deletes, keyPlans);
  await conn.run("DELETE FROM dstage");
  const appender = await conn.createAppender("dstage");
  const columns = keyPlans.map((k) => selection.converted.get(k)!);
  for (const chunk of buildChunks(keyPlans.map((k) => plans[k]!.vectorType), columns, selection.selected.length)) {
    appender.appendDataChunk(chunk);
  }
  appender.closeSync();
  const dropped = await conn.run(`DELETE FROM stage AS s WHERE EXISTS (SELECT 1 FROM dstage AS f WHERE ${keyMatch(plans, keyPlans, "f", "s")})`);
  return dropped.rowsChanged;
}
