import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Row } from "../../engine/types.js";
import { EXTRA_COLUMN } from "../../lake/config.js";
import { DeltaHelper } from "../../lake/delta-helper.js";
import { storageOptions } from "../../lake/delta-writer.js";
import { readAll } from "../../lake/read.js";
import { DuckDBInstance, type DuckDBConnection } from "../../util/duckdb.js";
import { parseJsonRecord } from "../../util/exact-json.js";
import { quoteIdent, quoteString } from "../../util/sql-text.js";

/**
 * A position in a Delta table's history: `row` rows of table version `version` were read (every
 * row of the versions before it too). The rows of a version come in the same order on every read
 * (delta/helper.py `changed_rows`), so a read resumes exactly after the position.
 */
export interface DeltaPosition {
  version: number;
  row: number;
}

/** A row a version added, and the position just after it. */
export interface DeltaChange {
  row: Row;
  position: DeltaPosition;
}

// The columns delta/helper.py adds to each row it hands over: where the row is in the history.
const VERSION_COLUMN = "__lakelogic_version";
const ROW_COLUMN = "__lakelogic_row";

/**
 * A Delta table's changes, version by version, through the Delta helper (delta-rs): for each
 * version the rows it inserted or changed — from its change-data files where the table records a
 * Change Data Feed, else from the files it added with `dataChange` (docs/connectors.md). Pages come
 * over as Parquet files read by DuckDB, so values take the same forms as the other lake formats.
 */
export class DeltaChangesReader {
  private helper: DeltaHelper | undefined;
  private conn: Promise<DuckDBConnection> | undefined;
  private dir: string | undefined;
  private pages = 0;
  /** Versions up to this one hold no row after the position the last page began at. */
  private emptyThrough: { from: DeltaPosition; version: number } | undefined;

  constructor(private readonly uri: string) {}

  /** The table's current version; -1 while it does not exist. */
  async latest(): Promise<number> {
    const reply = await this.request<{ version: number | null }>("latest", {});
    return reply.version ?? -1;
  }

  /** Up to `limit` rows after `after` (undefined: from the first version) through version `until`. */
  async page(after: DeltaPosition | undefined, until: number, limit: number): Promise<DeltaChange[]> {
    let from = after ?? { version: 0, row: 0 };
    // Versions already found empty after this very position are not read again on each poll.
    const skip = this.emptyThrough;
    if (skip && samePosition(skip.from, from) && skip.version >= from.version) from = { version: skip.version + 1, row: 0 };
    if (from.version > until) return [];
    this.dir ??= mkdtempSync(join(tmpdir(), "lakelogic-delta-source-"));
    const out = join(this.dir, `page-${this.pages++}.parquet`);
    try {
      const reply = await this.request<{ rows: number; scanned: number }>("changes", { version: from.version, row: from.row, until, limit, out });
      if (reply.rows === 0) {
        if (reply.scanned >= 0) this.emptyThrough = { from: after ?? { version: 0, row: 0 }, version: reply.scanned };
        return [];
      }
      this.emptyThrough = undefined;
      return (await this.readPage(out)).map(change);
    } finally {
      rmSync(out, { force: true });
    }
  }

  async close(): Promise<void> {
    const helper = this.helper;
    this.helper = undefined;
    this.conn = undefined;
    await helper?.close();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }

  private async request<T>(op: string, body: Record<string, unknown>): Promise<T> {
    this.helper ??= DeltaHelper.start();
    return this.helper.request<T>(op, { uri: this.uri, storage: storageOptions(this.uri), ...body });
  }

  private async readPage(file: string): Promise<Row[]> {
    // An in-memory instance of this source, left to the garbage collector (see duckdb-db.ts).
    this.conn ??= DuckDBInstance.create(":memory:").then(async (i) => {
      const c = await i.connect();
      await c.run("SET TimeZone = 'UTC'");
      return c;
    });
    const conn = await this.conn;
    return readAll(conn, `SELECT * FROM read_parquet(${quoteString(file)}) ORDER BY ${quoteIdent(VERSION_COLUMN)}, ${quoteIdent(ROW_COLUMN)}`);
  }
}

function samePosition(a: DeltaPosition, b: DeltaPosition): boolean {
  return a.version === b.version && a.row === b.row;
}

/** The record and its position; undeclared keys a LakeLogic writer kept in `_extra` (JSON text in Delta) come back out. */
function change(stored: Row): DeltaChange {
  const { [VERSION_COLUMN]: version, [ROW_COLUMN]: row, ...record } = stored;
  const extra = record[EXTRA_COLUMN];
  if (extra === null || typeof extra === "string") {
    const parsed = typeof extra === "string" ? safeParse(extra) : null;
    if (parsed === null || (typeof parsed === "object" && !Array.isArray(parsed))) {
      delete record[EXTRA_COLUMN];
      if (parsed) Object.assign(record, parsed);
    }
  }
  return { row: record, position: { version: Number(version), row: Number(row) } };
}

function safeParse(text: string): unknown {
  try {
    return parseJsonRecord(text);
  } catch {
    return undefined;
  }
}
