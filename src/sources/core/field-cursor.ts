/*
 * A cursor on a record field: the position of the last record handed over, which is the greatest
 * value of a field (and an optional tie-breaker) among the records delivered so far, because the
 * source delivers in this order — the HTTP poll sorts each response by it, the keyset source
 * checks every chunk against it. One reading of the field and one typed order for both, and the
 * value checks and display `cursorFn` shares.
 *
 * The cursor keeps each value as the record had it (the text of a time, a bigint, a Date), so a
 * checkpoint stores exactly what it stored before (the cursor codec tags bigint and Date).
 */

export type FieldValue = number | bigint | string | Date;

/** A record's place in field order; `tieBreaker` orders the records that share a watermark. */
export interface FieldPosition {
  watermark: FieldValue;
  tieBreaker?: FieldValue;
}

/**
 * How two strings order. "time": as instants when both read as times (ISO-8601 to any fraction
 * of a second and at any offset, or an RFC 2822 / HTTP date), else by code unit — an HTTP feed's
 * values. "collation": not at all in JS, only equal or not, since the database that sorted them
 * orders text by its own collation — the keyset source's values.
 */
export type StringOrder = "time" | "collation";

/**
 * The value at a dotted path into nested objects and arrays ("properties.updated", "rows.0.t");
 * `found: false` when a step is missing. (The keyset source names a column, dots and all.)
 */
export function fieldAt(record: unknown, path: string): { found: boolean; value?: unknown } {
  let here: unknown = record;
  for (const step of path.split(".")) {
    if (Array.isArray(here) && /^\d+$/.test(step)) here = here[Number(step)];
    else if (typeof here === "object" && here !== null && Object.hasOwn(here, step)) here = (here as Record<string, unknown>)[step];
    else return { found: false };
  }
  return { found: true, value: here };
}

/** No value: the source decides whether that fails the read or leaves the cursor where it is. */
export function isMissing(value: unknown): value is null | undefined {
  return value === undefined || value === null;
}

/**
 * A value the order knows: a finite number, a bigint, a valid Date, and a string — under "time"
 * only one that reads as a time, since a garbled one ("yesterday") would sort above every ISO
 * time as text and hold the cursor above all later records.
 */
export function isFieldValue(value: unknown, strings: StringOrder): value is FieldValue {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value);
    case "bigint":
      return true;
    case "string":
      return strings === "collation" || timeOf(value) !== undefined;
    case "object":
      return value instanceof Date && !Number.isNaN(value.getTime());
    default:
      return false;
  }
}

/** An instant to any precision: milliseconds since the epoch, then the digits below a millisecond. */
interface Instant {
  ms: number;
  sub: string;
}

/** A value ready to compare many times (a response is sorted by it). */
export type OrderKey =
  | { kind: "number"; value: number | bigint }
  | { kind: "time"; at: Instant; text?: string }
  | { kind: "text"; value: string };

const ISO = /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;
/** "Wed, 02 Dec 2026 10:00:00 GMT", "2 Dec 2026 10:00 +0100": whole seconds, Date.parse reads them exactly. */
const RFC_2822 = /^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}(?::\d{2})?\s+(?:GMT|UTC?|Z|[+-]\d{4})$/i;

/**
 * The instant of a time text. ISO-8601 is read exactly: the offset applies and no digit of the
 * fraction is lost (Date.parse keeps milliseconds, and text order puts "10:00:00.5Z" before
 * "10:00:00Z"). Without an offset it is UTC, as a date alone is for Date.parse, so every worker
 * that resumes a cursor orders it alike whatever its time zone. Nothing else is a time, though
 * Date.parse would read "evt-10" or "9" as months of 2001.
 */
export function timeOf(text: string): Instant | undefined {
  const m = ISO.exec(text);
  if (m === null) {
    const ms = RFC_2822.test(text) ? Date.parse(text) : Number.NaN;
    return Number.isNaN(ms) ? undefined : { ms, sub: "" };
  }
  const [, year, month, day, hour = "00", minute = "00", second = "00", fraction = "", zone = "Z"] = m;
  const utc = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}.${fraction.slice(0, 3).padEnd(3, "0")}Z`);
  const offset = /^[+-](\d{2}):?(\d{2})?$/.exec(zone);
  const [oh, om] = offset === null ? [0, 0] : [Number(offset[1]), Number(offset[2] ?? "0")];
  if (Number.isNaN(utc) || oh > 23 || om > 59) return undefined;
  const minutes = (zone.startsWith("-") ? -1 : 1) * (oh * 60 + om);
  return { ms: utc - minutes * 60_000, sub: fraction.slice(3).replace(/0+$/, "") };
}

export function orderKey(value: FieldValue, strings: StringOrder): OrderKey {
  if (typeof value === "number" || typeof value === "bigint") return { kind: "number", value };
  if (value instanceof Date) return { kind: "time", at: { ms: value.getTime(), sub: "" } };
  const at = strings === "time" ? timeOf(value) : undefined;
  return at === undefined ? { kind: "text", value } : { kind: "time", at, text: value };
}

function sign(a: number | bigint | string, b: number | bigint | string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareInstants(a: Instant, b: Instant): number {
  if (a.ms !== b.ms) return sign(a.ms, b.ms);
  const width = Math.max(a.sub.length, b.sub.length);
  return sign(a.sub.padEnd(width, "0"), b.sub.padEnd(width, "0"));
}

/**
 * Order of two keys. Numbers and bigints compare exactly, also with each other (2^53 + 1 as a
 * bigint is above 2^53 as a number); times as instants. Under "collation", any other pair has
 * no order in JS (undefined); under "time" it compares as text, as the HTTP poll always did.
 */
export function compareKeys(a: OrderKey, b: OrderKey, strings: "time"): number;
export function compareKeys(a: OrderKey, b: OrderKey, strings: StringOrder): number | undefined;
export function compareKeys(a: OrderKey, b: OrderKey, strings: StringOrder): number | undefined {
  if (a.kind === "number" && b.kind === "number") return sign(a.value, b.value);
  if (a.kind === "time" && b.kind === "time") return compareInstants(a.at, b.at);
  if (strings === "collation") return undefined;
  return sign(keyText(a), keyText(b));
}

function keyText(k: OrderKey): string {
  return k.kind === "time" ? (k.text ?? new Date(k.at.ms).toISOString()) : String(k.value);
}

export function compareFieldValues(a: FieldValue, b: FieldValue, strings: "time"): number;
export function compareFieldValues(a: FieldValue, b: FieldValue, strings: StringOrder): number | undefined;
export function compareFieldValues(a: FieldValue, b: FieldValue, strings: StringOrder): number | undefined {
  return compareKeys(orderKey(a, strings), orderKey(b, strings), strings);
}

/**
 * Identity, not order: 1 and 1n, or two spellings of one instant, are different values (that
 * compare as equal). Dates are the same when their times are.
 */
export function sameValue(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return a === b;
}

/** Identity of a value as a string (type-tagged so 1 and "1" differ), for sets of seen values. */
export function valueKey(v: FieldValue | undefined): string {
  if (v === undefined) return "u";
  if (v instanceof Date) return `d${v.getTime()}`;
  return `${(typeof v)[0]}${String(v)}`;
}

export function samePosition(a: FieldPosition, b: FieldPosition): boolean {
  return sameValue(a.watermark, b.watermark) && sameValue(a.tieBreaker, b.tieBreaker);
}

/** Watermark first, then the tie-breaker when both have one; undefined where JS cannot know the order. */
export function comparePositions(a: FieldPosition, b: FieldPosition, strings: StringOrder): number | undefined {
  const wm = sameValue(a.watermark, b.watermark) ? 0 : compareFieldValues(a.watermark, b.watermark, strings);
  if (wm !== 0 || a.tieBreaker === undefined || b.tieBreaker === undefined) return wm;
  return sameValue(a.tieBreaker, b.tieBreaker) ? 0 : compareFieldValues(a.tieBreaker, b.tieBreaker, strings);
}

/** A position the caller can keep: a Date is copied, everything else is immutable. */
export function copyPosition(p: FieldPosition): FieldPosition {
  const clone = (v: FieldValue): FieldValue => (v instanceof Date ? new Date(v.getTime()) : v);
  return p.tieBreaker === undefined ? { watermark: clone(p.watermark) } : { watermark: clone(p.watermark), tieBreaker: clone(p.tieBreaker) };
}

/** A value for messages: 7, 9007199254740993n, "text", a Date as its ISO time; other cursors as JSON. */
export function showValue(v: unknown): string {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
  if (typeof v === "bigint") return `${v}n`;
  if (v === undefined) return "undefined";
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x)) ?? typeof v;
  } catch {
    return typeof v;
  }
}

export function showPosition(p: FieldPosition): string {
  return p.tieBreaker === undefined ? `(${showValue(p.watermark)})` : `(${showValue(p.watermark)}, ${showValue(p.tieBreaker)})`;
}
