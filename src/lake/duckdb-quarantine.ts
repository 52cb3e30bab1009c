import { quoteIdent } from "../util/sql-text.js";
import { wellFormedJson } from "../util/well-formed-json.js";
import { bytesToBase64 } from "../util/exact-json.js";
import { jsonDocument, safeJsonText } from "./json.js";
import { QUARANTINE_COLUMNS, quarantineIds, storedRecord } from "./quarantine.js";
import type { QuarantineRow } from "./types.js";

const QUARANTINE_STRUCT =
  '{"id":["VARCHAR"],"record":["VARCHAR"],"raw":["VARCHAR"],"enc":["VARCHAR"],"reasons":[["VARCHAR"]],"rules":[["VARCHAR"]],"pos":["VARCHAR"]}';

/**
 * The duckdb quarantine table: the columns every format has, then the checkpoint key of the
 * stream that wrote the row (NULL for direct writes).
 */
export const DUCKDB_QUARANTINE_COLUMNS: ReadonlyArray<{ name: string; sqlType: string }> = [
  ...QUARANTINE_COLUMNS,
  { name: "stream_key", sqlType: "VARCHAR" },
];

/**
 * Which stored quarantine rows an insert looks its ids up in (see DuckDBLakeWriter's
 * quarantineMode): every row, the rows no stream owns (stream_key NULL), or none.
 */
export type Lookup = "all" | "unowned" | "none";

/**
 * $1 the quarantine document, $2 the batch id, $3 the time (µs), $4 the stream key or NULL.
 * Rows whose id is among the rows of `target` that `lookup` names are left out. They are
 * inserted into `target`, or into `into` (an SQL name) when given: the stage of a quarantine
 * under a path, whose `target` is the listing (duckdb-quarantine-files.ts).
 */
export function quarantineInsertSql(target: string, lookup: Lookup, into?: string): string {
  const q = quoteIdent(target);
  const cols = DUCKDB_QUARANTINE_COLUMNS.map((c) => c.name).join(", ");
  return `INSERT INTO ${into ?? q} (${cols})
    SELECT s.id, $2::BIGINT, CAST(s.record AS JSON), s.raw, s.enc, s.reasons, s.rules, CAST(s.pos AS JSON), make_timestamp($3::BIGINT), $4::VARCHAR
    FROM (SELECT unnest(j.id) AS id, unnest(j.record) AS record, unnest(j.raw) AS raw, unnest(j.enc) AS enc,
                 unnest(j.reasons) AS reasons, unnest(j.rules) AS rules, unnest(j.pos) AS pos
          FROM (SELECT from_json_strict((SELECT $1::VARCHAR), '${QUARANTINE_STRUCT}') AS j)) AS s` +
    (lookup === "none"
      ? ""
      : `\n    WHERE NOT EXISTS (SELECT 1 FROM ${q} AS q WHERE ${lookup === "unowned" ? "q.stream_key IS NULL AND " : ""}q.quarantine_id = s.id)`);
}

export interface QuarantineDocument {
  ids: string[];
  doc: string;
}

/** A request's bad rows as one JSON document for `quarantineInsertSql`, with their ids. */
export function quarantineDocument(rows: readonly QuarantineRow[], includeErrorReason: boolean): QuarantineDocument {
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
    const stored = storedRecord(r);
    record[i] = stored === undefined ? null : wellFormedJson(safeJsonText(stored));
    raw[i] = r.raw === undefined ? null : typeof r.raw === "string" ? r.raw : bytesToBase64(r.raw);
    enc[i] = r.raw === undefined ? null : typeof r.raw === "string" ? "text" : "base64";
    reasons[i] = includeErrorReason ? r.errors.map((e) => e.message) : null;
    rules[i] = r.errors.map((e) => e.ruleId);
    pos[i] = r.position === undefined ? null : wellFormedJson(safeJsonText(r.position));
  }
  return { ids, doc: jsonDocument({ id: ids, record, raw, enc, reasons, rules, pos }) };
}
