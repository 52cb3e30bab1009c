import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBInstance,
  DuckDBListValue,
  DuckDBTimestampValue,
  DuckDBTypeId,
  type DuckDBConnection,
  type DuckDBResultReader,
  type DuckDBType,
  type DuckDBValue,
} from "../util/duckdb.js";
import type { Contract } from "../contract/types.js";
import type { Row } from "../engine/types.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { planColumns } from "./columns.js";
import { DUCKDB_FILE, EXTRA_COLUMN, joinLocation, quarantineLocationOf, RECORD_COLUMN, resolveLakeConfig, type LakeConfig } from "./config.js";
import { DeltaHelper } from "./delta-helper.js";
import { storageOptions } from "./delta-writer.js";
import { acquireDatabase } from "./duckdb-db.js";
import { attachDuckLake, LAKE_ALIAS, lakeTable, sharedCatalog } from "./ducklake-catalog.js";
import { listedFiles, quarantineListingTable } from "./duckdb-quarantine-files.js";
import { quarantineDir, readManifest, sqlList, tableDir } from "./parquet-writer.js";
import { parseJsonRecord } from "../util/exact-json.js";
import { SEQ_COLUMN } from "./row-seq.js";
import type { StoredQuarantineRow } from "./types.js";

export interface ReadOptions {
  /** Lake directory; overrides `materialization.target_path`. Default `./lake`. */
  targetPath?: string;
}

/**
 * The good rows of a contract's table, values in the canonical form the engine produces:
 * integers as number (bigint beyond 2^53), decimals as strings, dates "YYYY-MM-DD", timestamps
 * ISO-8601 UTC strings, json parsed. A contract without fields reads back its stored records.
 * Returns [] when nothing was written yet. For tests, tools and small tables: it reads everything.
 */
export async function readTable(contract: Contract, options: ReadOptions = {}): Promise<Row[]> {
  const config = resolveLakeConfig(contract, options);
  const rows = await query(config, "table");
  return rows.map((r) => fromStored(config, r));
}

/** The quarantine rows of a contract's table (all of them). */
export async function readQuarantine(contract: Contract, options: ReadOptions = {}): Promise<StoredQuarantineRow[]> {
  const config = resolveLakeConfig(contract, options);
  const rows = await query(config, "quarantine");
  return rows.map((r) => ({
    quarantineId: String(r["quarantine_id"]),
    batchId: Number(r["batch_id"]),
    record: r["record"] ?? undefined,
    raw: (r["raw"] as string | null) ?? null,
    rawEncoding: (r["raw_encoding"] as StoredQuarantineRow["rawEncoding"]) ?? null,
    reasons: (r["reasons"] as string[] | null) ?? [],
    ruleIds: (r["rule_ids"] as string[] | null) ?? [],
    position: r["position"] ?? undefined,
    quarantinedAt: new Date(String(r["quarantined_at"])),
    streamKey: (r["stream_key"] as string | null | undefined) ?? null,
  }));
}

/**
 * The quarantine files of a contract's table that count, as absolute paths: those its parquet
 * manifest lists, or, on a duckdb lake whose quarantine.target is a path, those listed in the
 * lake's database. Other files in the directory (a crashed batch's) are not part of the lake.
 * [] for a duckdb lake that keeps quarantine in a table.
 */
export async function readQuarantineFiles(contract: Contract, options: ReadOptions = {}): Promise<string[]> {
  const config = resolveLakeConfig(contract, options);
  if (config.format === "parquet") {
    return (readManifest(config)?.quarantine ?? []).map((f) => join(quarantineDir(config), f.file));
  }
  const dir = config.quarantine.dir;
  if (dir === undefined) return [];
  return withDuckDB(config, [], async (conn) =>
    (await tableExists(conn, quarantineListingTable(config.table))) ? (await listedFiles(conn, config.table)).map((f) => join(dir, f)) : [],
  );
}

/** Run `read` on a connection to the lake's DuckDB file; `none` when there is no file yet. */
export async function withDuckDB<T>(config: LakeConfig, none: T, read: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const file = join(config.targetPath, DUCKDB_FILE);
  if (!existsSync(file)) return none;
  const db = await acquireDatabase(file);
  try {
    return await read(await db.connect());
  } finally {
    db.release();
  }
}

export async function tableExists(conn: DuckDBConnection, name: string): Promise<boolean> {
  const exists = await conn.runAndReadAll(
    "SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1",
    [name],
  );
  return exists.currentRowCount > 0;
}

/**
 * A duckdb lake's quarantine under a path: the rows of the listed files, each with its stream
 * key from the listing, in file and row order.
 */
async function readListedQuarantine(conn: DuckDBConnection, config: LakeConfig, dir: string): Promise<Row[]> {
  const listing = quarantineListingTable(config.table);
  if (!(await tableExists(conn, listing))) return [];
  const files = (await listedFiles(conn, config.table)).map((f) => join(dir, f));
  if (files.length === 0) return [];
  return readAll(
    conn,
    `SELECT f.* EXCLUDE (filename, file_row_number), l.stream_key
     FROM read_parquet(${sqlList(files)}, filename = true, file_row_number = true) AS f
     JOIN ${quoteIdent(listing)} AS l ON l.quarantine_id = f.quarantine_id AND l.file = parse_filename(f.filename)
     ORDER BY f.filename, f.file_row_number`,
  );
}

async function query(config: LakeConfig, which: "table" | "quarantine"): Promise<Row[]> {
  const name = which === "table" ? config.table : config.quarantine.target;
  if (config.format === "duckdb") {
    const dir = config.quarantine.dir;
    return withDuckDB(config, [], async (conn) => {
      if (which === "quarantine" && dir !== undefined) return readListedQuarantine(conn, config, dir);
      if (!(await tableExists(conn, name))) return [];
      return readAll(conn, `SELECT * FROM ${quoteIdent(name)}`);
    });
  }
  if (config.format === "delta") return readDelta(config, which);
  if (config.format === "ducklake") return readDuckLake(config, name);
  const manifest = readManifest(config);
  if (!manifest) return [];
  const files =
    which === "table"
      ? manifest.data.map((f) => join(tableDir(config), f.file))
      : manifest.quarantine.map((f) => join(quarantineDir(config), f.file));
  if (files.length === 0) return [];
  // A throwaway in-memory instance, left to the garbage collector (see duckdb-db.ts for why
  // instances are never closed explicitly).
  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  return readAll(conn, `SELECT * FROM read_parquet(${sqlList(files)}, union_by_name = true)`);
}

/** A Delta table's current snapshot, read by delta-rs and handed over as one Parquet file. */
async function readDelta(config: LakeConfig, which: "table" | "quarantine"): Promise<Row[]> {
  const uri = which === "table" ? joinLocation(config.targetPath, config.table) : quarantineLocationOf(config);
  const dir = mkdtempSync(join(tmpdir(), "lakelogic-delta-read-"));
  const helper = DeltaHelper.start();
  try {
    const out = join(dir, "snapshot.parquet");
    const found = await helper.request<{ exists: boolean }>("read", { uri, storage: storageOptions(uri), out });
    if (!found.exists) return [];
    const instance = await DuckDBInstance.create(":memory:");
    const conn = await instance.connect();
    await conn.run("SET TimeZone = 'UTC'");
    // Delta keeps json fields and timestamps as text and UTC instants: read back as the lake's types.
    const casts = which === "table" ? deltaCasts(config) : "REPLACE (record::JSON AS record, position::JSON AS position, quarantined_at::TIMESTAMP AS quarantined_at)";
    return await readAll(conn, `SELECT * ${casts} FROM read_parquet(${quoteString(out)})`);
  } finally {
    await helper.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A DuckLake table's current snapshot (none when the catalog or table does not exist yet). */
async function readDuckLake(config: LakeConfig, name: string): Promise<Row[]> {
  const location = config.ducklake!;
  if (!sharedCatalog(location) && !existsSync(location.catalog)) return [];
  const { conn, exclusive, release } = await attachDuckLake(location);
  try {
    return await exclusive(async () => {
      const found = await conn.runAndReadAll(
        "SELECT 1 FROM duckdb_tables() WHERE database_name = $1 AND schema_name = $2 AND table_name = $3",
        [LAKE_ALIAS, location.schema, name],
      );
      return found.currentRowCount === 0 ? [] : await readAll(conn, `SELECT * FROM ${lakeTable(location, name)}`);
    });
  } finally {
    await release();
  }
}

function deltaCasts(config: LakeConfig): string {
  const plans = planColumns(config).filter((p) => p.sqlType === "JSON" || p.sqlType === "TIMESTAMP");
  if (plans.length === 0) return "";
  return `REPLACE (${plans.map((p) => `${quoteIdent(p.name)}::${p.sqlType} AS ${quoteIdent(p.name)}`).join(", ")})`;
}

/** The rows of a query, values in the canonical form of `readTable` (also for the `lake` source). */
export async function readAll(conn: DuckDBConnection, sql: string): Promise<Row[]> {
  const reader: DuckDBResultReader = await conn.runAndReadAll(sql);
  const names = reader.columnNames();
  const types = reader.columnTypes();
  return reader.getRows().map((values) => {
    const row: Row = {};
    values.forEach((v, i) => {
      row[names[i]!] = toJs(v, types[i]!);
    });
    return row;
  });
}

/** ISO-8601 UTC; milliseconds always, microseconds when present. */
export function isoFromMicros(micros: bigint): string {
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  const iso = new Date(Number(ms)).toISOString();
  const extra = Number(micros - ms * 1000n);
  return extra === 0 ? iso : `${iso.slice(0, -1)}${String(extra).padStart(3, "0")}Z`;
}

function toJs(v: DuckDBValue, type: DuckDBType): unknown {
  if (v === null) return null;
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (typeof v === "string") {
    return type.typeId === DuckDBTypeId.VARCHAR && type.alias === "JSON" ? parseJsonRecord(v) : v;
  }
  if (typeof v === "number" || typeof v === "boolean") return v;
  if (v instanceof DuckDBDecimalValue) return v.toString();
  if (v instanceof DuckDBDateValue) return v.toString();
  if (v instanceof DuckDBTimestampValue) return isoFromMicros(v.micros);
  if (v instanceof DuckDBListValue) {
    const itemType = "valueType" in type ? (type as { valueType: DuckDBType }).valueType : type;
    return v.items.map((item) => toJs(item, itemType));
  }
  return String(v);
}

function fromStored(config: LakeConfig, stored: Row): Row {
  // The row sequence number is the lake's bookkeeping (row-seq.ts), not the contract's data.
  const { [SEQ_COLUMN]: _seq, ...row } = stored;
  if (config.schemaless) return (row[RECORD_COLUMN] ?? {}) as Row;
  if (!config.keepExtra) return row;
  const { [EXTRA_COLUMN]: extra, ...rest } = row;
  return extra && typeof extra === "object" ? { ...rest, ...(extra as Row) } : rest;
}
