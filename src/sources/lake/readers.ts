import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Row } from "../../engine/types.js";
import { NonRetriableError } from "../../errors.js";
import { DUCKDB_FILE, EXTRA_COLUMN } from "../../lake/config.js";
import { acquireDatabase, type Database } from "../../lake/duckdb-db.js";
import { LakeBusyError } from "../../lake/errors.js";
import { readManifestAt, sqlList, META_DIR, MANIFEST_FILE } from "../../lake/parquet-writer.js";
import { readAll } from "../../lake/read.js";
import { SEQ_COLUMN, SEQS_TABLE } from "../../lake/row-seq.js";
import { DuckDBInstance, type DuckDBConnection } from "../../util/duckdb.js";
import { quoteIdent, quoteString } from "../../util/sql-text.js";

/** A committed row of the lake table and its sequence number. */
export interface SeqRow {
  row: Row;
  seq: number;
}

/** What the lake source needs of a stored table; every answer covers committed rows only. */
export interface TableReader {
  /** The greatest row sequence number committed now; 0 when the table holds none. */
  high(): Promise<number>;
  /** Up to `limit` committed rows with `after < seq <= until`, in sequence order. */
  page(after: number, until: number, limit: number): Promise<SeqRow[]>;
  close(): void;
}

/**
 * The DuckDB file of the lake is held by another process. DuckDB lets one process open a database
 * file (for writing, or any number for reading with no writer), so a silver stream cannot read a
 * duckdb bronze table while bronze's writer runs elsewhere. Not retriable: waiting would not end
 * while that writer runs.
 */
export class LakeSourceBusyError extends NonRetriableError {
  constructor(message: string, cause: unknown) {
    super("LAKE_SOURCE_BUSY", message, { cause });
  }
}

/** Split a stored row into the record and its sequence number; undeclared keys come back out of `_extra`. */
function seqRow(stored: Row): SeqRow {
  const { [SEQ_COLUMN]: seq, ...row } = stored;
  const extra = row[EXTRA_COLUMN];
  if (extra === null || (typeof extra === "object" && !Array.isArray(extra))) {
    delete row[EXTRA_COLUMN];
    if (extra) Object.assign(row, extra);
  }
  return { row, seq: Number(seq) };
}

function pageSql(from: string, after: number, until: number, limit: number): string {
  const seq = quoteIdent(SEQ_COLUMN);
  return `SELECT * FROM ${from} WHERE ${seq} > ${after} AND ${seq} <= ${until} ORDER BY ${seq} LIMIT ${limit}`;
}

/** A table in a duckdb lake, read through the process's one instance of the file (duckdb-db.ts). */
export class DuckDBTableReader implements TableReader {
  private db: Database | undefined;
  private conn: DuckDBConnection | undefined;

  constructor(
    private readonly file: string,
    private readonly table: string,
  ) {}

  async high(): Promise<number> {
    const conn = await this.connect();
    if (!conn || !(await this.exists(conn, this.table)) || !(await this.exists(conn, SEQS_TABLE))) return 0;
    const rows = await readAll(conn, `SELECT last_seq FROM ${quoteIdent(SEQS_TABLE)} WHERE table_name = ${quoteString(this.table)}`);
    return rows.length === 0 ? 0 : Number(rows[0]!["last_seq"]);
  }

  async page(after: number, until: number, limit: number): Promise<SeqRow[]> {
    const conn = await this.connect();
    if (!conn || until <= after) return [];
    return (await readAll(conn, pageSql(quoteIdent(this.table), after, until, limit))).map(seqRow);
  }

  close(): void {
    // The instance stays open for the process (duckdb-db.ts); this only drops the reference.
    this.db?.release();
    this.db = undefined;
    this.conn = undefined;
  }

  /** Undefined while the file does not exist: opening it would create an empty lake. */
  private async connect(): Promise<DuckDBConnection | undefined> {
    if (this.conn) return this.conn;
    if (!existsSync(this.file)) return undefined;
    try {
      this.db = await acquireDatabase(this.file);
    } catch (e) {
      if (!(e instanceof LakeBusyError)) throw e;
      throw new LakeSourceBusyError(
        `source lake: ${this.file} is open in another process (a writer of the table "${this.table}", or another reader). ` +
          "DuckDB lets one process use a database file while it writes, so a stream cannot read a duckdb lake that " +
          "another process is writing. Run the two in sequence (the writer's available_now run first), or write the " +
          "upstream contract with materialization.format: parquet, which a reader in another process can read while it is written",
        e,
      );
    }
    this.conn = await this.db.connect();
    return this.conn;
  }

  private async exists(conn: DuckDBConnection, name: string): Promise<boolean> {
    const rows = await readAll(
      conn,
      `SELECT 1 AS x FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ${quoteString(name)}`,
    );
    return rows.length > 0;
  }
}

/** How often a page is read again when a merge or compaction removed a listed file under it. */
const MOVED_FILE_RETRIES = 5;

/**
 * A table in a parquet lake: the files its manifest lists, read anew for each page. The manifest is
 * replaced atomically when a batch commits, so the files it lists are exactly the committed ones;
 * a file a newer commit replaced may be deleted while a page reads it, and the page is then read
 * again from the newer manifest.
 */
export class ParquetTableReader implements TableReader {
  private conn: Promise<DuckDBConnection> | undefined;

  constructor(private readonly dir: string) {}

  high(): Promise<number> {
    return Promise.resolve(readManifestAt(this.dir)?.lastSeq ?? 0);
  }

  async page(after: number, until: number, limit: number): Promise<SeqRow[]> {
    if (until <= after) return [];
    // An in-memory instance of this source, left to the garbage collector (see duckdb-db.ts).
    this.conn ??= DuckDBInstance.create(":memory:").then((i) => i.connect());
    const conn = await this.conn;
    for (let attempt = 0; ; attempt++) {
      const manifest = readManifestAt(this.dir);
      if (!manifest || manifest.lastSeq === undefined || manifest.data.length === 0) return [];
      const files = manifest.data.map((f) => join(this.dir, f.file));
      try {
        const from = `read_parquet(${sqlList(files)}, union_by_name = true)`;
        return (await readAll(conn, pageSql(from, after, until, limit))).map(seqRow);
      } catch (e) {
        const gone = files.some((f) => !existsSync(f));
        if (!gone || attempt >= MOVED_FILE_RETRIES) throw e;
      }
    }
  }

  close(): void {
    this.conn = undefined;
  }
}

/** Whether `path`/`table` is a Delta table: its `_delta_log` exists. */
export function isDeltaTable(path: string, table: string): boolean {
  return existsSync(join(path, table, "_delta_log"));
}

/** The reader for `path`/`table`, or undefined while nothing tells the format (no table written yet). */
export function tableReaderOf(path: string, table: string, format: "duckdb" | "parquet" | undefined): TableReader | undefined {
  const file = path.endsWith(".duckdb") ? path : join(path, DUCKDB_FILE);
  if (format === "duckdb" || path.endsWith(".duckdb")) return new DuckDBTableReader(file, table);
  const dir = join(path, table);
  if (format === "parquet") return new ParquetTableReader(dir);
  if (existsSync(file)) return new DuckDBTableReader(file, table);
  if (existsSync(join(dir, META_DIR, MANIFEST_FILE))) return new ParquetTableReader(dir);
  return undefined;
}
