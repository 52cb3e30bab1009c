import type { Pool, PoolClient } from "pg";
import type { SourceFactory } from "../core/registry.js";
import { requirePeer, type OptionsOf } from "../core/spec.js";
import type { WatermarkChunkSource } from "./source.js";
import { postgresWatermarkSource, type SqlQueryable } from "./postgres.js";
import { subqueryOf } from "./query-text.js";
import { postgresSpec } from "./spec.js";

type PgModule = typeof import("pg");

/**
 * A `pg` pool of one connection, opened on the first query: building the source (and so
 * `createSource` checking a config) never connects. One connection is enough because a
 * WatermarkChunkSource has one reader and one query in flight at a time; a pool rather than a
 * Client so a connection lost between polls is replaced instead of failing every later query.
 */
class LazyPool implements SqlQueryable {
  private pool: Promise<Pool> | undefined;
  private closed = false;
  /** Connections already switched to read-only. */
  private readonly readOnly = new WeakSet<PoolClient>();

  constructor(private readonly url: string) {}

  async query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> {
    const pool = await this.open();
    const client = await pool.connect();
    try {
      if (!this.readOnly.has(client)) {
        // The source only reads: a session that refuses writes keeps a `query` (a data-modifying
        // WITH, a volatile function) from changing the database it backfills from.
        await client.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
        this.readOnly.add(client);
      }
      const result = await client.query<Record<string, unknown>>(text, values);
      client.release();
      return result;
    } catch (err) {
      // A connection that failed is dropped rather than reused.
      client.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = await this.pool?.catch(() => undefined);
    this.pool = undefined;
    await pool?.end();
  }

  private open(): Promise<Pool> {
    if (this.closed) return Promise.reject(new Error("the postgres source is closed"));
    this.pool ??= (async () => {
      const mod = await requirePeer<PgModule & { default?: PgModule }>("pg", "The postgres source");
      const PgPool = mod.default?.Pool ?? mod.Pool;
      const pool = new PgPool({ connectionString: this.url, max: 1, application_name: "lakelogic" });
      // An idle connection that drops (server restart) is removed by the pool; the next query opens
      // another. Without a listener the error would end the process.
      pool.on("error", () => undefined);
      return pool;
    })();
    this.pool.catch(() => (this.pool = undefined));
    return this.pool;
  }
}

/** The keyset source of a `postgres` config, with `close()` ending its connection. */
export function postgresSourceFrom(o: OptionsOf<typeof postgresSpec>): WatermarkChunkSource & { close(): Promise<void> } {
  // Checked here too so the message names the config's option.
  if (o.query !== undefined) subqueryOf(o.query, "source postgres: query");
  const client = new LazyPool(o.url);
  const source = postgresWatermarkSource(client, {
    ...(o.query !== undefined ? { query: o.query } : {}),
    ...(o.table !== undefined ? { table: o.schema === undefined ? o.table : { schema: o.schema, name: o.table } } : {}),
    watermarkColumn: o.watermarkField,
    ...(o.tieBreakerField !== undefined ? { tieBreakerColumn: o.tieBreakerField } : {}),
    ...(o.columns !== undefined ? { columns: o.columns } : {}),
    chunkSize: o.chunkSize,
    settle: o.settle,
    settleMs: o.settleMs,
    idleBackoffMs: { initial: Math.min(200, o.idleBackoffMaxMs), max: o.idleBackoffMaxMs },
  });
  return Object.assign(source, { close: () => client.close() });
}

/** `{ "type": "postgres", "url": "env:PG_URL", "table": "orders", "watermarkField": "updated_at", "tieBreakerField": "id" }`. */
export const postgresSourceFactory: SourceFactory<typeof postgresSpec> = {
  spec: postgresSpec,
  create: (o) => postgresSourceFrom(o),
};
