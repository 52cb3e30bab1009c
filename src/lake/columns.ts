import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  DuckDBDataChunk,
  DuckDBDateValue,
  DuckDBTimestampValue,
  DuckDBVector,
  TIMESTAMP,
  VARCHAR,
  type DuckDBType,
  type DuckDBValue,
} from "../util/duckdb.js";
import type { FieldType } from "../contract/types.js";
import type { GoodColumns, Row } from "../engine/types.js";
import { EXTRA_COLUMN, RECORD_COLUMN, type LakeConfig } from "./config.js";
import { LakeWriteError } from "./errors.js";
import { toJsonText } from "./json.js";
import { wellFormedJson } from "../util/well-formed-json.js";
import { canonicalIsoMicrosNumber, daysFromCivil, digits, validYmd } from "../util/civil-time.js";

/**
 * How one table column is filled from a row. Values are converted in JS to the vector's type
 * (bigint, micros, days) so that DuckDB receives typed data chunks and no SQL cast is needed;
 * decimal and json travel as text and the appender casts them.
 */
export interface ColumnPlan {
  name: string;
  /** Column type in DDL. */
  sqlType: string;
  /** Type of the data-chunk vector handed to the appender. */
  vectorType: DuckDBType;
  kind: FieldType;
  get: (row: Row) => unknown;
  convert: (value: unknown) => DuckDBValue | null;
  /** The same value for the DuckDB writer's JSON batch document (see `payloadOf`). */
  payload: PayloadCodec;
}

/** A value as it travels in the DuckDB writer's JSON batch document. */
export type PayloadValue = string | number | boolean | null;

/**
 * How a column crosses into DuckDB as JSON: `jsonType` is the list element type `from_json`
 * reads, `sql` turns that element into the column's type. Values are checked here, in JS, so a
 * bad value fails with the row and column named (DuckDB would only say "conversion error").
 */
export interface PayloadCodec {
  jsonType: "VARCHAR" | "BIGINT" | "DOUBLE" | "BOOLEAN";
  value: (value: unknown) => PayloadValue;
  sql: (ref: string) => string;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function quoteString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

export function sqlTypeOf(kind: FieldType, precision?: number, scale?: number): string {
  switch (kind) {
    case "string":
      return "VARCHAR";
    case "integer":
      return "BIGINT";
    case "double":
      return "DOUBLE";
    case "decimal":
      return `DECIMAL(${precision ?? 38},${scale ?? 9})`;
    case "boolean":
      return "BOOLEAN";
    case "date":
      return "DATE";
    case "timestamp":
      return "TIMESTAMP";
    case "json":
      return "JSON";
  }
}

/** Column plans of the good-rows table, in table order. */
export function planColumns(config: LakeConfig): ColumnPlan[] {
  if (config.schemaless) {
    // No declared fields: primary-key columns (as JSON, so 1 and "1" stay distinct) + the record.
    const plans: ColumnPlan[] = config.primaryKey.map((k) => plan(k, "json", member(k)));
    plans.push(plan(RECORD_COLUMN, "json", (row) => row));
    return plans;
  }
  const plans = config.fields.map((f) => plan(f.name, f.type, member(f.name), f.precision, f.scale));
  if (config.keepExtra) plans.push(plan(EXTRA_COLUMN, "json", extraKeys(config.fields.map((f) => f.name))));
  return plans;
}

/**
 * `row => row["name"]`, compiled for this name: one shared `row => row[name]` sees every
 * column's key at the same site and becomes a slow megamorphic lookup.
 */
function member(name: string): (row: Row) => unknown {
  return new Function("row", `return row[${JSON.stringify(name)}];`) as (row: Row) => unknown;
}

/** The row's keys beyond the declared ones, as an object, or undefined when there are none. */
function extraKeys(declared: readonly string[]): (row: Row) => unknown {
  // A switch over the declared names as literals: far cheaper per key than a Set lookup.
  const cases = declared.map((n) => `case ${JSON.stringify(n)}:`).join(" ");
  return new Function(
    "hasOwn",
    `return (row) => { let extra; for (const k in row) { switch (k) { ${cases} break; default: if (hasOwn(row, k)) (extra ??= {})[k] = row[k]; } } return extra; };`,
  )(Object.hasOwn) as (row: Row) => unknown;
}

function plan(name: string, kind: FieldType, get: (row: Row) => unknown, precision?: number, scale?: number): ColumnPlan {
  const sqlType = sqlTypeOf(kind, precision, scale);
  const convert = converterOf(kind, name);
  return {
    name,
    kind,
    sqlType,
    vectorType: vectorTypeOf(kind),
    get,
    convert,
    payload: payloadCodecOf(kind, name, sqlType, convert),
  };
}

function vectorTypeOf(kind: FieldType): DuckDBType {
  switch (kind) {
    case "integer":
      return BIGINT;
    case "double":
      return DOUBLE;
    case "boolean":
      return BOOLEAN;
    case "date":
      return DATE;
    case "timestamp":
      return TIMESTAMP;
    default:
      return VARCHAR; // string, decimal (cast by the appender), json (text)
  }
}

function bad(column: string, kind: FieldType, value: unknown): never {
  let shown: string;
  try {
    shown = typeof value === "bigint" ? `${value}n` : (JSON.stringify(value) ?? String(value));
  } catch {
    shown = String(value);
  }
  throw new LakeWriteError(
    `column "${column}" (${kind}): cannot store ${typeof value} ${shown.slice(0, 80)}; ` +
      "good rows must carry the contract's canonical values (see docs/lake.md)",
  );
}

const INT_RE = /^[+-]?\d+$/;

function converterOf(kind: FieldType, column: string): (value: unknown) => DuckDBValue | null {
  switch (kind) {
    case "string":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "string") return v;
        if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") return String(v);
        if (v instanceof Date) return v.toISOString();
        return toJsonText(v);
      };
    case "integer":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "bigint") return v;
        if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
        if (typeof v === "string" && INT_RE.test(v)) return BigInt(v);
        return bad(column, kind, v);
      };
    case "double":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "number") return v;
        if (typeof v === "bigint") return Number(v);
        if (typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v))) return Number(v);
        return bad(column, kind, v);
      };
    case "decimal":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "string") return v;
        if (typeof v === "number" && Number.isFinite(v)) return String(v);
        if (typeof v === "bigint") return v.toString();
        return bad(column, kind, v);
      };
    case "boolean":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "boolean") return v;
        if (v === "true") return true;
        if (v === "false") return false;
        return bad(column, kind, v);
      };
    case "date":
      return (v) => {
        if (v === null || v === undefined) return null;
        const days = toEpochDays(v);
        return days === undefined ? bad(column, kind, v) : new DuckDBDateValue(days);
      };
    case "timestamp":
      return (v) => {
        if (v === null || v === undefined) return null;
        const micros = toEpochMicros(v);
        return micros === undefined ? bad(column, kind, v) : new DuckDBTimestampValue(micros);
      };
    case "json":
      return (v) => (v === undefined || v === null ? null : toJsonText(v));
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A bigint as a JSON value: a number when exact, else its digits (from_json reads both as BIGINT). */
function int64Payload(b: bigint, column: string, kind: FieldType, shown: unknown): PayloadValue {
  if (b < INT64_MIN || b > INT64_MAX) return bad(column, kind, shown);
  return b >= -MAX_SAFE_BIG && b <= MAX_SAFE_BIG ? Number(b) : b.toString();
}
const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The JSON form of each column kind. It accepts exactly what `converterOf` accepts and stores
 * the same value; canonical values (what the engines produce) take the first branch.
 */
function payloadCodecOf(
  kind: FieldType,
  column: string,
  sqlType: string,
  convert: (value: unknown) => DuckDBValue | null,
): PayloadCodec {
  switch (kind) {
    case "string":
      // The converter already yields a string (or null).
      return { jsonType: "VARCHAR", value: (v) => (typeof v === "string" ? v : (convert(v) as string | null)), sql: (r) => r };
    case "decimal":
      // Text, cast by DuckDB exactly as the appender did.
      return {
        jsonType: "VARCHAR",
        value: (v) => (typeof v === "string" ? v : (convert(v) as string | null)),
        sql: (r) => `CAST(${r} AS ${sqlType})`,
      };
    case "json":
      return {
        jsonType: "VARCHAR",
        value: (v) => {
          const text = convert(v) as string | null;
          return text === null ? null : wellFormedJson(text);
        },
        sql: (r) => `CAST(${r} AS JSON)`,
      };
    case "boolean":
      return { jsonType: "BOOLEAN", value: (v) => (typeof v === "boolean" ? v : (convert(v) as boolean | null)), sql: (r) => r };
    case "integer":
      return {
        jsonType: "BIGINT",
        value: (v) => {
          if (typeof v === "number" && Number.isSafeInteger(v)) return v;
          if (v === null || v === undefined) return null;
          if (typeof v === "bigint") return int64Payload(v, column, kind, v);
          if ((typeof v === "number" && Number.isInteger(v)) || (typeof v === "string" && INT_RE.test(v))) {
            return int64Payload(BigInt(v), column, kind, v);
          }
          return bad(column, kind, v);
        },
        sql: (r) => r,
      };
    case "double":
      return {
        jsonType: "DOUBLE",
        value: (v) => {
          const d = typeof v === "number" ? v : (convert(v) as number | null);
          if (d === null) return null;
          // JSON has no NaN, ±Infinity or -0: DuckDB reads these spellings as the same doubles.
          if (!Number.isFinite(d)) return String(d);
          return d === 0 && 1 / d < 0 ? "-0" : d;
        },
        sql: (r) => r,
      };
    case "date":
      // Days since the epoch, as the appender received them.
      return {
        jsonType: "BIGINT",
        value: (v) => {
          if (v === null || v === undefined) return null;
          const days = toEpochDays(v);
          return days === undefined ? bad(column, kind, v) : days;
        },
        sql: (r) => `CAST(DATE '1970-01-01' + CAST(${r} AS INTEGER) AS DATE)`,
      };
    case "timestamp":
      // Microseconds since the epoch; a number while exact (until the year 2255), else digits.
      return {
        jsonType: "BIGINT",
        value: (v) => {
          if (v === null || v === undefined) return null;
          const fast = typeof v === "string" ? canonicalIsoMicrosNumber(v) : undefined;
          if (fast !== undefined) return fast;
          const micros = toEpochMicros(v);
          return micros === undefined ? bad(column, kind, v) : int64Payload(micros, column, kind, v);
        },
        sql: (r) => `make_timestamp(${r})`,
      };
  }
}

const DATE_RE = /^(-?\d{4,6})-(\d{2})-(\d{2})$/;
// Date, optional time with up to 9 fractional digits, optional Z or ±hh[:mm] offset.
const TS_RE = /^(-?\d{4,6})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

export function toEpochDays(v: unknown): number | undefined {
  if (typeof v === "string") {
    // Fast path for the canonical "YYYY-MM-DD".
    if (v.length === 10 && v.charCodeAt(4) === 45 && v.charCodeAt(7) === 45) {
      const y = digits(v, 0, 4);
      const mo = digits(v, 5, 2);
      const d = digits(v, 8, 2);
      if (y >= 0 && mo >= 0 && d >= 0) return validYmd(y, mo, d) ? daysFromCivil(y, mo, d) : undefined;
    }
    const m = DATE_RE.exec(v);
    if (m) {
      const y = Number(m[1]);
      const mo = Number(m[2]);
      const d = Number(m[3]);
      return validYmd(y, mo, d) ? daysFromCivil(y, mo, d) : undefined;
    }
    const micros = toEpochMicros(v);
    return micros === undefined ? undefined : Number(floorDiv(micros, 86_400_000_000n));
  }
  if (v instanceof Date) {
    const t = v.getTime();
    return Number.isNaN(t) ? undefined : Math.floor(t / 86_400_000);
  }
  return undefined;
}

export function toEpochMicros(v: unknown): bigint | undefined {
  if (v instanceof Date) {
    const t = v.getTime();
    return Number.isNaN(t) ? undefined : BigInt(t) * 1000n;
  }
  if (typeof v !== "string") return undefined;
  const fast = canonicalIsoMicrosNumber(v);
  if (fast !== undefined) return BigInt(fast);
  // No Date.parse fallback: it reads non-ISO strings in the machine's local time zone.
  const m = TS_RE.exec(v);
  if (!m) return undefined;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  const h = m[4] === undefined ? 0 : Number(m[4]);
  const mi = m[5] === undefined ? 0 : Number(m[5]);
  const s = m[6] === undefined ? 0 : Number(m[6]);
  if (!validYmd(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined;
  const frac = m[7] === undefined ? 0 : Math.floor(Number(m[7].padEnd(9, "0")) / 1000);
  let offsetMin = 0;
  const tz = m[8];
  if (tz !== undefined && tz !== "Z" && tz !== "z") {
    const sign = tz[0] === "-" ? -1 : 1;
    const digits = tz.slice(1).replace(":", "");
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + (digits.length > 2 ? Number(digits.slice(2, 4)) : 0));
  }
  const seconds = daysFromCivil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offsetMin * 60;
  return BigInt(seconds) * 1_000_000n + BigInt(frac);
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

/**
 * Which rows of a batch are written, and the key columns already converted for them. Keyed
 * strategies keep only the last row per key (arrival order). Keys are compared on converted
 * values, so 1 and 1n, or two spellings of one instant, are one key.
 */
export interface Selection {
  /** Indices into the input rows, in write order. */
  selected: number[];
  /** Converted values of the key columns (by plan index), aligned with `selected`. */
  converted: Map<number, Array<DuckDBValue | null>>;
}

export function selectRows(plans: readonly ColumnPlan[], rows: readonly Row[], keyColumns: readonly number[] | undefined): Selection {
  const n = rows.length;
  if (!keyColumns || keyColumns.length === 0) return { selected: range(n), converted: new Map() };
  const all = range(n);
  const keyValues = keyColumns.map((c) => convertColumn(plans[c]!, rows, all));
  const last = new Map<unknown, number>();
  if (keyColumns.length === 1) {
    // One key column: its primitive value is the Map key (no string building per row).
    const kind = plans[keyColumns[0]!]!.kind;
    const values = keyValues[0]!;
    for (let i = 0; i < n; i++) last.set(keyPrimitive(kind, values[i] ?? null), i);
  } else {
    for (let i = 0; i < n; i++) {
      let key = "";
      for (let k = 0; k < keyColumns.length; k++) key += `${String(keyPrimitive(plans[keyColumns[k]!]!.kind, keyValues[k]![i] ?? null))}\u0000`;
      last.set(key, i);
    }
  }
  if (last.size === n) {
    return { selected: all, converted: new Map(keyColumns.map((c, k) => [c, keyValues[k]!])) };
  }
  const selected = [...last.values()].sort((a, b) => a - b);
  return {
    selected,
    converted: new Map(keyColumns.map((c, k) => [c, selected.map((i) => keyValues[k]![i] ?? null)])),
  };
}

/** One column's values for the selected rows. Throws LakeWriteError naming the row and column. */
export function convertColumn(plan: ColumnPlan, rows: readonly Row[], selected: readonly number[]): Array<DuckDBValue | null> {
  const out = new Array<DuckDBValue | null>(selected.length);
  const { get, convert } = plan;
  for (let j = 0; j < selected.length; j++) {
    const i = selected[j]!;
    try {
      out[j] = convert(get(rows[i]!));
    } catch (e) {
      if (e instanceof LakeWriteError) throw new LakeWriteError(`good row ${i}: ${e.message}`);
      throw e;
    }
  }
  return out;
}

/** Every column for the selected rows (key columns reused from the selection). */
export function convertAll(plans: readonly ColumnPlan[], rows: readonly Row[], selection: Selection): Array<Array<DuckDBValue | null>> {
  return plans.map((p, c) => selection.converted.get(c) ?? convertColumn(p, rows, selection.selected));
}

function range(n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** A value that is equal (SameValueZero) exactly when DuckDB's key comparison says equal. */
function keyPrimitive(kind: FieldType, v: DuckDBValue | null): unknown {
  if (v === null) return "\u0001null";
  if (v instanceof DuckDBTimestampValue) return v.micros;
  if (v instanceof DuckDBDateValue) return v.days;
  if (kind === "decimal" && typeof v === "string") return normalizeDecimal(v);
  if (typeof v === "string") return kind === "string" || kind === "json" ? `s${v}` : v;
  return v; // bigint, number (0 and -0 are SameValueZero-equal), boolean
}

/** "001.50" and "1.5" are one DECIMAL key. */
function normalizeDecimal(text: string): string {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?\s*$/.exec(text);
  if (!m) return text;
  const int = (m[2] ?? "").replace(/^0+/, "") || "0";
  const frac = (m[3] ?? "").replace(/0+$/, "");
  const sign = m[1] === "-" && (int !== "0" || frac !== "") ? "-" : "";
  return `${sign}${int}${frac ? `.${frac}` : ""}`;
}

/** Data chunks (≤ the vector size each) of `count` rows, for the appender. A missing column is all NULL. */
export function buildChunks(
  types: readonly DuckDBType[],
  columns: ReadonlyArray<ReadonlyArray<DuckDBValue | null> | undefined>,
  count: number,
): DuckDBDataChunk[] {
  const chunks: DuckDBDataChunk[] = [];
  const size = DuckDBVector.standardSize();
  for (let off = 0; off < count; off += size) {
    const n = Math.min(size, count - off);
    const chunk = DuckDBDataChunk.create(types, n);
    for (let c = 0; c < types.length; c++) {
      const vector = chunk.getColumnVector(c);
      const col = columns[c];
      for (let r = 0; r < n; r++) vector.setItem(r, col ? (col[off + r] ?? null) : null);
      vector.flush();
    }
    chunks.push(chunk);
  }
  return chunks;
}

/** A batch's good rows spelt for the DuckDB writer (see `payloadBatch`). */
export interface PayloadBatch {
  /** `{"c0":[…],"c1":[…],…}`: one list per column plan, in plan order, over the rows written. */
  doc: string;
  /** The same over the key columns only (keyed strategies): what the merge deletes. */
  keysDoc?: string;
  /** Rows written: after last-wins de-duplication for keyed strategies. */
  count: number;
  /** Some written row has a NULL key part (the delete then also matches NULLs). */
  nullKey: boolean;
}

/** Stands for NULL in key comparisons: NULL key parts match each other (IS NOT DISTINCT FROM). */
const NULL_KEY = Symbol("null key");

/**
 * The good rows as the DuckDB writer's JSON documents, values spelt by each plan's PayloadCodec.
 * With `keyPlans` (merge, keyed overwrite) only the last row per key is kept (`lastPerKey`).
 * Throws LakeWriteError naming the row and column of a value that cannot be stored.
 */
export function payloadBatch(plans: readonly ColumnPlan[], rows: readonly Row[], keyPlans?: readonly number[]): PayloadBatch {
  const columns = new Array<PayloadValue[] | undefined>(plans.length);
  let selected: number[] | undefined;
  let nullKey = false;
  const keyed = keyPlans !== undefined && keyPlans.length > 0;
  if (keyed) {
    for (const p of keyPlans) columns[p] = payloadColumn(plans[p]!, rows, undefined);
    selected = lastPerKey(plans, keyPlans, columns as PayloadValue[][], rows.length);
    if (selected) {
      const pick = selected;
      for (const p of keyPlans) columns[p] = pick.map((i) => columns[p]![i]!);
    }
    nullKey = keyPlans.some((p) => columns[p]!.includes(null));
  }
  const doc: Record<string, PayloadValue[]> = {};
  for (let c = 0; c < plans.length; c++) doc[`c${c}`] = columns[c] ??= payloadColumn(plans[c]!, rows, selected);
  const result: PayloadBatch = { doc: jsonDocument(doc), count: selected?.length ?? rows.length, nullKey };
  if (keyed) result.keysDoc = jsonDocument(Object.fromEntries(keyPlans.map((p) => [`c${p}`, columns[p]!])));
  return result;
}

/**
 * Whether GoodColumns fill a table of these column plans: the same columns, names and kinds in the
 * same order (with the extra-keys column exactly when the plans have one) and — for keyed
 * strategies (`keyPlans`) — keys the engine found distinct and spelt out for the delete.
 * Otherwise the rows are written, which keep the last row per key.
 */
export function goodColumnsFit(plans: readonly ColumnPlan[], good: GoodColumns, keyPlans?: readonly number[]): boolean {
  const fields = good.fields;
  const extra = plans.length > 0 && plans[plans.length - 1]!.name === EXTRA_COLUMN;
  if (extra !== good.extraColumn || fields.length !== plans.length - (extra ? 1 : 0)) return false;
  if (fields.some((f, c) => plans[c]!.name !== f.name || plans[c]!.kind !== f.type)) return false;
  if (keyPlans === undefined || keyPlans.length === 0) return true;
  const keys = good.keys;
  return (
    keys !== undefined &&
    keys.unique &&
    keys.doc !== undefined &&
    keys.fields.length === keyPlans.length &&
    keys.fields.every((n, i) => n.toLowerCase() === plans[keyPlans[i]!]!.name.toLowerCase())
  );
}

/**
 * With keys: the rows to keep, the last per key in arrival order, or undefined when every key
 * is distinct. Keys compare on their spelt values, which are one spelling per stored value (a
 * number while exact, else digits; days; microseconds; canonical text), so `1` and `1n`, or
 * two spellings of one instant, are one key.
 */
function lastPerKey(
  plans: readonly ColumnPlan[],
  keyPlans: readonly number[],
  columns: ReadonlyArray<readonly PayloadValue[]>,
  n: number,
): number[] | undefined {
  const last = new Map<unknown, number>();
  if (keyPlans.length === 1) {
    const kind = plans[keyPlans[0]!]!.kind;
    const values = columns[keyPlans[0]!]!;
    for (let i = 0; i < n; i++) last.set(keyPart(kind, values[i]!), i);
  } else {
    const parts = keyPlans.map((p) => ({ kind: plans[p]!.kind, values: columns[p]! }));
    // JSON of the parts: unambiguous, unlike joining them with a separator.
    for (let i = 0; i < n; i++) {
      last.set(JSON.stringify(parts.map((k) => { const v = keyPart(k.kind, k.values[i]!); return v === NULL_KEY ? null : v; })), i);
    }
  }
  return last.size === n ? undefined : [...last.values()].sort((a, b) => a - b);
}

/** One column over the rows (all, or the `selected` indices). */
function payloadColumn(plan: ColumnPlan, rows: readonly Row[], selected: readonly number[] | undefined): PayloadValue[] {
  const { get, payload } = plan;
  const toPayload = payload.value;
  const n = selected ? selected.length : rows.length;
  const out = new Array<PayloadValue>(n);
  let i = 0;
  try {
    if (selected) for (let j = 0; j < n; j++) out[j] = toPayload(get(rows[(i = selected[j]!)]!));
    else for (; i < n; i++) out[i] = toPayload(get(rows[i]!));
  } catch (e) {
    if (e instanceof LakeWriteError) throw new LakeWriteError(`good row ${i}: ${e.message}`);
    throw e;
  }
  return out;
}

/** A spelt key value that is equal (SameValueZero) exactly when DuckDB's key comparison says equal. */
function keyPart(kind: FieldType, v: PayloadValue): unknown {
  if (v === null) return NULL_KEY;
  if (kind === "double" && v === "-0") return 0; // -0 = 0 in DuckDB
  if (kind === "decimal" && typeof v === "string") return normalizeDecimal(v);
  return v;
}

/**
 * JSON text DuckDB can read. JSON.stringify writes a lone UTF-16 surrogate as a `\udXXX`
 * escape, which DuckDB's parser refuses; such strings are stored with U+FFFD instead, as the
 * appender's UTF-8 encoding did. The search is one scan of the text; the replacer pass runs
 * only when it finds something.
 */
export function jsonDocument(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes("\\ud") ? JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" ? toWellFormed(v) : v)) : text;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function toWellFormed(s: string): string {
  return s.replace(LONE_SURROGATE, "\uFFFD");
}
