import type { DuckDBConnection } from "../util/duckdb.js";
import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointRecord, CheckpointStore } from "../checkpoint/types.js";
import { LakeLogicError } from "../errors.js";
import { redactText } from "../util/redact.js";
import { quoteIdent } from "../util/sql-text.js";
import { planColumns, type ColumnPlan } from "./columns.js";
import { duckLakeWhere, type DuckLakeLocation, type LakeConfig } from "./config.js";
import { commitOf } from "./commit-log.js";
import { attachDuckLake, isConflict, lakeTable, LAKE_ALIAS, withConflictRetry, type AttachedLake } from "./ducklake-catalog.js";
import { LakeWriteError } from "./errors.js";
import { QUARANTINE_COLUMNS } from "./quarantine.js";
import { BatchStage } from "./stage.js";
import { decodeCheckpoint, encodeCommit, TableCheckpointStore, type EncodedCheckpoint } from "./table-checkpoint.js";
import { checkTableContract, recordOf, sameRecord, type StoredColumn, type TableRecord } from "./table-contract.js";
import type { LakeCommit, LakeWriter, WriteRequest, WriteResult } from "./types.js";

/** One row per stream in the catalog: its newest batch, cursor digest and (checkpoint: "target") checkpoint. */
export const STREAMS_TABLE = "_lakelogic_streams";
/** The primary key and strategy each table was written with (table-contract.ts). */
const TABLES_TABLE = "_lakelogic_tables";

/** The newest batch of a stream the catalog holds. */
export interface Held {
  batchId: number;
  cursorDigest?: string;
  record?: CheckpointRecord;
}

/**
 * The newest batch of stream `key` in the DuckLake attached on `conn`, undefined before its first
 * (`where` names the lake in messages).
 */
export async function loadDuckLakeHeld(conn: DuckDBConnection, key: string, where: string): Promise<Held | undefined> {
  const reader = await conn.runAndReadAll(
    `SELECT batch_id, cursor_digest, checkpoint FROM ${LAKE_ALIAS}.main.${quoteIdent(STREAMS_TABLE)} WHERE stream_key = $1 ORDER BY batch_id DESC LIMIT 1`,
    [key],
  );
  const row = reader.getRows()[0];
  const batchId = row === undefined ? 0 : Number(row[0]);
  if (batchId === 0) return undefined;
  const digest = row![1] === null ? undefined : String(row![1]);
  const checkpoint = row![2] === null ? undefined : (JSON.parse(String(row![2])) as EncodedCheckpoint);
  return {
    batchId,
    ...(digest !== undefined ? { cursorDigest: digest } : {}),
    ...(checkpoint ? { record: decodeCheckpoint(checkpoint, key, batchId, where) } : {}),
  };
}

/**
 * DuckDB's DuckLake: tables in a catalog (PostgreSQL for several writers and machines, or a DuckDB
 * file for one process), data files in a directory or on object storage.
 *
 *   lake.<schema>.<table>                 the table
 *   lake.<schema>.<quarantine.target>     the quarantine
 *   lake.main._lakelogic_streams          each stream's newest batch (and checkpoint)
 *
 * A batch is staged in the connection's in-memory database, then ONE catalog transaction reads
 * the stream's row, writes the rows (a merge deletes the batch's keys first: DuckLake enforces
 * no keys), inserts quarantine rows under ids the quarantine lacks, and replaces the stream's
 * row. DuckLake decides conflicts at commit on what the transactions changed; every batch of a
 * stream replaces its row, so two writers of one stream always conflict, and the loser rolls
 * back and starts again from reading the row — where it finds the rival's batch (fenced:
 * CheckpointConflictError) or, having lost to another stream, writes again. Never a blind retry.
 */
export class DuckLakeWriter implements LakeWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private store?: TableCheckpointStore;
  /** Stream keys whose row exists in the catalog (seeded before their first batch). */
  private readonly seeded = new Set<string>();
  private recordStale: boolean;
  private readonly table: string;
  private readonly quarantine: string;
  private readonly streams: string;
  private readonly where: string;

  private constructor(
    private readonly config: LakeConfig,
    private readonly location: DuckLakeLocation,
    private readonly conn: DuckDBConnection,
    private readonly lake: AttachedLake,
    private readonly stage: BatchStage,
    private readonly plans: ColumnPlan[],
    private readonly keyPlans: number[],
    stored: TableRecord | undefined,
  ) {
    this.recordStale = !sameRecord(stored, recordOf(config));
    this.table = lakeTable(location, config.table);
    this.quarantine = lakeTable(location, config.quarantine.target);
    this.streams = `${LAKE_ALIAS}.main.${quoteIdent(STREAMS_TABLE)}`;
    this.where = describeDuckLake(location);
  }

  static async open(config: LakeConfig): Promise<DuckLakeWriter> {
    const location = config.ducklake;
    if (location === undefined) throw new LakeWriteError(`table "${config.table}" has no DuckLake location`);
    const lake = await attachDuckLake(location);
    const { conn } = lake;
    try {
      const plans = planColumns(config);
      const keyPlans = config.primaryKey.map((k) => plans.findIndex((p) => p.name.toLowerCase() === k.toLowerCase()));
      const stored = await lake.exclusive(() => withConflictRetry(() => prepareTables(conn, config, location, plans)));
      const stage = await BatchStage.create(conn, config, plans, keyPlans);
      return new DuckLakeWriter(config, location, conn, lake, stage, plans, keyPlans, stored);
    } catch (e) {
      await lake.release();
      throw e;
    }
  }

  write(request: WriteRequest): Promise<WriteResult> {
    return this.serial(() => this.writeNow(request));
  }

  checkpointStore(): CheckpointStore {
    this.store ??= new TableCheckpointStore(this.where, (key) => this.serial(() => this.held(key)), (record) => this.commitOnly(record));
    return this.store;
  }

  async lastCommit(key: string): Promise<LakeCommit | undefined> {
    const held = await this.serial(() => this.held(key));
    return held?.cursorDigest === undefined ? undefined : { batchId: held.batchId, cursorDigest: held.cursorDigest };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    // Connections and instances are left to the garbage collector (duckdb-db.ts); a PostgreSQL
    // catalog's connections are let go now.
    await this.lake.release();
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new LakeWriteError(`lake writer for table "${this.config.table}" is closed`, { retriable: true }));
    const run = this.tail.then(() => this.lake.exclusive(fn));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private commitOnly(record: CheckpointRecord): Promise<WriteResult> {
    return this.write({ batchId: record.batchId, good: [], bad: [], checkpoint: record });
  }

  /** The stream's newest batch in the catalog, undefined before its first. */
  private held(key: string): Promise<Held | undefined> {
    return loadDuckLakeHeld(this.conn, key, this.where);
  }

  /**
   * The stream's row must exist before its writers race: two transactions that each insert a
   * first row change nothing in common and would both commit. A seed row (batch 0) makes every
   * batch's transaction replace a row the others replace too.
   */
  private async seed(key: string): Promise<void> {
    if (this.seeded.has(key)) return;
    await withConflictRetry(async () => {
      await this.conn.run("BEGIN TRANSACTION");
      try {
        const found = await this.conn.runAndReadAll(`SELECT 1 FROM ${this.streams} WHERE stream_key = $1 LIMIT 1`, [key]);
        if (found.currentRowCount === 0) {
          await this.conn.run(`INSERT INTO ${this.streams} VALUES ($1, $2, 0, NULL, NULL, now()::TIMESTAMP)`, [key, this.config.table]);
        }
        await this.conn.run("COMMIT");
      } catch (e) {
        await this.conn.run("ROLLBACK").catch(() => undefined);
        throw e;
      }
    });
    this.seeded.add(key);
  }

  private async writeNow(req: WriteRequest): Promise<WriteResult> {
    const { config, conn } = this;
    if (req.checkpoint && req.checkpoint.batchId !== req.batchId) {
      throw new LakeWriteError(`checkpoint batchId ${req.checkpoint.batchId} differs from the request's batchId ${req.batchId}`);
    }
    const deletes = req.deletes && req.deletes.length > 0 ? req.deletes : undefined;
    if (deletes && (config.strategy !== "merge" || this.keyPlans.length === 0)) {
      throw new LakeWriteError(`batch ${req.batchId} deletes keys, but table "${config.table}" is not a merge target with a primary key`);
    }
    const nothing = { goodWritten: 0, badWritten: 0, badAlreadyPresent: 0 };
    try {
      let count = await this.stage.good(req.good);
      if (deletes) count -= await this.stage.deletes(deletes);
      const bad = config.quarantine.enabled ? req.bad : [];
      if (bad.length > 0) await this.stage.quarantine(bad, req.batchId, new Date());
      const key = req.checkpoint?.key ?? req.stream?.key;
      if (key !== undefined) await this.seed(key);
      const logged = commitOf(req);
      return await withConflictRetry(async () => {
        await conn.run("BEGIN TRANSACTION");
        try {
          const held = key !== undefined ? await this.held(key) : undefined;
          if (req.checkpoint) {
            // Throws CheckpointConflictError for a rival's batch (or a catalog behind the checkpoint).
            if (decideCommit(held?.record, req.checkpoint) === "already-committed") {
              await conn.run("ROLLBACK");
              return { ...nothing, checkpointOutcome: "already-committed" as const };
            }
          } else if (held !== undefined && req.stream?.replay === "cursor" && held.batchId === req.batchId && logged !== undefined && held.cursorDigest === logged.commit.cursorDigest) {
            // Sent again after a crash between this commit and the stream's checkpoint, ending at the
            // same cursor: the table has these records. A batch the resumed run cut elsewhere holds
            // other records, and is written.
            await conn.run("ROLLBACK");
            return nothing;
          }
          if (config.strategy === "overwrite") await conn.run(`DELETE FROM ${this.table}`);
          else if (config.strategy === "merge" && this.keyPlans.length > 0 && (count > 0 || deletes)) await this.deleteKeys(deletes !== undefined);
          if (count > 0) await conn.run(`INSERT INTO ${this.table} BY NAME SELECT * FROM stage`);
          const badWritten =
            bad.length === 0
              ? 0
              : (
                  await conn.run(
                    `INSERT INTO ${this.quarantine} BY NAME SELECT * FROM qstage AS s ` +
                      `WHERE NOT EXISTS (SELECT 1 FROM ${this.quarantine} AS q WHERE q.quarantine_id = s.quarantine_id)`,
                  )
                ).rowsChanged;
          if (key !== undefined) {
            await conn.run(`DELETE FROM ${this.streams} WHERE stream_key = $1`, [key]);
            await conn.run(`INSERT INTO ${this.streams} VALUES ($1, $2, $3, $4, $5, now()::TIMESTAMP)`, [
              key,
              config.table,
              BigInt(req.batchId),
              logged?.commit.cursorDigest ?? null,
              req.checkpoint ? JSON.stringify(encodeCommit(req.checkpoint)) : null,
            ]);
          }
          if (this.recordStale) await this.storeRecord();
          await conn.run("COMMIT");
          this.recordStale = false;
          return {
            goodWritten: count,
            badWritten,
            badAlreadyPresent: bad.length - badWritten,
            ...(req.checkpoint ? { checkpointOutcome: "committed" as const } : {}),
          };
        } catch (e) {
          await conn.run("ROLLBACK").catch(() => undefined);
          throw e;
        }
      });
    } catch (e) {
      if (e instanceof LakeLogicError) throw e;
      throw new LakeWriteError(`batch ${req.batchId} was not written to table "${config.table}" in ${this.where} (rolled back): ${redactText((e as Error).message)}`, {
        // Lost to concurrent writers every time, or the catalog went away: a later attempt may succeed.
        retriable: isConflict(e) || /connect|timeout|closed|refused|broken pipe|IO Error/i.test((e as Error).message),
      });
    }
  }

  /**
   * Delete the table's rows of the batch's keys (its good rows' and, after them, those it deletes).
   * The first key part's range, when it has no NULL, is added as constants: implied by the key
   * equality, it lets DuckLake skip the data files whose statistics lie outside it — every file,
   * for a stream whose keys grow — instead of joining the whole table.
   */
  private async deleteKeys(withDeletes: boolean): Promise<void> {
    const keys = this.keyPlans.map((k) => quoteIdent(this.plans[k]!.name)).join(", ");
    const source = withDeletes ? `(SELECT ${keys} FROM stage UNION ALL SELECT ${keys} FROM dstage)` : `(SELECT ${keys} FROM stage)`;
    const match = this.keyPlans.map((k) => `t.${quoteIdent(this.plans[k]!.name)} IS NOT DISTINCT FROM s.${quoteIdent(this.plans[k]!.name)}`).join(" AND ");
    const first = this.plans[this.keyPlans[0]!]!;
    const col = quoteIdent(first.name);
    const [range] = (await this.conn.runAndReadAll(`SELECT min(${col})::VARCHAR, max(${col})::VARCHAR, count(*) - count(${col}) FROM ${source}`)).getRows();
    const bounded = range !== undefined && range[0] !== null && Number(range[2]) === 0;
    const within = bounded ? ` AND t.${col} BETWEEN CAST($1 AS ${first.sqlType}) AND CAST($2 AS ${first.sqlType})` : "";
    await this.conn.run(`DELETE FROM ${this.table} AS t USING ${source} AS s WHERE ${match}${within}`, bounded ? [String(range[0]), String(range[1])] : []);
  }

  private async storeRecord(): Promise<void> {
    const tables = `${LAKE_ALIAS}.main.${quoteIdent(TABLES_TABLE)}`;
    const record = recordOf(this.config);
    await this.conn.run(`DELETE FROM ${tables} WHERE schema_name = $1 AND table_name = $2`, [this.location.schema, this.config.table]);
    await this.conn.run(`INSERT INTO ${tables} VALUES ($1, $2, $3, $4, now()::TIMESTAMP)`, [
      this.location.schema,
      this.config.table,
      JSON.stringify(record.primaryKey),
      record.strategy,
    ]);
  }
}

/** Where a DuckLake is, for messages: its catalog without secrets. */
export function describeDuckLake(location: DuckLakeLocation): string {
  return `the DuckLake ${duckLakeWhere(location)}`;
}

/**
 * The catalog's tables for this contract, made when missing (a DuckLake table's columns are the
 * contract's; an added field becomes a nullable column under `schema_policy.evolution: allow`),
 * and what the table was written with, checked against the contract (table-contract.ts).
 */
async function prepareTables(conn: DuckDBConnection, config: LakeConfig, location: DuckLakeLocation, plans: readonly ColumnPlan[]): Promise<TableRecord | undefined> {
  const table = lakeTable(location, config.table);
  const columns = async (schema: string, name: string): Promise<StoredColumn[]> =>
    (
      await conn.runAndReadAll(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = $1 AND schema_name = $2 AND table_name = $3 ORDER BY column_index",
        [LAKE_ALIAS, schema, name],
      )
    )
      .getRows()
      .map((r) => ({ name: String(r[0]), type: String(r[1]) }));
  await conn.run("BEGIN TRANSACTION");
  try {
    await conn.run(
      `CREATE TABLE IF NOT EXISTS ${LAKE_ALIAS}.main.${quoteIdent(STREAMS_TABLE)} ` +
        "(stream_key VARCHAR NOT NULL, table_name VARCHAR NOT NULL, batch_id BIGINT NOT NULL, cursor_digest VARCHAR, checkpoint VARCHAR, committed_at TIMESTAMP NOT NULL)",
    );
    await conn.run(
      `CREATE TABLE IF NOT EXISTS ${LAKE_ALIAS}.main.${quoteIdent(TABLES_TABLE)} ` +
        "(schema_name VARCHAR NOT NULL, table_name VARCHAR NOT NULL, primary_key VARCHAR NOT NULL, strategy VARCHAR NOT NULL, written_at TIMESTAMP NOT NULL)",
    );
    const existing = await columns(location.schema, config.table);
    let record: TableRecord | undefined;
    if (existing.length > 0) {
      const stored = (
        await conn.runAndReadAll(`SELECT primary_key, strategy FROM ${LAKE_ALIAS}.main.${quoteIdent(TABLES_TABLE)} WHERE schema_name = $1 AND table_name = $2 LIMIT 1`, [
          location.schema,
          config.table,
        ])
      ).getRows()[0];
      record = stored ? { primaryKey: JSON.parse(String(stored[0])) as string[], strategy: String(stored[1]) as TableRecord["strategy"] } : undefined;
      checkTableContract(config, plans, { record, columns: existing }, describeDuckLake(location));
      const have = new Set(existing.map((c) => c.name.toLowerCase()));
      for (const p of plans) {
        if (!have.has(p.name.toLowerCase())) await conn.run(`ALTER TABLE ${table} ADD COLUMN ${quoteIdent(p.name)} ${p.sqlType}`);
      }
    } else {
      await conn.run(`CREATE TABLE IF NOT EXISTS ${table} (${plans.map((p) => `${quoteIdent(p.name)} ${p.sqlType}`).join(", ")})`);
    }
    if (config.quarantine.enabled) {
      await conn.run(
        `CREATE TABLE IF NOT EXISTS ${lakeTable(location, config.quarantine.target)} (${QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`,
      );
    }
    await conn.run("COMMIT");
    return record;
  } catch (e) {
    await conn.run("ROLLBACK").catch(() => undefined);
    throw e;
  }
}
