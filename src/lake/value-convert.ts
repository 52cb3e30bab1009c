import { DuckDBDateValue, DuckDBTimestampValue, type DuckDBValue } from "../util/duckdb.js";
import type { FieldType } from "../contract/types.js";
import { toEpochDays, toEpochMicros } from "./epoch-values.js";
import { LakeWriteError } from "./errors.js";
import { toJsonText } from "./json.js";

/** Fail on a value a column of this kind cannot store, showing the value. */
export function badValue(column: string, kind: FieldType, value: unknown): never {
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

export const INT_RE = /^[+-]?\d+$/;

/**
 * A row value converted to the column's vector type (bigint, micros, days), so that DuckDB
 * receives typed data chunks and no SQL cast is needed; decimal and json travel as text.
 */
export function converterOf(kind: FieldType, column: string): (value: unknown) => DuckDBValue | null {
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
        return badValue(column, kind, v);
      };
    case "double":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "number") return v;
        if (typeof v === "bigint") return Number(v);
        if (typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v))) return Number(v);
        return badValue(column, kind, v);
      };
    case "decimal":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "string") return v;
        if (typeof v === "number" && Number.isFinite(v)) return String(v);
        if (typeof v === "bigint") return v.toString();
        return badValue(column, kind, v);
      };
    case "boolean":
      return (v) => {
        if (v === null || v === undefined) return null;
        if (typeof v === "boolean") return v;
        if (v === "true") return true;
        if (v === "false") return false;
        return badValue(column, kind, v);
      };
    case "date":
      return (v) => {
        if (v === null || v === undefined) return null;
        const days = toEpochDays(v);
        return days === undefined ? badValue(column, kind, v) : new DuckDBDateValue(days);
      };
    case "timestamp":
      return (v) => {
        if (v === null || v === undefined) return null;
        const micros = toEpochMicros(v);
        return micros === undefined ? badValue(column, kind, v) : new DuckDBTimestampValue(micros);
      };
    case "json":
      return (v) => (v === undefined || v === null ? null : toJsonText(v));
  }
}
