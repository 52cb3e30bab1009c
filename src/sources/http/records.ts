/** From one polled JSON document to the records a contract sees, in watermark order. */
import { jsonText } from "../../util/exact-json.js";

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

/** The value at a dotted path, `{ found: false }` when a step is missing. */
export function atPath(doc: unknown, path: string): { found: boolean; value?: unknown } {
  let here: unknown = doc;
  for (const step of path.split(".")) {
    if (Array.isArray(here) && /^\d+$/.test(step)) here = here[Number(step)];
    else if (typeof here === "object" && here !== null && Object.hasOwn(here, step)) here = (here as Record<string, unknown>)[step];
    else return { found: false };
  }
  return { found: true, value: here };
}

/** Numbers compare as numbers; anything else (ISO times) as text. */
export function compareMarks(a: Watermark, b: Watermark): number {
  if (typeof a !== "string" && typeof b !== "string") return a < b ? -1 : a > b ? 1 : 0;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function markOf(value: unknown, path: string | undefined): Watermark | undefined {
  if (path === undefined) return undefined;
  const m: unknown = atPath(value, path).value;
  if (typeof m === "number") return Number.isFinite(m) ? m : undefined;
  if (typeof m === "bigint") return m;
  // Text counts only when it reads as a time: a garbled value ("yesterday") sorts above every
  // ISO time and would otherwise hold the watermark above all later records.
  return typeof m === "string" && !Number.isNaN(Date.parse(m)) ? m : undefined;
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
    const at = atPath(doc, options.recordsPath);
    if (!at.found) return { problem: `the response has nothing at recordsPath "${options.recordsPath}"` };
    rows = at.value === null ? [] : at.value;
    if (!Array.isArray(rows)) return { problem: `recordsPath "${options.recordsPath}" is ${typeof rows} in the response, not an array` };
  }
  const records = (rows as unknown[]).map((row, i) => toRecord(row, i, options.fields, options.watermark));
  if (options.watermark === undefined) return records;
  // Unmarked records first (they never move the watermark), then ascending: the committed
  // watermark then always covers a prefix of what was handed over.
  return records.sort((a, b) => (a.mark === undefined ? (b.mark === undefined ? a.index - b.index : -1) : b.mark === undefined ? 1 : compareMarks(a.mark, b.mark) || a.index - b.index));
}
