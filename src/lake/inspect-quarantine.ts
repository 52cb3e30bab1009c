/**
 * A lake's quarantine as `lakelogic show` summarises it (src/lake/inspect.ts): the rows of any
 * format, as a relation on a DuckDB connection, grouped by the rule they failed.
 */
import type { DuckDBConnection } from "../util/duckdb.js";
import { readAll } from "./read.js";

/** The quarantine rows that failed one rule (a row failing two rules counts in both groups). */
export interface QuarantineGroup {
  ruleId: string;
  rows: number;
  /** One row of the group, the newest (highest batch id). */
  sample: {
    batchId: number;
    reason: string | null;
    raw: string | null;
    rawEncoding: string | null;
    /** The record as stored (JSON text), or null for a decode failure without one. */
    record: string | null;
  };
}

/** The rules of the quarantine rows in `relation`, most rows first, each with its newest row. */
async function quarantineGroups(conn: DuckDBConnection, relation: string): Promise<QuarantineGroup[]> {
  // rule_ids and reasons are parallel lists (one entry per failed rule): unnested together. A
  // row with no rule id (none recorded) still counts, under "(none)".
  const rows = await readAll(
    conn,
    `WITH failures AS (
       SELECT batch_id, quarantine_id, raw, raw_encoding, record::VARCHAR AS record,
              unnest(CASE WHEN rule_ids IS NULL OR len(rule_ids) = 0 THEN ['(none)'] ELSE rule_ids END) AS rule_id,
              unnest(CASE WHEN rule_ids IS NULL OR len(rule_ids) = 0 THEN [NULL::VARCHAR] ELSE coalesce(reasons, []::VARCHAR[]) END) AS reason
       FROM ${relation}
     )
     SELECT rule_id, count(*) OVER (PARTITION BY rule_id) AS n, batch_id, reason, raw, raw_encoding, record
     FROM failures
     QUALIFY row_number() OVER (PARTITION BY rule_id ORDER BY batch_id DESC, quarantine_id) = 1
     ORDER BY n DESC, rule_id`,
  );
  return rows.map((r) => ({
    ruleId: String(r["rule_id"]),
    rows: Number(r["n"]),
    sample: {
      batchId: Number(r["batch_id"]),
      reason: (r["reason"] as string | null) ?? null,
      raw: (r["raw"] as string | null) ?? null,
      rawEncoding: (r["raw_encoding"] as string | null) ?? null,
      record: (r["record"] as string | null) ?? null,
    },
  }));
}

/** How many quarantine rows `relation` holds, and how many under each of `batchIds`. */
async function quarantineCounts(conn: DuckDBConnection, relation: string, batchIds: readonly number[]): Promise<{ rows: number; byBatch: Map<number, number> }> {
  const [total] = await readAll(conn, `SELECT count(*) AS n FROM ${relation}`);
  const byBatch = new Map<number, number>();
  if (batchIds.length > 0) {
    const ids = batchIds.map((b) => String(Math.trunc(b))).join(", ");
    for (const r of await readAll(conn, `SELECT batch_id, count(*) AS n FROM ${relation} WHERE batch_id IN (${ids}) GROUP BY batch_id`)) {
      byBatch.set(Number(r["batch_id"]), Number(r["n"]));
    }
  }
  return { rows: Number(total?.["n"] ?? 0), byBatch };
}

/** The quarantine part of an inspection, and the commits' quarantined counts where they lack one. */
export async function withQuarantine<C extends { batchId: number; quarantined: number | null }>(
  conn: DuckDBConnection | undefined,
  relation: string | undefined,
  commits: readonly C[],
): Promise<{ commits: Array<C & { quarantined: number }>; quarantine: { rows: number; groups: QuarantineGroup[] } }> {
  if (conn === undefined || relation === undefined) {
    return { commits: commits.map((c) => ({ ...c, quarantined: c.quarantined ?? 0 })), quarantine: { rows: 0, groups: [] } };
  }
  const { rows, byBatch } = await quarantineCounts(conn, relation, commits.filter((c) => c.quarantined === null).map((c) => c.batchId));
  return {
    commits: commits.map((c) => ({ ...c, quarantined: c.quarantined ?? byBatch.get(c.batchId) ?? 0 })),
    quarantine: { rows, groups: await quarantineGroups(conn, relation) },
  };
}

