/**
 * What counts as a valid value of each contract type, written down once.
 *
 * The regular expressions are used verbatim by both engines (they stay inside the
 * RE2 / Rust-regex common subset: `[0-9]` rather than `\d`, explicit whitespace).
 * `coerceValue` is the same definition in plain JavaScript. The engines never call
 * it per row; it canonicalises contract constants (accepted_values) and serves the
 * tests as an oracle that both engines are checked against.
 */
import type { FieldSpec, FieldType } from "../contract/types.js";
import { daysFromCivil, validYmd } from "../util/civil-time.js";
import { jsonText, parseJsonRecord } from "../util/exact-json.js";
import { wellFormedJson } from "../util/well-formed-json.js";

/** Leading/trailing whitespace that non-string types ignore: ASCII space, tab, CR, LF only. */
const WS = "[ \\t\\n\\r]*";

export const INTEGER_RE = `^${WS}([+-]?[0-9]+)${WS}$`;
export const DOUBLE_RE = `^${WS}([+-]?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)${WS}$`;
export const DECIMAL_RE = `^${WS}([+-]?[0-9]+(?:\\.[0-9]+)?)${WS}$`;
export const TRUE_RE = `^${WS}(?:[Tt][Rr][Uu][Ee]|1)${WS}$`;
export const FALSE_RE = `^${WS}(?:[Ff][Aa][Ll][Ss][Ee]|0)${WS}$`;
export const DATE_RE = `^${WS}([0-9]{4}-[0-9]{2}-[0-9]{2})${WS}$`;
/**
 * `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM`, optional `:SS`, optional
 * `.f` (1–9 digits), optional zone `Z` / `±HH` / `±HHMM` / `±HH:MM`. No zone means UTC.
 */
export const TIMESTAMP_RE =
  `^${WS}([0-9]{4}-[0-9]{2}-[0-9]{2}` +
  `(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{1,9})?)?` +
  `(?:Z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?)?)${WS}$`;

/** 0001-01-01 and 9999-12-31 as days since 1970-01-01: the supported date range. */
export const MIN_DAYS = -719162;
export const MAX_DAYS = 2932896;
export const MIN_MICROS = BigInt(MIN_DAYS) * 86_400_000_000n;
export const MAX_MICROS = BigInt(MAX_DAYS + 1) * 86_400_000_000n - 1n;
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * The text a JS number stands for: its shortest round-trip digits (what JSON.stringify
 * prints) written without an exponent; `-0` keeps its sign.
 */
export function numberText(n: number): string {
  if (Object.is(n, -0)) return "-0";
  const s = String(n);
  const e = s.indexOf("e");
  if (e < 0) return s;
  // Expand d.ddde±x into plain digits.
  const neg = s.startsWith("-");
  const mantissa = s.slice(neg ? 1 : 0, e);
  const exp = Number(s.slice(e + 1));
  const dot = mantissa.indexOf(".");
  const digits = dot < 0 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  const point = (dot < 0 ? mantissa.length : dot) + exp;
  let out: string;
  if (point <= 0) out = "0." + "0".repeat(-point) + digits;
  else if (point >= digits.length) out = digits + "0".repeat(point - digits.length);
  else out = digits.slice(0, point) + "." + digits.slice(point);
  return (neg ? "-" : "") + out;
}

export type TypeLabelSource = Pick<FieldSpec, "type" | "precision" | "scale">;

export function typeLabel(f: TypeLabelSource): string {
  return f.type === "decimal" ? `decimal(${decimalPrecision(f)},${decimalScale(f)})` : f.type;
}
export const decimalPrecision = (f: Pick<FieldSpec, "precision">): number => f.precision ?? 38;
export const decimalScale = (f: Pick<FieldSpec, "scale">): number => f.scale ?? 9;

/** The text form of a raw JS value as the engines see it, or undefined when it has none. */
export type RawTag = "s" | "i" | "n" | "b" | "o" | "x";

/** The tag and text the JS pass gives a value (see encode.ts). */
export function rawText(v: unknown): { tag: RawTag; text: string } | undefined {
  if (v === null || v === undefined) return undefined;
  switch (typeof v) {
    case "string":
      return isWellFormed(v) ? { tag: "s", text: v } : { tag: "x", text: "" };
    case "number":
      if (Number.isInteger(v)) return { tag: "i", text: numberText(v) };
      return Number.isFinite(v) ? { tag: "n", text: numberText(v) } : { tag: "x", text: "" };
    case "bigint":
      return { tag: "i", text: v.toString() };
    case "boolean":
      return { tag: "b", text: v ? "true" : "false" };
    case "object":
      if (v instanceof Date) {
        return Number.isNaN(v.getTime()) ? { tag: "x", text: "" } : { tag: "s", text: v.toISOString() };
      }
      return { tag: "o", text: "" };
    default:
      return { tag: "x", text: "" };
  }
}

const hasIsWellFormed = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function";
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** False for strings with unpaired UTF-16 surrogates: they have no UTF-8 form to hand an engine. */
export function isWellFormed(s: string): boolean {
  return hasIsWellFormed ? (s as unknown as { isWellFormed(): boolean }).isWellFormed() : !LONE_SURROGATE.test(s);
}

const re = (source: string): RegExp => new RegExp(source);
const INTEGER = re(INTEGER_RE);
const DOUBLE = re(DOUBLE_RE);
const DECIMAL = re(DECIMAL_RE);
const TRUE = re(TRUE_RE);
const FALSE = re(FALSE_RE);
const DATE = re(DATE_RE);
const TIMESTAMP = re(TIMESTAMP_RE);

export type Coerced =
  | { ok: true; value: string | number | bigint | boolean | null | unknown }
  | { ok: false };

/**
 * The canonical value of `v` for a field of type `type`, exactly as the engines produce it
 * in good rows. `{ ok: false }` means "cannot convert" (a `type:<field>` failure).
 */
export function coerceValue(v: unknown, f: TypeLabelSource): Coerced {
  if (v === null || v === undefined) return { ok: true, value: null };
  if (f.type === "json") {
    if (typeof v === "number" && !Number.isFinite(v)) return { ok: false };
    try {
      // Lone surrogates become U+FFFD: the value is JSON that DuckDB (and the lake) can read.
      const t = jsonText(v);
      return t === undefined ? { ok: false } : { ok: true, value: parseJsonRecord(wellFormedJson(t)) };
    } catch {
      return { ok: false };
    }
  }
  const raw = rawText(v);
  if (raw === undefined) return { ok: true, value: null };
  if (raw.tag === "o" || raw.tag === "x") return { ok: false };
  const value = coerceText(raw.tag, raw.text, f.type, f);
  return value === undefined ? { ok: false } : { ok: true, value };
}

function coerceText(
  tag: RawTag,
  t: string,
  type: Exclude<FieldType, "json">,
  f: TypeLabelSource,
): string | number | bigint | boolean | undefined {
  const isNumber = tag === "i" || tag === "n";
  // Only strings are parsed; numbers and booleans convert by what they are.
  if (tag !== "s") {
    switch (type) {
      case "string":
        return t;
      case "integer":
        return tag === "i" ? coerceText("s", t, type, f) : undefined;
      case "double":
      case "decimal":
        return isNumber ? coerceText("s", t, type, f) : undefined;
      case "boolean":
        if (tag === "b") return t === "true";
        return tag === "i" && t === "1" ? true : tag === "i" && (t === "0" || t === "-0") ? false : undefined;
      default:
        return undefined;
    }
  }
  switch (type) {
    case "string":
      return t;
    case "integer": {
      const m = INTEGER.exec(t);
      if (!m) return undefined;
      const b = BigInt(m[1]!);
      if (b < INT64_MIN || b > INT64_MAX) return undefined;
      return b >= -BigInt(MAX_SAFE) && b <= BigInt(MAX_SAFE) ? Number(b) : b;
    }
    case "double": {
      const m = DOUBLE.exec(t);
      if (!m) return undefined;
      const d = Number(m[1]!);
      return Number.isFinite(d) ? d : undefined;
    }
    case "decimal": {
      const m = DECIMAL.exec(t);
      return m ? decimalCanonical(m[1]!, decimalPrecision(f), decimalScale(f)) : undefined;
    }
    case "boolean":
      return TRUE.test(t) ? true : FALSE.test(t) ? false : undefined;
    case "date": {
      const m = DATE.exec(t);
      if (!m) return undefined;
      const days = civilToDays(m[1]!);
      return days !== undefined && days >= MIN_DAYS ? m[1]! : undefined;
    }
    case "timestamp": {
      const m = TIMESTAMP.exec(t);
      if (!m) return undefined;
      const us = timestampMicros(m[1]!);
      if (us === undefined || us < MIN_MICROS || us > MAX_MICROS) return undefined;
      return formatMicros(us);
    }
  }
}

/** Round half away from zero on the first dropped digit; undefined when too many integer digits. */
export function decimalCanonical(text: string, precision: number, scale: number): string | undefined {
  const m = /^([+-]?)([0-9]+)(?:\.([0-9]+))?$/.exec(text);
  if (!m) return undefined;
  const neg = m[1] === "-";
  const frac = (m[3] ?? "").padEnd(scale + 1, "0");
  let digits = BigInt(m[2]! + frac.slice(0, scale));
  if (frac.charCodeAt(scale) >= 0x35 /* '5' */) digits += 1n;
  const s = digits.toString().padStart(scale + 1, "0");
  const intPart = s.slice(0, s.length - scale);
  if (intPart.replace(/^0+/, "").length > precision - scale) return undefined;
  const out = scale > 0 ? `${intPart}.${s.slice(s.length - scale)}` : intPart;
  return neg && digits !== 0n ? "-" + out : out;
}

/** Days since 1970-01-01 for a valid proleptic-Gregorian `YYYY-MM-DD`, else undefined. */
export function civilToDays(ymd: string): number | undefined {
  const y = Number(ymd.slice(0, 4));
  const m = Number(ymd.slice(5, 7));
  const d = Number(ymd.slice(8, 10));
  return validYmd(y, m, d) ? daysFromCivil(y, m, d) : undefined;
}

/** Microseconds since epoch (UTC) of text matching TIMESTAMP_RE's group 1. */
export function timestampMicros(ts: string): bigint | undefined {
  const days = civilToDays(ts.slice(0, 10));
  if (days === undefined) return undefined;
  let us = BigInt(days) * 86_400_000_000n;
  if (ts.length > 10) {
    const m = /^.{10}[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?(Z|([+-])([0-9]{2}):?([0-9]{2})?)?$/.exec(ts);
    if (!m) return undefined;
    us += BigInt(Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0)) * 1_000_000n;
    us += BigInt((m[4] ?? "").padEnd(6, "0").slice(0, 6));
    if (m[6] !== undefined) {
      const off = BigInt(Number(m[7]) * 60 + Number(m[8] ?? 0)) * 60_000_000n;
      us += m[6] === "-" ? off : -off;
    }
  }
  return us;
}

/** `YYYY-MM-DDTHH:MM:SS.ffffffZ` for microseconds since epoch (years 0001–9999). */
export function formatMicros(us: bigint): string {
  const ms = Number(us / 1000n - (us % 1000n < 0n ? 1n : 0n));
  const micro = Number(((us % 1000n) + 1000n) % 1000n);
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ within our range
  return `${iso.slice(0, 23)}${String(micro).padStart(3, "0")}Z`;
}
