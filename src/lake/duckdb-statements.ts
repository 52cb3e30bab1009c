import type { DuckDBConnection, DuckDBPreparedStatement } from "../util/duckdb.js";
import { quoteIdent } from "../util/sql-text.js";
import type { ColumnPlan } from "./columns.js";
import type { LakeConfig } from "./config.js";
import { documentSelect } from "./duckdb-document-select.js";
import { mergeDeletes, type MergeDeletes } from "./duckdb-merge.js";
import { quarantineInsertSql, type Lookup } from "./duckdb-quarantine.js";
import { QSTAGE, quarantineListingTable } from "./duckdb-quarantine-files.js";
import type { TableColumn } from "./duckdb-tables.js";
import { SEQ_COLUMN } from "./row-seq.js";

/** The DuckDB writer's staging table for GoodColumns (a temporary table: one per connection). */
export const STAGE_TABLE = "lakelogic_stage";
export const STAGE = `temp.main.${STAGE_TABLE}`;

/**
 * A writer's statements. Only those that read nothing but the bound document (or delete a
 * whole table) are prepared: DuckDB plans a prepared statement with the table statistics of
 * the moment it was prepared and does not re-plan when they change, and a stale plan can give
 * wrong results (measured on 1.5.6: an ORDER BY over a temp table, prepared while it was
 * empty, returned truncated strings). Statements that read a table are planned per batch.
 */
export interface Statements {
  truncate: DuckDBPreparedStatement;
  /** $1 the batch document (spelt from the rows), $2 the last row sequence number taken: insert its rows. */
  insert: DuckDBPreparedStatement;
  /** Fill the table from the staging table (GoodChunks, their row slot numbered). */
  insertFromStage: string;
  /** $1 a GoodParquet file, $2 the last row sequence number taken: insert its rows, numbered in file order. */
  insertFromParquet: string;
  /** Merge: delete the batch's keys (see MergeDeletes). */
  deleteKeys?: MergeDeletes;
  /** Insert the quarantine rows, looking up their ids among the stored rows `Lookup` says. */
  quarantineSql?: Record<Exclude<Lookup, "none">, string>;
  /** Insert the quarantine rows without a lookup (prepared once: it reads no table). */
  quarantineInsert?: DuckDBPreparedStatement;
}

export async function prepareStatements(
  conn: DuckDBConnection,
  config: LakeConfig,
  plans: readonly ColumnPlan[],
  tableColumns: readonly TableColumn[],
  keyPlans: readonly number[],
): Promise<Statements> {
  const table = quoteIdent(config.table);
  // Table columns the contract fills; the others (fields since dropped) default to NULL.
  const filled = tableColumns.filter((c) => c.plan >= 0);
  const insertFrom = (source: string, seq: string) =>
    `INSERT INTO ${table} (${filled.map((c) => quoteIdent(c.name)).join(", ")}, ${quoteIdent(SEQ_COLUMN)}) ` +
    `SELECT ${filled.map((c) => `c${c.plan}`).join(", ")}, ${seq} FROM ${source}`;
  const s: Statements = {
    truncate: await conn.prepare(`DELETE FROM ${table}`),
    // $2: the last row sequence number taken before this batch (row-seq.ts); the rows number on from it.
    insert: await conn.prepare(insertFrom(`(${documentSelect(plans, plans.map((_, i) => i))})`, "$2::BIGINT + row_number() OVER ()")),
    insertFromStage: insertFrom(STAGE, `c${plans.length}`),
    insertFromParquet: insertFrom("read_parquet($1::VARCHAR, file_row_number = true)", "$2::BIGINT + 1 + file_row_number"),
  };
  if (config.strategy === "merge") s.deleteKeys = mergeDeletes(table, plans, keyPlans);
  if (config.quarantine.enabled) {
    // Under a path, rows are staged for their Parquet file and looked up in the file listing.
    const path = config.quarantine.dir !== undefined;
    const target = path ? quarantineListingTable(config.table) : config.quarantine.target;
    const into = path ? QSTAGE : undefined;
    s.quarantineSql = {
      all: quarantineInsertSql(target, "all", into),
      unowned: quarantineInsertSql(target, "unowned", into),
    };
    s.quarantineInsert = await conn.prepare(quarantineInsertSql(target, "none", into));
  }
  return s;
}
