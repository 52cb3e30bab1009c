import type { DuckDBConnection } from "../util/duckdb.js";
import { quoteIdent } from "../util/sql-text.js";
import type { ColumnPlan } from "./columns.js";
import type { LakeConfig } from "./config.js";
import { readPlanned } from "./duckdb-run.js";
import { TableContractError, type TableChange } from "./errors.js";

/**
 * What a table was written with, recorded with each batch (DuckDB: `_lakelogic_tables`, in the
 * batch's transaction; Parquet: the manifest) and compared with the contract when a writer opens
 * the table (docs/lake.md, "The table's contract"). Column types are the table's own on DuckDB;
 * the Parquet manifest records them too, since older files may hold columns the newest lack.
 */
export interface TableRecord {
  primaryKey: string[];
  strategy: LakeConfig["strategy"];
}

/** A column of an existing table (its row sequence number left out). */
export interface StoredColumn {
  name: string;
  type: string;
}

/** The table as a writer finds it at open; undefined when there is none yet. */
export interface ExistingTable {
  /** Absent for a duckdb table no batch was written to yet (made at open): it takes the contract's. */
  record?: TableRecord | undefined;
  columns: readonly StoredColumn[];
}

export function recordOf(config: LakeConfig): TableRecord {
  return { primaryKey: [...config.primaryKey], strategy: config.strategy };
}

/** Whether the stored record already says what `config` writes (else the next batch records it). */
export function sameRecord(stored: TableRecord | undefined, now: TableRecord): boolean {
  return stored !== undefined && stored.strategy === now.strategy && JSON.stringify(stored.primaryKey) === JSON.stringify(now.primaryKey);
}

export function normType(t: string): string {
  return t.toUpperCase().replace(/\s+/g, "");
}

/**
 * Refuse a contract that would write the existing table differently from how it was written
 * (TableContractError, listing every change); `where` names the database or directory.
 */
export function checkTableContract(config: LakeConfig, plans: readonly ColumnPlan[], existing: ExistingTable | undefined, where: string): void {
  if (existing === undefined) return;
  const keyed = existing.record ? strategyChanges(existing.record, config) : [];
  const { types, added, removed } = columnChanges(config, plans, existing.columns);
  const changes = [...keyed, ...types, ...added, ...removed];
  if (changes.length === 0) return;
  const said = [
    ...keyed.map(spell),
    ...types.map(spell),
    ...added.map((c) => `${spell(c)} (added to the contract)`),
    ...removed.map((c) => `${spell(c)} (removed from the contract)`),
  ];
  const remedies: string[] = [];
  if (keyed.length > 0) {
    remedies.push(
      "Rows written under one primary_key and strategy cannot be continued under another without mixing the two " +
        "(a merge on another key adds a second row for a key the table already holds, an append adds repeats to a merged table): " +
        "keep primary_key and materialization.strategy as the table has them, or write to a new table (another materialization.table " +
        "or target_path) and load it from the source. A change to strategy overwrite is accepted: its next batch replaces every row.",
    );
  }
  if (types.length > 0) remedies.push("A column's type cannot change under stored rows: keep the field's type, or write to a new table.");
  if (added.length + removed.length > 0) {
    remedies.push(
      "schema_policy.evolution is strict, so the contract's fields must be the table's columns: restore them, set " +
        "schema_policy.evolution: allow (an added field becomes a nullable column; a removed field's column stays and reads NULL " +
        "in new rows), or write to a new table.",
    );
  }
  throw new TableContractError(
    config.table,
    changes,
    `table "${config.table}" (${where}) was written with another contract: ${said.join("; ")}. ${remedies.join(" ")}`,
  );
}

const spell = (c: TableChange): string => `${c.option}: ${c.was} → ${c.now}`;
const keyText = (key: readonly string[]): string => `[${key.join(", ")}]`;
const keySet = (key: readonly string[]): string => JSON.stringify(key.map((k) => k.toLowerCase()).sort());

/**
 * The strategy and, for merge, the key must stay; overwrite replaces every row with its next
 * batch, so any contract may switch to it. append never reads the key.
 */
function strategyChanges(recorded: TableRecord, config: LakeConfig): TableChange[] {
  if (config.strategy === "overwrite") return [];
  if (recorded.strategy !== config.strategy) {
    return [{ option: "materialization.strategy", was: recorded.strategy, now: config.strategy }];
  }
  if (config.strategy === "merge" && keySet(recorded.primaryKey) !== keySet(config.primaryKey)) {
    return [{ option: "primary_key", was: keyText(recorded.primaryKey), now: keyText(config.primaryKey) }];
  }
  return [];
}

/** Columns whose type differs; under strict evolution also the fields added and the columns removed. */
function columnChanges(
  config: LakeConfig,
  plans: readonly ColumnPlan[],
  columns: readonly StoredColumn[],
): { types: TableChange[]; added: TableChange[]; removed: TableChange[] } {
  const byName = new Map(columns.map((c) => [c.name.toLowerCase(), c]));
  const types: TableChange[] = [];
  const added: TableChange[] = [];
  for (const p of plans) {
    const col = byName.get(p.name.toLowerCase());
    if (col === undefined) added.push({ option: `model.fields.${p.name}`, was: "absent", now: p.sqlType });
    else if (normType(col.type) !== normType(p.sqlType)) types.push({ option: `model.fields.${p.name}`, was: col.type, now: p.sqlType });
  }
  if (config.evolution !== "strict") return { types, added: [], removed: [] };
  const planned = new Set(plans.map((p) => p.name.toLowerCase()));
  const removed = columns
    .filter((c) => !planned.has(c.name.toLowerCase()))
    .map((c) => ({ option: `model.fields.${c.name}`, was: c.type, now: "absent" }));
  return { types, added, removed };
}

/** DuckDB format: per table, what its last batch was written with. */
export const TABLES_TABLE = "_lakelogic_tables";
const TABLE = quoteIdent(TABLES_TABLE);

export async function ensureTablesTable(conn: DuckDBConnection): Promise<void> {
  await conn.run(`CREATE TABLE IF NOT EXISTS ${TABLE} (
    table_name VARCHAR PRIMARY KEY,
    primary_key VARCHAR NOT NULL,
    strategy VARCHAR NOT NULL,
    written_at TIMESTAMP NOT NULL
  )`);
}

export async function loadTableRecord(conn: DuckDBConnection, table: string): Promise<TableRecord | undefined> {
  const rows = await readPlanned(conn, `SELECT primary_key, strategy FROM ${TABLE} WHERE table_name = $1`, (p) => p.bindVarchar(1, table));
  const row = rows[0];
  if (!row) return undefined;
  return { primaryKey: JSON.parse(String(row[0])) as string[], strategy: String(row[1]) as TableRecord["strategy"] };
}

/** Record, inside the caller's transaction, what the batch was written with. */
export async function storeTableRecord(conn: DuckDBConnection, table: string, record: TableRecord): Promise<void> {
  await readPlanned(
    conn,
    `INSERT INTO ${TABLE} VALUES ($1, $2, $3, current_timestamp::TIMESTAMP)
     ON CONFLICT (table_name) DO UPDATE SET primary_key = excluded.primary_key, strategy = excluded.strategy,
       written_at = excluded.written_at`,
    (p) => {
      p.bindVarchar(1, table);
      p.bindVarchar(2, JSON.stringify(record.primaryKey));
      p.bindVarchar(3, record.strategy);
    },
  );
}
