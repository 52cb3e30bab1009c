import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { VARCHAR, type DuckDBConnection, type DuckDBDataChunk, type DuckDBType } from "@duckdb/node-api";
import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointStore } from "../checkpoint/types.js";
import { ConfigError, LakeLogicError } from "../errors.js";
import { buildChunks, convertAll, planColumns, quoteIdent, selectRows, type ColumnPlan, type Selection } from "./columns.js";
import { DUCKDB_FILE, type LakeConfig } from "./config.js";
import { DuckDBTargetCheckpointStore, ensureCheckpointTable, loadCheckpoint, upsertCheckpoint } from "./duckdb-checkpoint.js";
import { acquireDatabase, type Database } from "./duckdb-db.js";
import { LakeWriteError } from "./errors.js";
import { prepareQuarantine, QUARANTINE_COLUMNS, type PreparedQuarantine } from "./quarantine.js";
import type { LakeWriter, WriteRequest, WriteResult } from "./types.js";

const KEYS_STAGE = "__lakelogic_keys";
const QUARANTINE_STAGE = "__lakelogic_quarantine_stage";

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
      const tableColumns = await db.exclusive(() => prepareTables(conn, config, plans, keyPlans));
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
    this.db.release();
  }

  private async writeNow(req: WriteRequest): Promise<WriteResult> {
    const { config, conn } = this;
    if (req.checkpoint && req.checkpoint.batchId !== req.batchId) {
      throw new LakeWriteError(`checkpoint batchId ${req.checkpoint.batchId} differs from the request's batchId ${req.batchId}`);
    }
    const keyed = config.strategy === "merge" || (config.strategy === "overwrite" && this.keyPlans.length > 0);
    const selection = selectRows(this.plans, req.good, keyed ? this.keyPlans : undefined);
    const count = selection.selected.length;
    const table = quoteIdent(config.table);

    if (req.checkpoint && !this.checkpointTableReady) {
      await ensureCheckpointTable(conn);
      this.checkpointTableReady = true;
    }
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

      let pendingDelete: Promise<unknown> | undefined;
      if (config.strategy === "overwrite") {
        pendingDelete = conn.run(`DELETE FROM ${table}`);
      } else if (config.strategy === "merge" && count > 0) {
        await this.stageKeys(selection, count);
        const on = this.keyPlans
          .map((p, i) => `t.${quoteIdent(this.plans[p]!.name)} IS NOT DISTINCT FROM k.k${i}`)
          .join(" AND ");
        pendingDelete = conn.run(`DELETE FROM ${table} AS t USING temp.main.${KEYS_STAGE} AS k WHERE ${on}`);
      }
      // Convert and build the chunks in JS while DuckDB deletes on its own thread.
      let chunks: DuckDBDataChunk[] = [];
      let quarantine: PreparedQuarantine | undefined;
      let prepError: unknown;
      try {
        const columns = convertAll(this.plans, req.good, selection);
        chunks = buildChunks(
          this.tableColumns.map((c) => c.vectorType),
          this.tableColumns.map((c) => (c.plan >= 0 ? columns[c.plan] : undefined)),
          count,
        );
        if (config.quarantine.enabled && req.bad.length > 0) {
          quarantine = prepareQuarantine(req.bad, req.batchId, config.quarantine.includeErrorReason, new Date());
        }
      } catch (e) {
        prepError = e;
      }
      if (pendingDelete) await pendingDelete;
      if (prepError !== undefined) throw prepError;
      if (chunks.length > 0) {
        const appender = await conn.createAppender(config.table);
        for (const chunk of chunks) appender.appendDataChunk(chunk);
        appender.closeSync();
      }

      let badWritten = 0;
      if (quarantine) {
        await conn.run(`DELETE FROM temp.main.${QUARANTINE_STAGE}`);
        const appender = await conn.createAppender(QUARANTINE_STAGE, "main", "temp");
        for (const chunk of buildChunks(QUARANTINE_COLUMNS.map((c) => c.vectorType), quarantine.columns, quarantine.ids.length)) {
          appender.appendDataChunk(chunk);
        }
        appender.closeSync();
        const q = quoteIdent(config.quarantine.target);
        const inserted = await conn.run(
          `INSERT INTO ${q} SELECT s.* FROM temp.main.${QUARANTINE_STAGE} AS s
           WHERE NOT EXISTS (SELECT 1 FROM ${q} AS q WHERE q.quarantine_id = s.quarantine_id)`,
        );
        badWritten = inserted.rowsChanged;
      }

      if (req.checkpoint) await upsertCheckpoint(conn, req.checkpoint);
      await conn.run("COMMIT");
      return {
        goodWritten: count,
        badWritten,
        badAlreadyPresent: quarantine ? quarantine.ids.length - badWritten : 0,
        ...(req.checkpoint ? { checkpointOutcome: "committed" as const } : {}),
      };
    } catch (e) {
      await conn.run("ROLLBACK").catch(() => undefined);
      if (e instanceof LakeLogicError) throw e;
      throw new LakeWriteError(
        `batch ${req.batchId} was not written to table "${config.table}" in ${this.databasePath} (rolled back): ${(e as Error).message}`,
        { cause: e },
      );
    }
  }

  private async stageKeys(selection: Selection, count: number): Promise<void> {
    await this.conn.run(`DELETE FROM temp.main.${KEYS_STAGE}`);
    const appender = await this.conn.createAppender(KEYS_STAGE, "main", "temp");
    const chunks = buildChunks(
      this.keyPlans.map((p) => this.plans[p]!.vectorType),
      this.keyPlans.map((p) => selection.converted.get(p)),
      count,
    );
    for (const chunk of chunks) appender.appendDataChunk(chunk);
    appender.closeSync();
  }
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
  keyPlans: readonly number[],
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
    await conn.run(`CREATE TABLE IF NOT EXISTS ${q} (${QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
    const qCols = (await tableColumnsOf(conn, config.quarantine.target)).map((c) => c.name);
    const expected = QUARANTINE_COLUMNS.map((c) => c.name);
    if (qCols.join(",") !== expected.join(",")) {
      throw new ConfigError(
        "quarantine.target",
        `table "${config.quarantine.target}" exists with columns (${qCols.join(", ")}), not a LakeLogic quarantine table (${expected.join(", ")}); choose another quarantine.target`,
      );
    }
    await conn.run(
      `CREATE TEMP TABLE IF NOT EXISTS ${QUARANTINE_STAGE} (${QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType.replace(" NOT NULL", "")}`).join(", ")})`,
    );
  }
  if (keyPlans.length > 0) {
    await conn.run(
      `CREATE TEMP TABLE IF NOT EXISTS ${KEYS_STAGE} (${keyPlans.map((p, i) => `k${i} ${plans[p]!.sqlType}`).join(", ")})`,
    );
  }
  return layout;
}
