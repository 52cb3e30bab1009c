import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { VARCHAR, type DuckDBConnection, type DuckDBPreparedStatement, type DuckDBType } from "../util/duckdb.js";
import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointStore } from "../checkpoint/types.js";
import { ConfigError, LakeLogicError } from "../errors.js";
import type { GoodColumns } from "../engine/types.js";
import { wellFormedJson } from "../util/well-formed-json.js";
import {
  goodColumnsFit,
  jsonDocument,
  payloadBatch,
  planColumns,
  quoteIdent,
  quoteString,
  type ColumnPlan,
  type PayloadBatch,
} from "./columns.js";
import { DUCKDB_FILE, type LakeConfig } from "./config.js";
import { DuckDBTargetCheckpointStore, ensureCheckpointTable, loadCheckpoint, upsertCheckpoint } from "./duckdb-checkpoint.js";
import { acquireDatabase, type Database } from "./duckdb-db.js";
import { LakeWriteError } from "./errors.js";
import { bytesToBase64, safeJsonText } from "./json.js";
import { QUARANTINE_COLUMNS, quarantineIds } from "./quarantine.js";
import type { LakeWriter, QuarantineRow, WriteRequest, WriteResult, WriteStream } from "./types.js";

/** Column of the existing table and where its values come from (-1: not in the contract → NULL). */
interface TableColumn {
  name: string;
  plan: number;
  vectorType: DuckDBType;
}

/**
 * Good rows, quarantine rows and (optionally) the checkpoint of one batch in ONE DuckDB
 * transaction: after a crash the database shows the whole batch or none of it.
 */
export class DuckDBLakeWriter implements LakeWriter {
  readonly databasePath: string;
  private closed = false;
  private checkpointTableReady = false;
  private prepared: Promise<Statements> | undefined;
  /**
   * Per stream key, how its quarantine rows are kept unique (see `quarantineMode`) and the batch
   * id its next write must have for that to still hold.
   */
  private readonly streams = new Map<string, { lookup: Lookup; next: number }>();
  /** The staging table of appendGood exists on this connection. */
  private stageReady = false;

  private constructor(
    private readonly config: LakeConfig,
    private readonly db: Database,
    private readonly conn: DuckDBConnection,
    private readonly plans: ColumnPlan[],
    private readonly tableColumns: TableColumn[],
    /** Indices into `plans` of the primary-key columns. */
    private readonly keyPlans: number[],
  ) {
    this.databasePath = db.path;
  }

  static async open(config: LakeConfig): Promise<DuckDBLakeWriter> {
    mkdirSync(config.targetPath, { recursive: true });
    const db = await acquireDatabase(join(config.targetPath, DUCKDB_FILE));
    try {
      const conn = await db.connect();
      const plans = planColumns(config);
      const keyPlans = config.primaryKey.map((k) => plans.findIndex((p) => p.name.toLowerCase() === k.toLowerCase()));
      const tableColumns = await db.exclusive(() => prepareTables(conn, config, plans));
      return new DuckDBLakeWriter(config, db, conn, plans, tableColumns, keyPlans);
    } catch (e) {
      db.release();
      throw e;
    }
  }

  /** Checkpoints in this database, sharing the process's DuckDB instance (`checkpoint: "target"`). */
  checkpointStore(): CheckpointStore {
    return new DuckDBTargetCheckpointStore(this.databasePath);
  }

  write(request: WriteRequest): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new LakeWriteError(`lake writer for table "${this.config.table}" is closed`));
    return this.db.exclusive(() => this.writeNow(request));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Wait for a write in flight, then let go of the file.
    await this.db.exclusive(async () => undefined);
    // Prepared statements, like the connection, are left to the garbage collector (duckdb-db.ts).
    this.db.release();
  }

  private async writeNow(req: WriteRequest): Promise<WriteResult> {
    const { config, conn } = this;
    if (req.checkpoint && req.checkpoint.batchId !== req.batchId) {
      throw new LakeWriteError(`checkpoint batchId ${req.checkpoint.batchId} differs from the request's batchId ${req.batchId}`);
    }
    const keyed = config.strategy === "merge" || (config.strategy === "overwrite" && this.keyPlans.length > 0);
    // The JS work comes first: a bad value fails the batch naming its row and column before
    // anything is written, and the transaction is a chain of DuckDB calls with nothing between
    // them (so it holds its locks briefly, and overlaps well with JS work elsewhere).
    const keyPlans = keyed ? this.keyPlans : undefined;
    const columns = this.fittingColumns(req, keyPlans);
    const good = columns ? undefined : this.goodDocument(req, keyPlans);
    const quarantine = this.quarantineDocument(req);
    if (req.checkpoint && !this.checkpointTableReady) {
      await ensureCheckpointTable(conn);
      this.checkpointTableReady = true;
    }
    const s = await this.statements();
    await conn.run("BEGIN TRANSACTION");
    try {
      if (req.checkpoint) {
        // CAS first: a rival writer or an already-committed retry writes nothing at all.
        const outcome = decideCommit(await loadCheckpoint(conn, req.checkpoint.key), req.checkpoint);
        if (outcome === "already-committed") {
          await conn.run("ROLLBACK");
          return { goodWritten: 0, badWritten: 0, badAlreadyPresent: 0, checkpointOutcome: outcome };
        }
      }
      if (config.strategy === "overwrite") await s.truncate.run();
      let goodWritten = 0;
      if (columns) {
        goodWritten = await this.appendGood(s, columns);
      } else if (good) {
        if (config.strategy === "merge") await this.deleteKeys(s.deleteKeys!.rows, good.keysDoc!, good.nullKey);
        s.insert.bindVarchar(1, good.doc);
        goodWritten = (await s.insert.run()).rowsChanged;
      }
      const mode = config.quarantine.enabled && req.stream ? await this.quarantineMode(req.stream, req.batchId) : undefined;
      let badWritten = 0;
      let badAlreadyPresent = 0;
      if (quarantine) {
        const lookup = mode?.lookup ?? "all";
        const bind = (p: DuckDBPreparedStatement): void => {
          p.bindVarchar(1, quarantine.doc);
          p.bindBigInt(2, BigInt(req.batchId));
          p.bindBigInt(3, BigInt(Date.now()) * 1000n);
          if (req.stream) p.bindVarchar(4, req.stream.key);
          else p.bindNull(4);
        };
        // Without a lookup the insert reads no table, so its plan cannot go stale (see Statements).
        badWritten =
          lookup === "none"
            ? await runBound(s.quarantineInsert!, bind)
            : await runPlanned(conn, s.quarantineSql![lookup], bind);
        // Skipped because stored, plus stored by an uncommitted attempt and replaced.
        const replaced = mode ? quarantine.ids.reduce((n, id) => (mode.replaced.has(id) ? n + 1 : n), 0) : 0;
        badAlreadyPresent = Math.min(quarantine.ids.length, quarantine.ids.length - badWritten + replaced);
      }
      if (req.checkpoint) await upsertCheckpoint(conn, req.checkpoint);
      await conn.run("COMMIT");
      if (mode && req.stream) this.streams.set(req.stream.key, { lookup: mode.lookup, next: req.batchId + 1 });
      return {
        goodWritten,
        badWritten,
        badAlreadyPresent,
        ...(req.checkpoint ? { checkpointOutcome: "committed" as const } : {}),
      };
    } catch (e) {
      if (req.stream) this.streams.delete(req.stream.key);
      // A staging table made in this transaction is gone with it.
      this.stageReady = false;
      await conn.run("ROLLBACK").catch(() => undefined);
      if (e instanceof LakeLogicError) throw e;
      throw new LakeWriteError(
        `batch ${req.batchId} was not written to table "${config.table}" in ${this.databasePath} (rolled back): ${(e as Error).message}`,
        { cause: e },
      );
    }
  }

  /**
   * How this write keeps the stream's quarantine rows unique (docs/lake.md, "Quarantine"). A
   * source that may deliver a record again after its batch committed (`"redeliver"`) looks up
   * every stored id. A source that replays everything after its committed cursor can only repeat
   * rows its uncommitted attempts wrote: batches of one stream are written one after another,
   * each after the previous one committed (compare-and-set), so those rows are the stream's rows
   * from this batch id on, and are replaced rather than looked up. This holds from one write to
   * the next; at a stream's first write here (or one that does not follow the last), rows of the
   * stream it cannot account for — all of them before its first commit, else those from this
   * batch id on that are older than the previous commit (a reset or rewound checkpoint, or a
   * first batch that never committed) — are handed over to the table (stream_key NULL), and the
   * stream's writes look up those unowned rows for as long as any exist.
   */
  private async quarantineMode(stream: WriteStream, batchId: number): Promise<{ lookup: Lookup; replaced: Set<string> }> {
    const replaced = new Set<string>();
    if (stream.replay !== "cursor") return { lookup: "all", replaced };
    const known = this.streams.get(stream.key);
    if (known?.next === batchId) return { lookup: known.lookup, replaced };
    const q = quoteIdent(this.config.quarantine.target);
    const since = stream.previousCommittedAt;
    await runPlanned(
      this.conn,
      `UPDATE ${q} SET stream_key = NULL WHERE stream_key = $1` +
        (since === null ? "" : " AND batch_id >= $2 AND quarantined_at < make_timestamp($3::BIGINT)"),
      (p) => {
        p.bindVarchar(1, stream.key);
        if (since !== null) {
          p.bindBigInt(2, BigInt(batchId));
          p.bindBigInt(3, BigInt(since.getTime()) * 1000n);
        }
      },
    );
    const rows = await readPlanned(this.conn, `DELETE FROM ${q} WHERE stream_key = $1 AND batch_id >= $2 RETURNING quarantine_id`, (p) => {
      p.bindVarchar(1, stream.key);
      p.bindBigInt(2, BigInt(batchId));
    });
    for (const [id] of rows) replaced.add(String(id));
    const unowned = await readPlanned(this.conn, `SELECT count(*) FROM ${q} WHERE stream_key IS NULL`, () => undefined);
    return { lookup: Number(unowned[0]?.[0] ?? 0) > 0 ? "unowned" : "none", replaced };
  }

  /**
   * Delete the rows whose key is in the batch's keys document. Keys compare with `=`, which lets
   * DuckDB push the batch's key range into the scan and skip row groups outside it (IS NOT
   * DISTINCT FROM reads every row); only a batch with a NULL key part also runs the
   * NULL-matching form, for those rows.
   */
  private async deleteKeys(del: KeyDelete, doc: string, someNull: boolean): Promise<void> {
    const bind = (p: DuckDBPreparedStatement) => p.bindVarchar(1, doc);
    await runPlanned(this.conn, del.sql, bind);
    if (someNull) await runPlanned(this.conn, del.nullSql, bind);
  }

  /**
   * Does the table hold no key in the range of the batch's first key part? Then a merge has
   * nothing to delete, and one lookup that zone maps mostly answer replaces parsing the keys and
   * joining them with the table — the common case of a stream whose keys grow (order numbers,
   * time-ordered ids). Only without NULL key parts, which the range leaves out.
   */
  private async noneStored(s: Statements, keys: NonNullable<GoodColumns["keys"]>): Promise<boolean> {
    if (!keys.range || keys.someNull) return false;
    const { low, high } = keys.range;
    const rows = await readPlanned(this.conn, s.deleteKeys!.firstInRange, (p) => {
      p.bindVarchar(1, low);
      p.bindVarchar(2, high);
    });
    return rows.length === 0;
  }

  /** The engine's GoodColumns, when they fit the table's contract (goodColumnsFit). */
  private fittingColumns(req: WriteRequest, keyPlans: readonly number[] | undefined): GoodColumns | undefined {
    const good = req.goodColumns;
    return good && good.count > 0 && goodColumnsFit(this.plans, good, keyPlans) ? good : undefined;
  }

  /**
   * Write GoodColumns: the merge deletes the batch's keys (spelt by the engine), then the chunks
   * are appended as they are — no value is converted, spelt or parsed on the way. They go to the
   * table itself when its columns are the contract's, in order; else (a table that kept columns
   * of dropped fields, or added new ones at its end) to a staging table of this connection, from
   * which one INSERT fills the table's columns by name. The appender joins the open transaction,
   * so a rollback takes its rows back too.
   */
  private async appendGood(s: Statements, good: GoodColumns): Promise<number> {
    const { conn, config, plans } = this;
    if (config.strategy === "merge" && !(await this.noneStored(s, good.keys!))) {
      await this.deleteKeys(s.deleteKeys!.text, good.keys!.doc!, good.keys!.someNull);
    }
    // The appender fills every column of its table, in order.
    const direct = this.tableColumns.length === plans.length && this.tableColumns.every((c, i) => c.plan === i);
    if (!direct) await this.ensureStage();
    const appender = direct ? await conn.createAppender(config.table) : await conn.createAppender(STAGE_TABLE, "main", "temp");
    try {
      for (const chunk of good.chunks) appender.appendDataChunk(chunk);
    } finally {
      appender.closeSync();
    }
    if (direct) return good.count;
    const written = await runPlanned(conn, s.insertFromStage, () => undefined);
    await conn.run(`DELETE FROM ${STAGE}`);
    return written;
  }

  /** This connection's staging table: the contract's columns, in contract order (made once). */
  private async ensureStage(): Promise<void> {
    if (this.stageReady) return;
    const columns = this.plans.map((p, i) => `c${i} ${p.sqlType}`).join(", ");
    await this.conn.run(`CREATE OR REPLACE TEMP TABLE ${STAGE_TABLE} (${columns})`);
    this.stageReady = true;
  }

  /** The good rows as one document spelt from the rows (none to spell when GoodColumns say so). */
  private goodDocument(req: WriteRequest, keyPlans: readonly number[] | undefined): PayloadBatch | undefined {
    if (req.goodColumns?.count === 0) return undefined;
    return req.good.length > 0 ? payloadBatch(this.plans, req.good, keyPlans) : undefined;
  }

  private quarantineDocument(req: WriteRequest): QuarantineDocument | undefined {
    const q = this.config.quarantine;
    if (!q.enabled || req.bad.length === 0) return undefined;
    return quarantineDocument(req.bad, q.includeErrorReason);
  }

  /** The statements, built once per writer: only the JSON documents change per batch. */
  private statements(): Promise<Statements> {
    this.prepared ??= prepareStatements(this.conn, this.config, this.plans, this.tableColumns, this.keyPlans).catch((e: unknown) => {
      this.prepared = undefined;
      throw e;
    });
    return this.prepared;
  }
}

/**
 * A writer's statements. Only those that read nothing but the bound document (or delete a
 * whole table) are prepared: DuckDB plans a prepared statement with the table statistics of
 * the moment it was prepared and does not re-plan when they change, and a stale plan can give
 * wrong results (measured on 1.5.6: an ORDER BY over a temp table, prepared while it was
 * empty, returned truncated strings). Statements that read a table are planned per batch.
 */
interface Statements {
  truncate: DuckDBPreparedStatement;
  /** $1 the batch document (spelt from the rows): insert its rows. */
  insert: DuckDBPreparedStatement;
  /** Fill the table from the staging table (GoodColumns for a table that is not the contract's layout). */
  insertFromStage: string;
  /**
   * Merge: delete by a keys document spelt from the rows (PayloadBatch.keysDoc) or by the engine
   * (GoodColumns.keys.doc); `firstInRange`: $1, $2 the first key part's range as text, select a
   * stored row in it (GoodColumns.keys.range).
   */
  deleteKeys?: { rows: KeyDelete; text: KeyDelete; firstInRange: string };
  /** Insert the quarantine rows, looking up their ids among the stored rows `Lookup` says. */
  quarantineSql?: Record<Exclude<Lookup, "none">, string>;
  /** Insert the quarantine rows without a lookup (prepared once: it reads no table). */
  quarantineInsert?: DuckDBPreparedStatement;
}

/**
 * Which stored quarantine rows an insert looks its ids up in (see quarantineMode): every row,
 * the rows no stream owns (stream_key NULL), or none.
 */
type Lookup = "all" | "unowned" | "none";

/** $1 a keys document: delete the table's rows with those keys (`nullSql`: the keys with a NULL part). */
interface KeyDelete {
  sql: string;
  nullSql: string;
}

async function prepareStatements(
  conn: DuckDBConnection,
  config: LakeConfig,
  plans: readonly ColumnPlan[],
  tableColumns: readonly TableColumn[],
  keyPlans: readonly number[],
): Promise<Statements> {
  const table = quoteIdent(config.table);
  // Table columns the contract fills; the others (fields since dropped) default to NULL.
  const filled = tableColumns.filter((c) => c.plan >= 0);
  const select = (which: readonly number[]) => documentSelect(plans, which);
  const insertFrom = (source: string) =>
    `INSERT INTO ${table} (${filled.map((c) => quoteIdent(c.name)).join(", ")}) SELECT ${filled.map((c) => `c${c.plan}`).join(", ")} FROM ${source}`;
  const s: Statements = {
    truncate: await conn.prepare(`DELETE FROM ${table}`),
    insert: await conn.prepare(insertFrom(`(${select(plans.map((_, i) => i))})`)),
    insertFromStage: insertFrom(STAGE),
  };
  if (config.strategy === "merge") {
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
    s.deleteKeys = {
      rows: keyDelete(`(${select(keyPlans)}) AS s`, (p) => `s.c${p}`),
      text: keyDelete(textKeys, (p, i) => `CAST(s.k${i} AS ${plans[p]!.sqlType})`),
      firstInRange:
        `SELECT 1 FROM ${table} WHERE ${quoteIdent(first.name)} ` +
        `BETWEEN CAST($1::VARCHAR AS ${first.sqlType}) AND CAST($2::VARCHAR AS ${first.sqlType}) LIMIT 1`,
    };
  }
  if (config.quarantine.enabled) {
    const target = config.quarantine.target;
    s.quarantineSql = {
      all: quarantineInsertSql(target, "all"),
      unowned: quarantineInsertSql(target, "unowned"),
    };
    s.quarantineInsert = await conn.prepare(quarantineInsertSql(target, "none"));
  }
  return s;
}

/** The DuckDB writer's staging table for GoodColumns (a temporary table: one per connection). */
const STAGE_TABLE = "lakelogic_stage";
const STAGE = `temp.main.${STAGE_TABLE}`;

/**
 * Run a statement that reads a table, prepared now so that DuckDB plans it with the table's
 * current statistics (see Statements), with its parameters bound on the prepared statement.
 * `conn.run(sql, [doc])` would be simpler but costs ~2–4 ms more per statement and 10k-row batch
 * (measured on 1.5.6): a value passed that way is folded into the plan as a constant and copied
 * with it; preparing costs ~0.4 ms. Returns the rows changed.
 */
async function runPlanned(conn: DuckDBConnection, sql: string, bind: (p: DuckDBPreparedStatement) => void): Promise<number> {
  const p = await conn.prepare(sql);
  try {
    return await runBound(p, bind);
  } finally {
    p.destroySync();
  }
}

/** Bind a prepared statement's parameters and run it; returns the rows changed. */
async function runBound(p: DuckDBPreparedStatement, bind: (p: DuckDBPreparedStatement) => void): Promise<number> {
  bind(p);
  return (await p.run()).rowsChanged;
}

/** runPlanned for a statement that returns rows (few of them). */
async function readPlanned(conn: DuckDBConnection, sql: string, bind: (p: DuckDBPreparedStatement) => void): Promise<unknown[][]> {
  const p = await conn.prepare(sql);
  try {
    bind(p);
    return (await p.runAndReadAll()).getRows();
  } finally {
    p.destroySync();
  }
}

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
function documentSelect(plans: readonly ColumnPlan[], which: readonly number[]): string {
  const struct = `{${which.map((i) => `"c${i}":["${plans[i]!.payload.jsonType}"]`).join(",")}}`;
  return (
    `SELECT ${which.map((i) => `${plans[i]!.payload.sql(`r.c${i}`)} AS c${i}`).join(", ")} FROM ` +
    `(SELECT ${which.map((i) => `unnest(j.c${i}) AS c${i}`).join(", ")} ` +
    `FROM (SELECT from_json_strict((SELECT $1::VARCHAR), ${quoteString(struct)}) AS j)) AS r`
  );
}

const QUARANTINE_STRUCT =
  '{"id":["VARCHAR"],"record":["VARCHAR"],"raw":["VARCHAR"],"enc":["VARCHAR"],"reasons":[["VARCHAR"]],"rules":[["VARCHAR"]],"pos":["VARCHAR"]}';

/**
 * The duckdb quarantine table: the columns every format has, then the checkpoint key of the
 * stream that wrote the row (NULL for direct writes). Tables made before it existed get it added.
 */
const DUCKDB_QUARANTINE_COLUMNS: ReadonlyArray<{ name: string; sqlType: string }> = [
  ...QUARANTINE_COLUMNS,
  { name: "stream_key", sqlType: "VARCHAR" },
];

/**
 * $1 the quarantine document, $2 the batch id, $3 the time (µs), $4 the stream key or NULL.
 * Rows whose id is among the stored rows `lookup` names are left out.
 */
function quarantineInsertSql(target: string, lookup: Lookup): string {
  const q = quoteIdent(target);
  const cols = DUCKDB_QUARANTINE_COLUMNS.map((c) => c.name).join(", ");
  return `INSERT INTO ${q} (${cols})
    SELECT s.id, $2::BIGINT, CAST(s.record AS JSON), s.raw, s.enc, s.reasons, s.rules, CAST(s.pos AS JSON), make_timestamp($3::BIGINT), $4::VARCHAR
    FROM (SELECT unnest(j.id) AS id, unnest(j.record) AS record, unnest(j.raw) AS raw, unnest(j.enc) AS enc,
                 unnest(j.reasons) AS reasons, unnest(j.rules) AS rules, unnest(j.pos) AS pos
          FROM (SELECT from_json_strict((SELECT $1::VARCHAR), '${QUARANTINE_STRUCT}') AS j)) AS s` +
    (lookup === "none"
      ? ""
      : `\n    WHERE NOT EXISTS (SELECT 1 FROM ${q} AS q WHERE ${lookup === "unowned" ? "q.stream_key IS NULL AND " : ""}q.quarantine_id = s.id)`);
}

interface QuarantineDocument {
  ids: string[];
  doc: string;
}

/** A request's bad rows as one JSON document for `quarantineInsertSql`, with their ids. */
function quarantineDocument(rows: readonly QuarantineRow[], includeErrorReason: boolean): QuarantineDocument {
  const ids = quarantineIds(rows);
  const n = rows.length;
  const record = new Array<string | null>(n);
  const raw = new Array<string | null>(n);
  const enc = new Array<string | null>(n);
  const reasons = new Array<string[] | null>(n);
  const rules = new Array<string[]>(n);
  const pos = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    // DuckDB's JSON type refuses escaped lone surrogates: a poison record must still get in (I6).
    record[i] = r.record === undefined ? null : wellFormedJson(safeJsonText(r.record));
    raw[i] = r.raw === undefined ? null : typeof r.raw === "string" ? r.raw : bytesToBase64(r.raw);
    enc[i] = r.raw === undefined ? null : typeof r.raw === "string" ? "text" : "base64";
    reasons[i] = includeErrorReason ? r.errors.map((e) => e.message) : null;
    rules[i] = r.errors.map((e) => e.ruleId);
    pos[i] = r.position === undefined ? null : wellFormedJson(safeJsonText(r.position));
  }
  return { ids, doc: jsonDocument({ id: ids, record, raw, enc, reasons, rules, pos }) };
}

function normType(t: string): string {
  return t.toUpperCase().replace(/\s+/g, "");
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

/** Create or reconcile the good, quarantine and staging tables; return the good table's layout. */
async function prepareTables(
  conn: DuckDBConnection,
  config: LakeConfig,
  plans: readonly ColumnPlan[],
): Promise<TableColumn[]> {
  const table = quoteIdent(config.table);
  await conn.run(`CREATE TABLE IF NOT EXISTS ${table} (${plans.map((p) => `${quoteIdent(p.name)} ${p.sqlType}`).join(", ")})`);
  let existing = await tableColumnsOf(conn, config.table);
  const byName = new Map(existing.map((c) => [c.name.toLowerCase(), c]));
  let altered = false;
  for (const p of plans) {
    const col = byName.get(p.name.toLowerCase());
    if (!col) {
      // A field added to the contract: add the column (old rows read NULL).
      await conn.run(`ALTER TABLE ${table} ADD COLUMN ${quoteIdent(p.name)} ${p.sqlType}`);
      altered = true;
    } else if (normType(col.type) !== normType(p.sqlType)) {
      throw new ConfigError(
        `model.fields.${p.name}`,
        `table "${config.table}" already has column "${col.name}" of type ${col.type}, but the contract maps it to ${p.sqlType}; ` +
          "migrate the table (or write to a new table) before changing a field's type",
      );
    }
  }
  if (altered) existing = await tableColumnsOf(conn, config.table);
  const layout: TableColumn[] = existing.map((c) => {
    const plan = plans.findIndex((p) => p.name.toLowerCase() === c.name.toLowerCase());
    return { name: c.name, plan, vectorType: plan >= 0 ? plans[plan]!.vectorType : VARCHAR };
  });

  if (config.quarantine.enabled) {
    const q = quoteIdent(config.quarantine.target);
    await conn.run(`CREATE TABLE IF NOT EXISTS ${q} (${DUCKDB_QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
    let qCols = (await tableColumnsOf(conn, config.quarantine.target)).map((c) => c.name);
    if (qCols.join(",") === QUARANTINE_COLUMNS.map((c) => c.name).join(",")) {
      // Made before rows carried their stream: add the column (old rows read NULL).
      const added = DUCKDB_QUARANTINE_COLUMNS[DUCKDB_QUARANTINE_COLUMNS.length - 1]!;
      await conn.run(`ALTER TABLE ${q} ADD COLUMN ${added.name} ${added.sqlType}`);
      qCols = (await tableColumnsOf(conn, config.quarantine.target)).map((c) => c.name);
    }
    const expected = DUCKDB_QUARANTINE_COLUMNS.map((c) => c.name);
    if (qCols.join(",") !== expected.join(",")) {
      throw new ConfigError(
        "quarantine.target",
        `table "${config.quarantine.target}" exists with columns (${qCols.join(", ")}), not a LakeLogic quarantine table (${expected.join(", ")}); choose another quarantine.target`,
      );
    }
  }
  return layout;
}
