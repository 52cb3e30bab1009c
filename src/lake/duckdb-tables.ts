import { VARCHAR, type DuckDBConnection, type DuckDBType } from "../util/duckdb.js";
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import { quoteIdent } from "../util/sql-text.js";
import type { ColumnPlan } from "./columns.js";
import { DUCKDB_FILE, type LakeConfig } from "./config.js";
import { DUCKDB_QUARANTINE_COLUMNS } from "./duckdb-quarantine.js";
import { prepareQuarantineFiles } from "./duckdb-quarantine-files.js";
import { SEQ_COLUMN } from "./row-seq.js";
import { checkTableContract, loadTableRecord, type TableRecord } from "./table-contract.js";

/** Column of the existing table and where its values come from (-1: not in the contract → NULL). */
export interface TableColumn {
  name: string;
  plan: number;
  vectorType: DuckDBType;
}

async function tableColumnsOf(conn: DuckDBConnection, table: string, temp = false): Promise<Array<{ name: string; type: string }>> {
  const reader = await conn.runAndReadAll(
    `SELECT column_name, data_type FROM duckdb_columns()
     WHERE database_name = ${temp ? "'temp'" : "current_database()"} AND schema_name = 'main' AND table_name = $1
     ORDER BY column_index`,
    [table],
  );
  return reader.getRows().map((r) => ({ name: String(r[0]), type: String(r[1]) }));
}

/**
 * Create or reconcile the good and quarantine tables (or, for a quarantine under a path, its
 * listing and directory); return the good table's layout and what it was last written with.
 */
export async function prepareTables(
  conn: DuckDBConnection,
  config: LakeConfig,
  plans: readonly ColumnPlan[],
): Promise<{ layout: TableColumn[]; record: TableRecord | undefined }> {
  const good = await prepareGoodTable(conn, config, plans);
  const q = config.quarantine;
  if (q.enabled && q.dir !== undefined) await prepareQuarantineFiles(conn, config, q.dir);
  else if (q.enabled) await prepareQuarantineTable(conn, q.target);
  return good;
}

/**
 * Check an existing good table against the contract (table-contract.ts) before changing
 * anything, then create it or add the contract's new fields to it; return its layout.
 */
async function prepareGoodTable(
  conn: DuckDBConnection,
  config: LakeConfig,
  plans: readonly ColumnPlan[],
): Promise<{ layout: TableColumn[]; record: TableRecord | undefined }> {
  const table = quoteIdent(config.table);
  const seq = `${quoteIdent(SEQ_COLUMN)} BIGINT`;
  const found = await tableColumnsOf(conn, config.table);
  let record: TableRecord | undefined;
  if (found.length === 0) {
    await conn.run(`CREATE TABLE ${table} (${plans.map((p) => `${quoteIdent(p.name)} ${p.sqlType}`).join(", ")}, ${seq})`);
  } else {
    const where = join(config.targetPath, DUCKDB_FILE);
    const stored = found.filter((c) => c.name.toLowerCase() !== SEQ_COLUMN);
    // Every table the lake makes has the column: without it the table is not one it made.
    if (stored.length === found.length) {
      throw new ConfigError(
        "materialization.table",
        `table "${config.table}" (${where}) exists without the ${SEQ_COLUMN} column, so it is not a LakeLogic table; choose another materialization.table`,
      );
    }
    record = await loadTableRecord(conn, config.table);
    checkTableContract(config, plans, { record, columns: stored }, where);
    const names = new Set(stored.map((c) => c.name.toLowerCase()));
    for (const p of plans) {
      // A field added to the contract: add the column (old rows read NULL).
      if (!names.has(p.name.toLowerCase())) await conn.run(`ALTER TABLE ${table} ADD COLUMN ${quoteIdent(p.name)} ${p.sqlType}`);
    }
  }
  const layout = (await tableColumnsOf(conn, config.table)).map((c) => {
    const plan = plans.findIndex((p) => p.name.toLowerCase() === c.name.toLowerCase());
    return { name: c.name, plan, vectorType: plan >= 0 ? plans[plan]!.vectorType : VARCHAR };
  });
  return { layout, record };
}

/** Create the quarantine table, or check the one that is there. */
async function prepareQuarantineTable(conn: DuckDBConnection, target: string): Promise<void> {
  const q = quoteIdent(target);
  await conn.run(`CREATE TABLE IF NOT EXISTS ${q} (${DUCKDB_QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
  const qCols = (await tableColumnsOf(conn, target)).map((c) => c.name);
  const expected = DUCKDB_QUARANTINE_COLUMNS.map((c) => c.name);
  if (qCols.join(",") !== expected.join(",")) {
    throw new ConfigError(
      "quarantine.target",
      `table "${target}" exists with columns (${qCols.join(", ")}), not a LakeLogic quarantine table (${expected.join(", ")}); choose another quarantine.target`,
    );
  }
}
