/**
 * Quarantine under a path on a duckdb lake (docs/lake.md, "Quarantine under a path"). DuckDB lets
 * one transaction write one database file, so the rows go to Parquet files in the directory, and
 * what makes a file count is its listing in the lake's own database, written in the batch's
 * transaction: per quarantine row, its id, batch, time, stream and file. The listing has the
 * columns the duckdb quarantine table uses to keep rows unique (quarantine_id, batch_id,
 * quarantined_at, stream_key), so a replay is handled exactly as there (DuckDBLakeWriter's
 * quarantineMode); the files of a batch are its listed rows' `file`.
 *
 * A batch's file is written (and fsynced) inside the transaction, before COMMIT; a crash before
 * COMMIT leaves a file nothing lists, which readers never see and the next writer removes.
 */
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { DuckDBConnection } from "../util/duckdb.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import type { LakeConfig } from "./config.js";
import { DUCKDB_QUARANTINE_COLUMNS } from "./duckdb-quarantine.js";
import { readPlanned } from "./duckdb-run.js";
import { QUARANTINE_COLUMNS } from "./quarantine.js";
import { fsyncPath, isQuarantineFileOf, uniqueParquetName } from "./quarantine-files.js";

/**
 * The listing of a table's quarantine files, one row per quarantine row. Its name starts with
 * `_lakelogic`, which no contract may use for a table.
 */
export function quarantineListingTable(table: string): string {
  return `_lakelogic_quarantine_files_${table}`;
}

/**
 * Where a batch's quarantine rows wait to be copied to their file and listed: a temporary table
 * of the writer's connection, filled with the columns of the duckdb quarantine table (so the
 * insert that looks ids up is the same). Its name starts with `_lakelogic`: DuckDB resolves an
 * unqualified name to a temporary table first, and no contract table can have that name.
 */
export const QSTAGE = "temp.main._lakelogic_quarantine_stage";

/**
 * At open, under the database's write turn: the directory, the listing table, this
 * connection's stage, and the removal of this table's files no listing names (a crashed batch's,
 * or a replaced attempt's whose removal did not happen).
 */
export async function prepareQuarantineFiles(conn: DuckDBConnection, config: LakeConfig, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const listing = quoteIdent(quarantineListingTable(config.table));
  await conn.run(`CREATE TABLE IF NOT EXISTS ${listing} (
    quarantine_id VARCHAR NOT NULL,
    batch_id BIGINT NOT NULL,
    quarantined_at TIMESTAMP NOT NULL,
    stream_key VARCHAR,
    file VARCHAR NOT NULL
  )`);
  await conn.run(`CREATE OR REPLACE TEMP TABLE _lakelogic_quarantine_stage (${DUCKDB_QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
  const listed = new Set(await listedFiles(conn, config.table));
  for (const name of readdirSync(dir)) {
    if (isQuarantineFileOf(config.table, name) && !listed.has(name)) rmSync(join(dir, name), { force: true });
  }
}

/** The names of a table's listed quarantine files (relative to its quarantine directory), sorted. */
export async function listedFiles(conn: DuckDBConnection, table: string): Promise<string[]> {
  const rows = await readPlanned(conn, `SELECT DISTINCT file FROM ${quoteIdent(quarantineListingTable(table))} ORDER BY file`, () => undefined);
  return rows.map((r) => String(r[0]));
}

/**
 * Inside the batch's transaction: copy the staged rows to a new file in `dir`, fsync it and the
 * directory (the COMMIT that lists it must not outlive it on disk), list its rows and empty the
 * stage. Returns the file's name, or undefined when nothing was staged (no file).
 */
export async function writeStagedQuarantine(
  conn: DuckDBConnection,
  table: string,
  dir: string,
  batchId: number,
  staged: number,
  written: (file: string) => void,
): Promise<string | undefined> {
  if (staged === 0) return undefined;
  const file = uniqueParquetName(table, batchId);
  const path = join(dir, file);
  written(path);
  const columns = QUARANTINE_COLUMNS.map((c) => c.name).join(", ");
  await conn.run(`COPY (SELECT ${columns} FROM ${QSTAGE}) TO ${quoteString(path)} (FORMAT parquet, COMPRESSION zstd)`);
  fsyncPath(path, "r+");
  fsyncPath(dir, "r");
  await conn.run(
    `INSERT INTO ${quoteIdent(quarantineListingTable(table))} (quarantine_id, batch_id, quarantined_at, stream_key, file)
     SELECT quarantine_id, batch_id, quarantined_at, stream_key, ${quoteString(file)} FROM ${QSTAGE}`,
  );
  await conn.run(`DELETE FROM ${QSTAGE}`);
  return file;
}

/**
 * After COMMIT: remove the files of `candidates` (replaced attempts) that the listing no longer
 * names. A failure is left to the next open, which removes unlisted files.
 */
export async function removeUnlisted(conn: DuckDBConnection, table: string, dir: string, candidates: ReadonlySet<string>): Promise<void> {
  try {
    for (const file of candidates) {
      const still = await readPlanned(conn, `SELECT 1 FROM ${quoteIdent(quarantineListingTable(table))} WHERE file = $1 LIMIT 1`, (p) =>
        p.bindVarchar(1, file),
      );
      if (still.length === 0) rmSync(join(dir, file), { force: true });
    }
  } catch {
    // The batch is committed; an unlisted file is only clutter, which the next open removes.
  }
}
