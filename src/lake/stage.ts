import type { DuckDBConnection } from "../util/duckdb.js";
import type { Row } from "../engine/types.js";
import { quoteIdent } from "../util/sql-text.js";
import { buildChunks, convertAll, selectRows } from "./chunks.js";
import type { ColumnPlan } from "./columns.js";
import type { LakeConfig } from "./config.js";
import { prepareQuarantine, QUARANTINE_COLUMNS } from "./quarantine.js";
import type { QuarantineRow } from "./types.js";

/**
 * The staging tables of the writers that build a batch in an in-memory DuckDB before handing it
 * on (parquet, delta, ducklake): `stage` (good rows), `dstage` (the keys a merge batch deletes),
 * `qstage` (quarantine rows). BatchStage's are temporary tables, so that writers sharing one
 * instance (a DuckLake catalog file's, ducklake-catalog.ts) each stage on their own connection.
 */
export class BatchStage {
  private constructor(
    readonly conn: DuckDBConnection,
    private readonly config: LakeConfig,
    readonly plans: ColumnPlan[],
    readonly keyPlans: number[],
  ) {}

  static async create(conn: DuckDBConnection, config: LakeConfig, plans: ColumnPlan[], keyPlans: number[]): Promise<BatchStage> {
    await conn.run(`CREATE TEMP TABLE stage (${plans.map((p) => `${quoteIdent(p.name)} ${p.sqlType}`).join(", ")})`);
    if (config.strategy === "merge" && keyPlans.length > 0) {
      await conn.run(`CREATE TEMP TABLE dstage (${keyPlans.map((k) => `${quoteIdent(plans[k]!.name)} ${plans[k]!.sqlType}`).join(", ")})`);
    }
    await conn.run(`CREATE TEMP TABLE qstage (${QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
    return new BatchStage(conn, config, plans, keyPlans);
  }

  /** Stage the batch's good rows (one per key, the last, for a keyed write); how many. */
  async good(rows: readonly Row[]): Promise<number> {
    const { config, conn, plans } = this;
    const keyed = config.strategy === "merge" || (config.strategy === "overwrite" && this.keyPlans.length > 0);
    const selection = selectRows(plans, rows, keyed ? this.keyPlans : undefined);
    const count = selection.selected.length;
    await conn.run("DELETE FROM stage");
    if (count > 0) {
      const columns = convertAll(plans, rows, selection);
      const appender = await conn.createAppender("stage", "main", "temp");
      for (const chunk of buildChunks(plans.map((p) => p.vectorType), columns, count)) appender.appendDataChunk(chunk);
      appender.closeSync();
    }
    return count;
  }

  /** Stage the keys the batch deletes (after its good rows): how many staged good rows they drop. */
  deletes(rows: readonly Row[]): Promise<number> {
    return stageDeletes(this.conn, this.plans, this.keyPlans, rows, "temp");
  }

  /** Stage the batch's quarantine rows; their ids, in order. */
  async quarantine(rows: readonly QuarantineRow[], batchId: number, now: Date): Promise<string[]> {
    const q = prepareQuarantine(rows, batchId, this.config.quarantine.includeErrorReason, now);
    await this.conn.run("DELETE FROM qstage");
    const appender = await this.conn.createAppender("qstage", "main", "temp");
    for (const chunk of buildChunks(QUARANTINE_COLUMNS.map((c) => c.vectorType), q.columns, q.ids.length)) appender.appendDataChunk(chunk);
    appender.closeSync();
    return q.ids;
  }
}

/** The key columns of `a` and `b` match, NULL parts matching each other. */
export function keyMatch(plans: readonly ColumnPlan[], keyPlans: readonly number[], a: string, b: string): string {
  return keyPlans.map((p) => `${a}.${quoteIdent(plans[p]!.name)} IS NOT DISTINCT FROM ${b}.${quoteIdent(plans[p]!.name)}`).join(" AND ");
}

/**
 * Stage the keys the batch deletes in `dstage`, and drop the batch's own rows of those keys from
 * `stage` (its deletes come after them). Returns how many staged rows were dropped.
 */
export async function stageDeletes(
  conn: DuckDBConnection,
  plans: readonly ColumnPlan[],
  keyPlans: readonly number[],
  deletes: readonly Row[],
  /** The catalog holding `dstage`: `temp` for BatchStage's, the connection's own otherwise. */
  catalog?: string,
): Promise<number> {
  const selection = selectRows(plans, deletes, keyPlans);
  await conn.run("DELETE FROM dstage");
  const appender = catalog === undefined ? await conn.createAppender("dstage") : await conn.createAppender("dstage", "main", catalog);
  const columns = keyPlans.map((k) => selection.converted.get(k)!);
  for (const chunk of buildChunks(keyPlans.map((k) => plans[k]!.vectorType), columns, selection.selected.length)) {
    appender.appendDataChunk(chunk);
  }
  appender.closeSync();
  const dropped = await conn.run(`DELETE FROM stage AS s WHERE EXISTS (SELECT 1 FROM dstage AS f WHERE ${keyMatch(plans, keyPlans, "f", "s")})`);
  return dropped.rowsChanged;
}
