import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DuckDBConnection, DuckDBPreparedStatement } from "../util/duckdb.js";
import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointStore } from "../checkpoint/types.js";
import { LakeLogicError } from "../errors.js";
import type { GoodChunks, GoodColumns, GoodParquet } from "../engine/types.js";
import { quoteIdent } from "../util/sql-text.js";
import { commitOf, ensureCommitsTable, loadCommit, upsertCommit } from "./commit-log.js";
import { goodColumnsFit, planColumns, type ColumnPlan } from "./columns.js";
import { DUCKDB_FILE, type LakeConfig } from "./config.js";
import { DuckDBTargetCheckpointStore, ensureCheckpointTable, loadCheckpoint, upsertCheckpoint } from "./duckdb-checkpoint.js";
import { acquireDatabase, type Database } from "./duckdb-db.js";
import type { KeyDelete } from "./duckdb-merge.js";
import { quarantineDocument, type Lookup, type QuarantineDocument } from "./duckdb-quarantine.js";
import { quarantineListingTable, removeUnlisted, writeStagedQuarantine } from "./duckdb-quarantine-files.js";
import { readPlanned, runBound, runPlanned } from "./duckdb-run.js";
import { prepareStatements, STAGE, STAGE_TABLE, type Statements } from "./duckdb-statements.js";
import { prepareTables, type TableColumn } from "./duckdb-tables.js";
import { LakeWriteError } from "./errors.js";
import { keysBatch, payloadBatch, type PayloadBatch } from "./payload-batch.js";
import { ensureSeqTable, loadSeq, numberRows, SEQ_COLUMN, storeSeq } from "./row-seq.js";
import { ensureTablesTable, recordOf, sameRecord, storeTableRecord, type TableRecord } from "./table-contract.js";
import type { LakeCommit, LakeWriter, WriteRequest, WriteResult, WriteStream } from "./types.js";

/** @internal Crash tests stop a write here. */
export interface DuckDBWriterHooks {
  /** Everything of the batch is written (its quarantine file too), COMMIT is next. */
  beforeCommit?: (batchId: number) => Promise<void> | void;
}

/**
 * Good rows, quarantine rows and (optionally) the checkpoint of one batch in ONE DuckDB
 * transaction: after a crash the database shows the whole batch or none of it. A quarantine
 * under a path is a Parquet file per batch, written before COMMIT and listed in the same
 * transaction (duckdb-quarantine-files.ts): it counts exactly when the batch does.
 */
export class DuckDBLakeWriter implements LakeWriter {
  readonly databasePath: string;
  /** @internal See DuckDBWriterHooks. */
  readonly hooks: DuckDBWriterHooks = {};
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
  /** The table's columns are the contract's, in order, then the row sequence: GoodColumns append to it directly. */
  private readonly direct: boolean;
  /** What the table was last written with differs from this contract's (table-contract.ts): the next batch records it. */
  private recordStale: boolean;
  /** Where GoodParquet files are put for DuckDB to read (made at the first): this writer's own. */
  private stageDir: string | undefined;
  private staged = 0;

  private constructor(
    private readonly config: LakeConfig,
    private readonly db: Database,
    private readonly conn: DuckDBConnection,
    private readonly plans: ColumnPlan[],
    private readonly tableColumns: TableColumn[],
    /** Indices into `plans` of the primary-key columns. */
    private readonly keyPlans: number[],
    stored: TableRecord | undefined,
  ) {
    this.databasePath = db.path;
    this.recordStale = !sameRecord(stored, recordOf(config));
    this.direct =
      tableColumns.length === plans.length + 1 &&
      tableColumns.every((c, i) => (i < plans.length ? c.plan === i : c.name === SEQ_COLUMN));
  }

  static async open(config: LakeConfig): Promise<DuckDBLakeWriter> {
    mkdirSync(config.targetPath, { recursive: true });
    const db = await acquireDatabase(join(config.targetPath, DUCKDB_FILE));
    try {
      const conn = await db.connect();
      const plans = planColumns(config);
      const keyPlans = config.primaryKey.map((k) => plans.findIndex((p) => p.name.toLowerCase() === k.toLowerCase()));
      const { layout, record } = await db.exclusive(async () => {
        await ensureCommitsTable(conn);
        await ensureSeqTable(conn);
        await ensureTablesTable(conn);
        return prepareTables(conn, config, plans);
      });
      return new DuckDBLakeWriter(config, db, conn, plans, layout, keyPlans, record);
    } catch (e) {
      db.release();
      throw e;
    }
  }

  /** Checkpoints in this database, sharing the process's DuckDB instance (`checkpoint: "target"`). */
  checkpointStore(): CheckpointStore {
    return new DuckDBTargetCheckpointStore(this.databasePath);
  }

  /** The stream's newest batch in this table, from the commit log its writes keep. */
  lastCommit(key: string): Promise<LakeCommit | undefined> {
    if (this.closed) return Promise.reject(new LakeWriteError(`lake writer for table "${this.config.table}" is closed`, { retriable: true }));
    return this.db.exclusive(() => loadCommit(this.conn, this.config.table, key));
  }

  write(request: WriteRequest): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new LakeWriteError(`lake writer for table "${this.config.table}" is closed`, { retriable: true }));
    return this.db.exclusive(() => this.writeNow(request));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Wait for a write in flight, then let go of the file.
    await this.db.exclusive(async () => undefined);
    // Prepared statements, like the connection, are left to the garbage collector (duckdb-db.ts).
    this.db.release();
    if (this.stageDir !== undefined) rmSync(this.stageDir, { recursive: true, force: true });
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
    const deletes = this.deletesDocument(req);
    const quarantine = this.quarantineDocument(req);
    if (req.checkpoint && !this.checkpointTableReady) {
      await ensureCheckpointTable(conn);
      this.checkpointTableReady = true;
    }
    const s = await this.statements();
    // A quarantine file written for this batch, and whether COMMIT was issued (after which the
    // file may be listed: it is then left to the next open, which keeps it if it is).
    let file: string | undefined;
    let committing = false;
    let replacedFiles: Set<string> | undefined;
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
      const seq = columns || good ? await loadSeq(conn, config.table) : 0;
      if (columns) {
        goodWritten = await this.appendGood(s, columns, seq);
      } else if (good) {
        if (config.strategy === "merge") await this.deleteKeys(s.deleteKeys!.rows, good.keysDoc!, good.nullKey);
        s.insert.bindVarchar(1, good.doc);
        s.insert.bindBigInt(2, BigInt(seq));
        goodWritten = (await s.insert.run()).rowsChanged;
      }
      if (goodWritten > 0) await storeSeq(conn, config.table, seq + goodWritten);
      // After the good rows: the batch's deletes come after its other records.
      if (deletes) await this.deleteKeys(s.deleteKeys!.rows, deletes.keysDoc, deletes.nullKey);
      const mode = config.quarantine.enabled && req.stream ? await this.quarantineMode(req.stream, req.batchId) : undefined;
      replacedFiles = mode?.files;
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
        const dir = config.quarantine.dir;
        if (dir !== undefined) await writeStagedQuarantine(conn, config.table, dir, req.batchId, badWritten, (f) => (file = f));
      }
      const logged = commitOf(req);
      if (logged) await upsertCommit(conn, config.table, logged.key, logged.commit);
      if (req.checkpoint) await upsertCheckpoint(conn, req.checkpoint);
      if (this.recordStale) await storeTableRecord(conn, config.table, recordOf(config));
      await this.hooks.beforeCommit?.(req.batchId);
      committing = true;
      await conn.run("COMMIT");
      this.recordStale = false;
      if (mode && req.stream) this.streams.set(req.stream.key, { lookup: mode.lookup, next: req.batchId + 1 });
      if (replacedFiles?.size) await removeUnlisted(conn, config.table, config.quarantine.dir!, replacedFiles);
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
      if (file !== undefined && !committing) rmSync(file, { force: true });
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
  private async quarantineMode(
    stream: WriteStream,
    batchId: number,
  ): Promise<{ lookup: Lookup; replaced: Set<string>; files?: Set<string> }> {
    const replaced = new Set<string>();
    if (stream.replay !== "cursor") return { lookup: "all", replaced };
    const known = this.streams.get(stream.key);
    if (known?.next === batchId) return { lookup: known.lookup, replaced };
    // Under a path, the listing holds the columns this needs, and the replaced rows' files.
    const path = this.config.quarantine.dir !== undefined;
    const q = quoteIdent(path ? quarantineListingTable(this.config.table) : this.config.quarantine.target);
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
    const returning = path ? "quarantine_id, file" : "quarantine_id";
    const rows = await readPlanned(this.conn, `DELETE FROM ${q} WHERE stream_key = $1 AND batch_id >= $2 RETURNING ${returning}`, (p) => {
      p.bindVarchar(1, stream.key);
      p.bindBigInt(2, BigInt(batchId));
    });
    for (const [id] of rows) replaced.add(String(id));
    const unowned = await readPlanned(this.conn, `SELECT count(*) FROM ${q} WHERE stream_key IS NULL`, () => undefined);
    const lookup = Number(unowned[0]?.[0] ?? 0) > 0 ? "unowned" : "none";
    return { lookup, replaced, ...(path ? { files: new Set(rows.map((r) => String(r[1]))) } : {}) };
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
  private async noneStored(s: Statements, range: { low: string; high: string } | undefined, someNull: boolean): Promise<boolean> {
    if (!range || someNull) return false;
    const { low, high } = range;
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
   * Write GoodChunks: the merge deletes the batch's keys (spelt by the engine), the chunks' row
   * slot is filled with the rows' sequence numbers after `seq` (row-seq.ts), and the chunks are
   * appended as they are — no value is converted, spelt or parsed on the way — to the table when
   * its columns are the contract's then the sequence number (the usual case), else to a staging
   * table of this connection, from which one INSERT fills the table's columns by name. The
   * appender joins the open transaction, so a rollback takes its rows back too.
   */
  private async appendGood(s: Statements, good: GoodColumns, seq: number): Promise<number> {
    if (good.writeParquet) return this.insertParquet(s, good, seq);
    return this.appendChunks(s, good, seq);
  }

  private async appendChunks(s: Statements, good: GoodChunks, seq: number): Promise<number> {
    const { conn, config } = this;
    if (config.strategy === "merge" && !(await this.noneStored(s, good.keys!.range, good.keys!.someNull))) {
      await this.deleteKeys(s.deleteKeys!.text, good.keys!.doc!, good.keys!.someNull);
    }
    numberRows(good.chunks, this.plans.length, seq);
    if (!this.direct) await this.ensureStage();
    // The appender fills every column of its table, in order.
    const appender = this.direct ? await conn.createAppender(config.table) : await conn.createAppender(STAGE_TABLE, "main", "temp");
    try {
      for (const chunk of good.chunks) appender.appendDataChunk(chunk);
    } finally {
      appender.closeSync();
    }
    if (this.direct) return good.count;
    const written = await runPlanned(conn, s.insertFromStage, () => undefined);
    await conn.run(`DELETE FROM ${STAGE}`);
    return written;
  }

  /**
   * Write GoodParquet: the engine writes the file in this writer's stage directory, DuckDB reads
   * it natively — the merge's keys (their range first, as for chunks), then the rows, numbered
   * after `seq` in file order — and it is removed. Measured on 10,000 order rows: the insert
   * ~20 ms on DuckDB's thread, as appending the same rows as chunks.
   */
  private async insertParquet(s: Statements, good: GoodParquet, seq: number): Promise<number> {
    const { conn, config } = this;
    this.stageDir ??= mkdtempSync(join(tmpdir(), "lakelogic-duckdb-"));
    const file = join(this.stageDir, `good-${++this.staged}.parquet`);
    const bindFile = (p: DuckDBPreparedStatement) => p.bindVarchar(1, file);
    try {
      await good.writeParquet(file);
      if (config.strategy === "merge") {
        const del = s.deleteKeys!;
        const [low, high, someNull] = (await readPlanned(conn, del.parquetKeys, bindFile))[0] as [string | null, string | null, boolean | null];
        const range = low !== null && high !== null ? { low, high } : undefined;
        if (!(await this.noneStored(s, range, someNull === true))) await this.deleteKeys(del.parquet, file, someNull === true);
      }
      return await runPlanned(conn, s.insertFromParquet, (p) => {
        bindFile(p);
        p.bindBigInt(2, BigInt(seq));
      });
    } finally {
      rmSync(file, { force: true });
    }
  }

  /** This connection's staging table: the contract's columns, in contract order, and the row slot (made once). */
  private async ensureStage(): Promise<void> {
    if (this.stageReady) return;
    const columns = [...this.plans.map((p, i) => `c${i} ${p.sqlType}`), `c${this.plans.length} BIGINT`].join(", ");
    await this.conn.run(`CREATE OR REPLACE TEMP TABLE ${STAGE_TABLE} (${columns})`);
    this.stageReady = true;
  }

  /** The good rows as one document spelt from the rows (none to spell when GoodColumns say so). */
  private goodDocument(req: WriteRequest, keyPlans: readonly number[] | undefined): PayloadBatch | undefined {
    if (req.goodColumns?.count === 0) return undefined;
    return req.good.length > 0 ? payloadBatch(this.plans, req.good, keyPlans) : undefined;
  }

  /** The keys the batch deletes, spelt like the merge's (merge targets only). */
  private deletesDocument(req: WriteRequest): { keysDoc: string; nullKey: boolean } | undefined {
    if (!req.deletes || req.deletes.length === 0) return undefined;
    if (this.config.strategy !== "merge" || this.keyPlans.length === 0) {
      throw new LakeWriteError(`batch ${req.batchId} deletes keys, but table "${this.config.table}" is not a merge target with a primary key`);
    }
    return keysBatch(this.plans, req.deletes, this.keyPlans);
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
