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
} from "@duckdb/node-api";
import type { FieldType } from "../contract/types.js";
import type { Row } from "../engine/types.js";
import { EXTRA_COLUMN, RECORD_COLUMN, type LakeConfig } from "./config.js";
import { LakeWriteError } from "./errors.js";
import { toJsonText } from "./json.js";

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
    const plans: ColumnPlan[] = config.primaryKey.map((k) => plan(k, "json", (row) => row[k]));
    plans.push(plan(RECORD_COLUMN, "json", (row) => row));
    return plans;
  }
  const plans = config.fields.map((f) => plan(f.name, f.type, (row) => row[f.name], f.precision, f.scale));
  if (config.keepExtra) {
    const declared = new Set(config.fields.map((f) => f.name));
    plans.push(
      plan(EXTRA_COLUMN, "json", (row) => {
        let extra: Record<string, unknown> | undefined;
        for (const k of Object.keys(row)) {
          if (!declared.has(k)) (extra ??= {})[k] = row[k];
        }
        return extra;
      }),
    );
  }
  return plans;
}

function plan(name: string, kind: FieldType, get: (row: Row) => unknown, precision?: number, scale?: number): ColumnPlan {
  return { name, kind, sqlType: sqlTypeOf(kind, precision, scale), vectorType: vectorTypeOf(kind), get, convert: converterOf(kind, name) };
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

/** Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

const DATE_RE = /^(-?\d{4,6})-(\d{2})-(\d{2})$/;
// Date, optional time with up to 9 fractional digits, optional Z or ±hh[:mm] offset.
const TS_RE = /^(-?\d{4,6})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

function validYmd(y: number, m: number, d: number): boolean {
  return m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

export function toEpochDays(v: unknown): number | undefined {
  if (typeof v === "string") {
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
  const m = TS_RE.exec(v);
  if (!m) {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : BigInt(t) * 1000n;
  }
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

/** A batch converted column by column, with the row selection the strategy asked for. */
export interface ConvertedBatch {
  columns: Array<Array<DuckDBValue | null>>;
  /** Indices into the input rows that are written, in write order. */
  selected: number[];
}

/**
 * Convert every row once; for keyed strategies keep only the last row per key (arrival order).
 * Keys are compared on converted values, so 1 and 1n, or two spellings of one instant, are one key.
 */
export function convertRows(plans: readonly ColumnPlan[], rows: readonly Row[], keyColumns: readonly number[] | undefined): ConvertedBatch {
  const n = rows.length;
  const columns: Array<Array<DuckDBValue | null>> = plans.map(() => new Array<DuckDBValue | null>(n));
  for (let c = 0; c < plans.length; c++) {
    const p = plans[c]!;
    const out = columns[c]!;
    for (let i = 0; i < n; i++) {
      const row = rows[i]!;
      try {
        out[i] = p.convert(p.get(row));
      } catch (e) {
        if (e instanceof LakeWriteError) throw new LakeWriteError(`good row ${i}: ${e.message}`);
        throw e;
      }
    }
  }
  if (!keyColumns || keyColumns.length === 0) return { columns, selected: range(n) };
  const last = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    let key = "";
    for (const c of keyColumns) key += keyText(plans[c]!.kind, columns[c]![i] ?? null) + "\u0000";
    last.set(key, i);
  }
  if (last.size === n) return { columns, selected: range(n) };
  return { columns, selected: [...last.values()].sort((a, b) => a - b) };
}

function range(n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

function keyText(kind: FieldType, v: DuckDBValue | null): string {
  if (v === null) return "\u0001";
  if (v instanceof DuckDBTimestampValue) return v.micros.toString();
  if (v instanceof DuckDBDateValue) return String(v.days);
  if (kind === "decimal" && typeof v === "string") return normalizeDecimal(v);
  if (typeof v === "number") return Object.is(v, -0) ? "0" : String(v);
  return String(v);
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

/** Data chunks (≤ the vector size each) of the selected rows, for the appender. */
export function buildChunks(
  types: readonly DuckDBType[],
  columns: ReadonlyArray<ReadonlyArray<DuckDBValue | null> | undefined>,
  selected: readonly number[],
): DuckDBDataChunk[] {
  const chunks: DuckDBDataChunk[] = [];
  const size = DuckDBVector.standardSize();
  for (let off = 0; off < selected.length; off += size) {
    const n = Math.min(size, selected.length - off);
    const chunk = DuckDBDataChunk.create(types, n);
    for (let c = 0; c < types.length; c++) {
      const vector = chunk.getColumnVector(c);
      const col = columns[c];
      for (let r = 0; r < n; r++) vector.setItem(r, col ? (col[selected[off + r]!] ?? null) : null);
      vector.flush();
    }
    chunks.push(chunk);
  }
  return chunks;
}
