/**
 * When two key values are one key: keyed strategies keep the last row per key, and must agree
 * with DuckDB's own key comparison.
 */
import { DuckDBDateValue, DuckDBTimestampValue, type DuckDBValue } from "../util/duckdb.js";
import type { FieldType } from "../contract/types.js";
import type { PayloadValue } from "./payload-codec.js";

/** Stands for NULL in key comparisons: NULL key parts match each other (IS NOT DISTINCT FROM). */
export const NULL_KEY = Symbol("null key");

/** A value that is equal (SameValueZero) exactly when DuckDB's key comparison says equal. */
export function keyPrimitive(kind: FieldType, v: DuckDBValue | null): unknown {
  if (v === null) return "\u0001null";
  if (v instanceof DuckDBTimestampValue) return v.micros;
  if (v instanceof DuckDBDateValue) return v.days;
  if (kind === "decimal" && typeof v === "string") return normalizeDecimal(v);
  if (typeof v === "string") return kind === "string" || kind === "json" ? `s${v}` : v;
  return v; // bigint, number (0 and -0 are SameValueZero-equal), boolean
}

/** A spelt key value that is equal (SameValueZero) exactly when DuckDB's key comparison says equal. */
export function keyPart(kind: FieldType, v: PayloadValue): unknown {
  if (v === null) return NULL_KEY;
  if (kind === "double" && v === "-0") return 0; // -0 = 0 in DuckDB
  if (kind === "decimal" && typeof v === "string") return normalizeDecimal(v);
  return v;
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
