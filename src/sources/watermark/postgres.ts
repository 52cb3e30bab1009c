import { ConfigError } from "../../errors.js";
import { quoteIdent as quoteSqlIdent } from "../../util/sql-text.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";
import type { SqlQueryable } from "./client.js";
import { subqueryOf } from "./query-text.js";
import { DEFAULT_SETTLE_MS, SettleHorizon, timeCondition, type SettleMode } from "./settle.js";
import {
  WatermarkChunkSource,
  type FetchChunkByPosition,
  type FetchMaxByPosition,
  type WatermarkPositionOptions,
  type WatermarkPosition,
} from "./source.js";

export type { SqlQueryable } from "./client.js";
export type { SettleMode } from "./settle.js";

export interface PostgresChunkFetcherOptions {
  /** Table name, or `{ schema, name }`. Quoted as identifiers, never spliced in as SQL. */
  table?: string | { schema: string; name: string };
  /** Instead of `table`: a SELECT whose rows are paged, as a subquery (see `subqueryOf`). */
  query?: string;
  watermarkColumn: string;
  /** Usually the primary key. Omit only when the watermark column itself is unique. */
  tieBreakerColumn?: string;
  /** Columns to select (the cursor columns are added when missing). Default `*`. */
  columns?: string[];
  /**
   * How far a read may go so that no transaction in flight can still commit a row behind it
   * (docs/connectors.md, PostgreSQL). `"auto"` (default): `"snapshot"` for an integer watermark
   * (identity, serial), `"time"` for a timestamp, none otherwise. `"off"`: read every visible row.
   */
  settle?: SettleMode;
  /** `"time"`: read only rows whose watermark is at least this much older than the server's clock. Default 10000; 0 turns it off. */
  settleMs?: number;
}

/** The option names, for the refusal of unknown ones (the compiler keeps the lists complete). */
const FETCHER_OPTIONS = optionNames<PostgresChunkFetcherOptions>()([
  "table",
  "query",
  "watermarkColumn",
  "tieBreakerColumn",
  "columns",
  "settle",
  "settleMs",
]);

export interface PostgresChunkFetcher {
  fetchChunk: FetchChunkByPosition;
  fetchMax: FetchMaxByPosition;
  /** The matching WatermarkChunkSource options (field names, uniqueWatermark, the position form). */
  sourceOptions: { watermarkField: string; tieBreakerField?: string; uniqueWatermark?: boolean; fetchAfter: "position" };
}

/** Quote a PostgreSQL identifier (`a"b` → `"a""b"`), refusing names PostgreSQL cannot hold. */
export function quoteIdent(name: string): string {
  if (typeof name !== "string" || name.length === 0 || name.includes("\u0000")) {
    throw new ConfigError("identifier", `expected a non-empty name, got ${JSON.stringify(name)}`);
  }
  return quoteSqlIdent(name);
}

/**
 * Keyset queries for `WatermarkChunkSource` over one PostgreSQL table:
 *
 * ```sql
 * SELECT … FROM t WHERE wm IS NOT NULL AND id IS NOT NULL
 *   [AND (wm, id) > ($1, $2)] [AND (wm, id) <= ($3, $4)] [AND wm <= <settle horizon>] ORDER BY wm, id LIMIT $5
 * ```
 *
 * Identifiers are quoted and every value is a bind parameter. An index on (wm, id) makes each
 * chunk an index range scan. Watermark columns of type `timestamp[tz]` with sub-millisecond
 * values lose precision in JS Dates (the source then stops with a WatermarkOrderError rather than
 * repeat rows); keep such watermarks at millisecond precision. The functions keep the settle
 * horizon between calls (settle.ts): one fetcher per source.
 */
export function postgresChunkFetcher(client: SqlQueryable, options: PostgresChunkFetcherOptions): PostgresChunkFetcher {
  if (!client || typeof client.query !== "function") throw new ConfigError("client", "expected an object with query(text, values)");
  refuseUnknownOptions("postgresChunkFetcher", options, FETCHER_OPTIONS);
  if ((options.table === undefined) === (options.query === undefined)) throw new ConfigError("table", 'expected one of "table" and "query"');
  const tableName =
    options.query !== undefined
      ? undefined
      : typeof options.table === "string"
        ? quoteIdent(options.table)
        : `${quoteIdent(options.table!.schema)}.${quoteIdent(options.table!.name)}`;
  const from = tableName ?? subqueryOf(options.query!);
  const wmName = options.watermarkColumn;
  const tbName = options.tieBreakerColumn;
  const wm = quoteIdent(wmName);
  const tb = tbName === undefined ? undefined : quoteIdent(tbName);
  const key = tb === undefined ? wm : `(${wm}, ${tb})`;
  const orderAsc = tb === undefined ? wm : `${wm}, ${tb}`;
  const orderDesc = tb === undefined ? `${wm} DESC` : `${wm} DESC, ${tb} DESC`;
  const notNull = tb === undefined ? `${wm} IS NOT NULL` : `${wm} IS NOT NULL AND ${tb} IS NOT NULL`;
  let selectList = "*";
  if (options.columns !== undefined) {
    const names = [...options.columns];
    for (const required of [wmName, tbName]) if (required !== undefined && !names.includes(required)) names.push(required);
    selectList = names.map(quoteIdent).join(", ");
  }
  const horizon = new SettleHorizon(
    { client, from, table: tableName, watermarkColumn: wmName, wm, notNull, maxColumns: tb === undefined ? wm : `${wm}, ${tb}`, orderDesc },
    options.settle ?? "auto",
    options.settleMs ?? DEFAULT_SETTLE_MS,
  );

  const bind = (values: unknown[], p: WatermarkPosition): string => {
    values.push(p.watermark);
    if (tb === undefined) return `$${values.length}`;
    values.push(p.tieBreaker);
    return `($${values.length - 1}, $${values.length})`;
  };

  /** The last chunk came back short: it may have reached the horizon, which is probed again. */
  let reachedBound = true;
  const fetchChunk: FetchChunkByPosition = async (after, limit, until, signal) => {
    const bound = await horizon.bound(reachedBound, signal);
    if (bound === undefined) return []; // aborted while waiting for writers
    const values: unknown[] = [];
    const where = [notNull];
    if (after) where.push(`${key} > ${bind(values, after)}`);
    if (until) where.push(`${key} <= ${bind(values, until)}`);
    if (bound.kind === "time") where.push(timeCondition(wm, values, bound.ms));
    if (bound.kind === "value") {
      if (bound.value === null) return []; // settled on an empty table
      values.push(bound.value);
      where.push(`${wm} <= $${values.length}`);
    }
    values.push(limit);
    const sql = `SELECT ${selectList} FROM ${from} WHERE ${where.join(" AND ")} ORDER BY ${orderAsc} LIMIT $${values.length}`;
    const { rows } = await client.query(sql, values);
    reachedBound = rows.length < limit;
    return rows;
  };

  const fetchMax: FetchMaxByPosition = async () => {
    const row = await horizon.max();
    if (row === undefined) return undefined;
    const watermark = row[wmName] as WatermarkPosition["watermark"];
    return tbName === undefined ? { watermark } : { watermark, tieBreaker: row[tbName] as WatermarkPosition["watermark"] };
  };

  return {
    fetchChunk,
    fetchMax,
    sourceOptions:
      tbName === undefined
        ? { watermarkField: wmName, uniqueWatermark: true, fetchAfter: "position" }
        : { watermarkField: wmName, tieBreakerField: tbName, fetchAfter: "position" },
  };
}

export type PostgresWatermarkSourceOptions = PostgresChunkFetcherOptions &
  Pick<WatermarkPositionOptions, "chunkSize" | "idleBackoffMs" | "description">;

const SOURCE_OPTIONS = optionNames<PostgresWatermarkSourceOptions>()([
  "table",
  "query",
  "watermarkColumn",
  "tieBreakerColumn",
  "columns",
  "settle",
  "settleMs",
  "chunkSize",
  "idleBackoffMs",
  "description",
]);

/**
 * A ready WatermarkChunkSource over a PostgreSQL table, with `endCursor()` for available_now and
 * the settle horizon on by default.
 *
 * ```ts
 * const source = postgresWatermarkSource(pool, {
 *   table: "orders", watermarkColumn: "updated_at", tieBreakerColumn: "id", chunkSize: 5_000,
 * });
 * ```
 */
export function postgresWatermarkSource(client: SqlQueryable, options: PostgresWatermarkSourceOptions): WatermarkChunkSource {
  refuseUnknownOptions("postgresWatermarkSource", options, SOURCE_OPTIONS);
  const { table, query, watermarkColumn, tieBreakerColumn, columns, settle, settleMs, ...rest } = options;
  const fetcher = postgresChunkFetcher(client, {
    ...(table !== undefined ? { table } : {}),
    ...(query !== undefined ? { query } : {}),
    watermarkColumn,
    ...(tieBreakerColumn !== undefined ? { tieBreakerColumn } : {}),
    ...(columns !== undefined ? { columns } : {}),
    ...(settle !== undefined ? { settle } : {}),
    ...(settleMs !== undefined ? { settleMs } : {}),
  });
  const name = table === undefined ? "query" : typeof table === "string" ? table : `${table.schema}.${table.name}`;
  return new WatermarkChunkSource(fetcher.fetchChunk, {
    description: `postgres ${name}`,
    ...rest,
    ...fetcher.sourceOptions,
    fetchMax: fetcher.fetchMax,
  });
}
