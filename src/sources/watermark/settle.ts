/*
 * The settle horizon of the PostgreSQL keyset source: how far a read may go so that no
 * transaction still in flight can commit a row behind the cursor.
 *
 * - "snapshot" (integer watermarks: identity / serial columns). A sequence hands out values in
 *   order, but transactions commit in any order: the row with id 4 can commit after the row with
 *   id 5 was read. Each probe notes, in one statement, the greatest watermark visible (V) and the
 *   transactions holding a write lock (RowExclusiveLock) on the table (W). An INSERT takes that
 *   lock before it draws its default value and keeps it to the end of its transaction, so every
 *   value <= V not yet visible belongs to a member of W. Once none of W holds the lock any more
 *   (seen by a later probe), V is settled: the rows up to V are final. Comparing the rows' `xmin`
 *   with the snapshot's oldest transaction is not enough: a transaction that got its transaction
 *   id earlier (it wrote something else first) can draw a larger value and commit first.
 * - "time" (timestamp watermarks): only rows whose watermark is at least `settleMs` older than
 *   the server's clock, so a transaction that stamps `now()` and commits within `settleMs` is seen.
 */
import { ConfigError } from "../../errors.js";
import { sleep } from "../../util/wait.js";
import type { SqlQueryable } from "./client.js";
import type { WatermarkValue } from "./positions.js";

export type SettleMode = "auto" | "snapshot" | "time" | "off";
export const SETTLE_MODES = ["auto", "snapshot", "time", "off"] as const;
export const DEFAULT_SETTLE_MS = 10_000;

const INTEGER_TYPES = new Set(["smallint", "integer", "bigint"]);
const TIMESTAMP_TYPES = new Set(["timestamp with time zone", "timestamp without time zone"]);
/** Unsettled probes kept at most; dropping one only makes the horizon advance in coarser steps. */
const MAX_PENDING = 32;
const HORIZON = "lakelogic_horizon";
const WRITERS = "lakelogic_writers";

export interface SettleTarget {
  client: SqlQueryable;
  /** The FROM item of the keyset queries (a quoted table, or the subquery of `query`). */
  from: string;
  /** The quoted table name (for the lock and sequence look-ups); undefined for `query`. */
  table: string | undefined;
  watermarkColumn: string;
  /** The quoted watermark column, and the condition excluding NULL keys. */
  wm: string;
  notNull: string;
  /** The columns of the greatest position, and their descending order. */
  maxColumns: string;
  orderDesc: string;
}

/** What a chunk may read up to: nothing more, rows up to a watermark, or rows older than `ms`. */
export type Bound = { kind: "none" } | { kind: "time"; ms: number } | { kind: "value"; value: WatermarkValue | null };

interface Probe {
  horizon: WatermarkValue | null;
  writers: Set<string>;
}

/** The settle horizon of one fetcher: resolved on the first use, then kept across chunks. */
export class SettleHorizon {
  private resolved: Promise<{ mode: "snapshot" | "time" | "off"; tableWriters: boolean }> | undefined;
  /** The settled horizon (`null`: settled on an empty table); undefined until a probe settles. */
  private settled: WatermarkValue | null | undefined;
  private pending: Probe[] = [];
  /** The greatest horizon probed so far: a probe never goes below it (rows deleted meanwhile). */
  private highest: WatermarkValue | null = null;

  constructor(
    private readonly target: SettleTarget,
    private readonly mode: SettleMode,
    private readonly settleMs: number,
  ) {
    if (!SETTLE_MODES.includes(mode)) throw new ConfigError("settle", `expected one of ${SETTLE_MODES.join(", ")}, got ${JSON.stringify(mode)}`);
    if (!Number.isFinite(settleMs) || settleMs < 0) throw new ConfigError("settleMs", `expected a number of milliseconds >= 0, got ${String(settleMs)}`);
  }

  /** The bound of the next chunk. `refresh`: probe again (the last chunk reached the horizon). */
  async bound(refresh: boolean, signal: AbortSignal): Promise<Bound | undefined> {
    const { mode } = await this.resolve();
    if (mode === "off") return { kind: "none" };
    if (mode === "time") return { kind: "time", ms: this.settleMs };
    if (refresh || this.settled === undefined) await this.probe();
    // Nothing settled yet: wait for the writers seen by the first probe (never for later ones).
    for (let wait = 10; this.settled === undefined; wait = Math.min(wait * 2, 1_000)) {
      if (!(await sleep(wait, signal))) return undefined;
      await this.probe();
    }
    return { kind: "value", value: this.settled };
  }

  /** The greatest position for `available_now`'s snapshot, within the horizon's mode. */
  async max(): Promise<Record<string, unknown> | undefined> {
    const { mode } = await this.resolve();
    if (mode === "snapshot") return this.probe();
    const t = this.target;
    const values: unknown[] = [];
    const where = [t.notNull];
    if (mode === "time") where.push(timeCondition(t.wm, values, this.settleMs));
    const result = await t.client.query(`SELECT ${t.maxColumns} FROM ${t.from} WHERE ${where.join(" AND ")} ORDER BY ${t.orderDesc} LIMIT 1`, values);
    return result.rows[0];
  }

  /** One probe: the greatest position, the horizon V and the writers W, in one statement. */
  private async probe(): Promise<Record<string, unknown> | undefined> {
    const { tableWriters } = await this.resolve();
    const t = this.target;
    const values: unknown[] = [this.highest];
    const relation = tableWriters
      ? // The table itself, and for a partitioned table or a partition its whole tree (a plain table has none).
        `AND (l.relation = to_regclass($2) OR l.relation IN (SELECT relid FROM pg_partition_ancestors(to_regclass($2)) ` +
        `UNION SELECT relid FROM pg_partition_tree(to_regclass($2))))`
      : "";
    if (tableWriters) values.push(t.table);
    const sql =
      `SELECT m.*, GREATEST(m.${t.wm}, $1) AS ${HORIZON}, ARRAY(SELECT DISTINCT l.virtualtransaction FROM pg_locks l ` +
      `WHERE l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' AND l.granted AND l.pid IS DISTINCT FROM pg_backend_pid() ` +
      `AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) ${relation}) AS ${WRITERS} ` +
      `FROM (SELECT 1) AS lakelogic_one LEFT JOIN LATERAL (SELECT ${t.maxColumns} FROM ${t.from} WHERE ${t.notNull} ` +
      `ORDER BY ${t.orderDesc} LIMIT 1) AS m ON true`;
    const row = (await t.client.query(sql, values)).rows[0] ?? {};
    const horizon = (row[HORIZON] ?? null) as WatermarkValue | null;
    const writers = new Set((row[WRITERS] as string[] | undefined) ?? []);
    this.highest = horizon;
    this.advance({ horizon, writers });
    const { [HORIZON]: _h, [WRITERS]: _w, ...max } = row;
    return max[t.watermarkColumn] === null || max[t.watermarkColumn] === undefined ? undefined : max;
  }

  /**
   * A probe whose writers no longer hold the lock is settled, and so is every older one (a
   * writer of an older probe still in flight would have been one of the newer probe's writers).
   */
  private advance(now: Probe): void {
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const p = this.pending[i]!;
      if (![...p.writers].some((w) => now.writers.has(w))) {
        this.settled = p.horizon;
        this.pending.splice(0, i + 1);
        break;
      }
    }
    if (now.writers.size === 0) {
      this.settled = now.horizon;
      this.pending = [];
    } else {
      this.pending.push(now);
      if (this.pending.length > MAX_PENDING) this.pending.splice(1, 1);
    }
  }

  private resolve(): Promise<{ mode: "snapshot" | "time" | "off"; tableWriters: boolean }> {
    this.resolved ??= this.detect();
    this.resolved.catch(() => (this.resolved = undefined));
    return this.resolved;
  }

  /** The watermark's type picks the mode under "auto"; a sequence with CACHE > 1 cannot be settled. */
  private async detect(): Promise<{ mode: "snapshot" | "time" | "off"; tableWriters: boolean }> {
    if (this.mode === "off") return { mode: "off", tableWriters: false };
    const t = this.target;
    const values: unknown[] = [];
    let extra = "NULL::text AS relkind, NULL::text AS cache";
    if (t.table !== undefined) {
      values.push(t.table, t.watermarkColumn);
      extra =
        `(SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)) AS relkind, ` +
        `(SELECT seqcache::text FROM pg_sequence WHERE seqrelid = to_regclass(pg_get_serial_sequence($1, $2))) AS cache`;
    }
    const row = (await t.client.query(`SELECT pg_typeof((SELECT ${t.wm} FROM ${t.from} LIMIT 1))::text AS type, ${extra}`, values)).rows[0] ?? {};
    const type = String(row["type"]);
    let mode: "snapshot" | "time" | "off" = "off";
    if (this.mode === "snapshot" || (this.mode === "auto" && INTEGER_TYPES.has(type))) mode = "snapshot";
    else if (this.mode === "time" || (this.mode === "auto" && TIMESTAMP_TYPES.has(type))) mode = "time";
    if (mode === "time" && !TIMESTAMP_TYPES.has(type)) {
      throw new ConfigError("settle", `"time" needs a timestamp watermark; "${t.watermarkColumn}" is ${type}. Use "snapshot" for a sequence, or "off"`);
    }
    if (mode === "time" && this.settleMs === 0) mode = "off";
    const cache = row["cache"] === null || row["cache"] === undefined ? 1 : Number(row["cache"]);
    if (mode === "snapshot" && cache > 1) {
      throw new ConfigError(
        "settle",
        `the sequence of "${t.watermarkColumn}" has CACHE ${cache}: each session draws values from its own block, so a ` +
          `smaller value can commit after a larger one was read, at any time later. Set CACHE 1 (ALTER SEQUENCE … CACHE 1), ` +
          `page on a commit-time column, or read with CDC; settle: "off" reads without a horizon`,
      );
    }
    // A view's or a query's writers write other tables: every writer of the database counts.
    const tableWriters = t.table !== undefined && (row["relkind"] === "r" || row["relkind"] === "p");
    return { mode, tableWriters };
  }
}

/** `wm <= now − ms` on the server's clock. */
export function timeCondition(wm: string, values: unknown[], ms: number): string {
  values.push(ms);
  return `${wm} <= statement_timestamp() - $${values.length}::double precision * interval '1 millisecond'`;
}
