import {
  BIGINT,
  LIST,
  TIMESTAMP,
  VARCHAR,
  DuckDBListValue,
  DuckDBTimestampValue,
  type DuckDBType,
  type DuckDBValue,
} from "../util/duckdb.js";
import type { QuarantineRow } from "./types.js";
import { bytesToBase64 } from "../util/exact-json.js";
import { canonicalJson, safeJsonText, sha256Hex } from "./json.js";

/**
 * Quarantine table columns, in order. `quarantine_id` is the row's identity: a replayed batch
 * inserts only ids that are absent, so bad rows are never duplicated (shortcoming 8 of the
 * Python original).
 */
export const QUARANTINE_COLUMNS: ReadonlyArray<{ name: string; sqlType: string; vectorType: DuckDBType }> = [
  { name: "quarantine_id", sqlType: "VARCHAR NOT NULL", vectorType: VARCHAR },
  { name: "batch_id", sqlType: "BIGINT NOT NULL", vectorType: BIGINT },
  { name: "record", sqlType: "JSON", vectorType: VARCHAR },
  { name: "raw", sqlType: "VARCHAR", vectorType: VARCHAR },
  { name: "raw_encoding", sqlType: "VARCHAR", vectorType: VARCHAR },
  { name: "reasons", sqlType: "VARCHAR[]", vectorType: LIST(VARCHAR) },
  { name: "rule_ids", sqlType: "VARCHAR[]", vectorType: LIST(VARCHAR) },
  { name: "position", sqlType: "JSON", vectorType: VARCHAR },
  { name: "quarantined_at", sqlType: "TIMESTAMP NOT NULL", vectorType: TIMESTAMP },
];

export interface PreparedQuarantine {
  ids: string[];
  /** Column-major values, in QUARANTINE_COLUMNS order. */
  columns: Array<Array<DuckDBValue | null>>;
}

/**
 * The identity of a bad row: its source position when it has one, else its content; plus its
 * ordinal among rows with the same position and content in this request, so that two identical
 * bad records in one batch stay two rows. Neither the batch id nor the index in the batch takes
 * part, so a replay cut at different batch boundaries yields the same ids.
 */
export function quarantineIds(rows: readonly QuarantineRow[]): string[] {
  const seen = new Map<string, number>();
  return rows.map((r) => {
    const raw = r.raw === undefined ? null : typeof r.raw === "string" ? `t:${r.raw}` : `b:${bytesToBase64(r.raw)}`;
    const identity = JSON.stringify([
      r.position === undefined ? null : canonicalJson(r.position),
      raw,
      r.record === undefined ? null : canonicalJson(r.record),
    ]);
    const ordinal = seen.get(identity) ?? 0;
    seen.set(identity, ordinal + 1);
    return sha256Hex(`lakelogic.quarantine.v1\n${identity}\n${ordinal}`).slice(0, 32);
  });
}

/** What the quarantine's `record` column holds: the record, else a decode failure's envelope. */
export function storedRecord(r: QuarantineRow): unknown {
  return r.record !== undefined ? r.record : r.envelope;
}

export function prepareQuarantine(
  rows: readonly QuarantineRow[],
  batchId: number,
  includeErrorReason: boolean,
  now: Date,
): PreparedQuarantine {
  const ids = quarantineIds(rows);
  const at = new DuckDBTimestampValue(BigInt(now.getTime()) * 1000n);
  const cols: Array<Array<DuckDBValue | null>> = QUARANTINE_COLUMNS.map(() => []);
  rows.forEach((r, i) => {
    const raw = r.raw === undefined ? null : typeof r.raw === "string" ? r.raw : bytesToBase64(r.raw);
    const encoding = r.raw === undefined ? null : typeof r.raw === "string" ? "text" : "base64";
    const record = storedRecord(r);
    const values: Array<DuckDBValue | null> = [
      ids[i]!,
      BigInt(batchId),
      record === undefined ? null : safeJsonText(record),
      raw,
      encoding,
      includeErrorReason ? new DuckDBListValue(r.errors.map((e) => e.message)) : null,
      new DuckDBListValue(r.errors.map((e) => e.ruleId)),
      r.position === undefined ? null : safeJsonText(r.position),
      at,
    ];
    values.forEach((v, c) => cols[c]!.push(v));
  });
  return { ids, columns: cols };
}
