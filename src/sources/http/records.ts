/** From one polled JSON document to the records a contract sees, in watermark order. */
import { jsonText } from "../../util/exact-json.js";
import { compareFieldValues, compareKeys, fieldAt, isFieldValue, orderKey } from "../core/field-cursor.js";

export type Watermark = string | number | bigint;

/** A record of one response, before the cursor bookkeeping. */
export interface PolledRecord {
  value: unknown;
  raw: string;
  decodeError?: string;
  /** Its watermark, when the record has one. */
  mark?: Watermark;
  index: number;
}

/**
 * Numbers (bigints exactly) compare as numbers, times as instants (any offset, any fraction of a
 * second); anything else as text.
 */
export function compareMarks(a: Watermark, b: Watermark): number {
  return compareFieldValues(a, b, "time");
}

function markOf(value: unknown, path: string | undefined): Watermark | undefined {
  if (path === undefined) return undefined;
  const m: unknown = fieldAt(value, path).value;
  // A record without a usable mark is still handed over; it just never moves the watermark.
  return isFieldValue(m, "time") && !(m instanceof Date) ? m : undefined;
}

/** One row: an object as is; an array named by `fields`; anything else is quarantined. */
function toRecord(row: unknown, index: number, fields: readonly string[] | undefined, watermark: string | undefined): PolledRecord {
  const raw = jsonText(row) ?? "null";
  if (fields) {
    if (!Array.isArray(row)) return { value: undefined, raw, index, decodeError: "record is not a JSON array, but `fields` names array positions" };
    const value: Record<string, unknown> = {};
    const cells: readonly unknown[] = row;
    fields.forEach((name, i) => (value[name] = cells[i] ?? null));
    return { value, raw, index, mark: markOf(value, watermark) };
  }
  if (typeof row !== "object" || row === null || Array.isArray(row)) {
    return { value: undefined, raw, index, decodeError: `record is ${Array.isArray(row) ? "a JSON array (name its positions with `fields`)" : `not a JSON object (${row === null ? "null" : typeof row})`}` };
  }
  return { value: row, raw, index, mark: markOf(row, watermark) };
}

/**
 * The records of `doc`: the array at `recordsPath` (absent: the document, or the document as one
 * record). Returns a problem text instead when the path does not lead to an array.
 */
export function recordsOf(
  doc: unknown,
  options: { recordsPath?: string; fields?: readonly string[]; watermark?: string },
): PolledRecord[] | { problem: string } {
  let rows: unknown;
  if (options.recordsPath === undefined) rows = Array.isArray(doc) ? doc : [doc];
  else {
    const at = fieldAt(doc, options.recordsPath);
    if (!at.found) return { problem: `the response has nothing at recordsPath "${options.recordsPath}"` };
    rows = at.value === null ? [] : at.value;
    if (!Array.isArray(rows)) return { problem: `recordsPath "${options.recordsPath}" is ${typeof rows} in the response, not an array` };
  }
  const records = (rows as unknown[]).map((row, i) => toRecord(row, i, options.fields, options.watermark));
  if (options.watermark === undefined) return records;
  // Unmarked records first (they never move the watermark), then ascending: the committed
  // watermark then always covers a prefix of what was handed over. Keys once per record, not per comparison.
  const keyed = records.map((r) => ({ r, key: r.mark === undefined ? undefined : orderKey(r.mark, "time") }));
  keyed.sort((a, b) => (a.key === undefined ? (b.key === undefined ? a.r.index - b.r.index : -1) : b.key === undefined ? 1 : compareKeys(a.key, b.key, "time") || a.r.index - b.r.index));
  return keyed.map((k) => k.r);
}
