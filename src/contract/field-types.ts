import type { FieldType } from "./types.js";

/** Every spelling a contract may use for a type, mapped to the canonical type. */
export const TYPE_ALIASES: ReadonlyMap<string, FieldType> = new Map<string, FieldType>([
  ...(["string", "str", "varchar", "text", "char", "character", "nvarchar", "uuid", "bpchar"] as const).map(
    (a) => [a, "string"] as [string, FieldType],
  ),
  ...([
    "int", "integer", "long", "bigint", "int64", "int32", "int16", "int8", "smallint", "tinyint",
    "short", "byte",
  ] as const).map((a) => [a, "integer"] as [string, FieldType]),
  ...(["double", "float", "float64", "float32", "real", "number", "double precision"] as const).map(
    (a) => [a, "double"] as [string, FieldType],
  ),
  ...(["decimal", "numeric"] as const).map((a) => [a, "decimal"] as [string, FieldType]),
  ...(["boolean", "bool"] as const).map((a) => [a, "boolean"] as [string, FieldType]),
  ["date", "date"],
  ...([
    "timestamp", "datetime", "timestamp_ntz", "timestamptz", "timestamp_tz", "timestamp_ltz",
    "timestamp with time zone", "timestamp without time zone",
  ] as const).map((a) => [a, "timestamp"] as [string, FieldType]),
  ...(["json", "struct", "object", "array", "map", "list", "variant", "record", "dict"] as const).map(
    (a) => [a, "json"] as [string, FieldType],
  ),
]);

/** Binary columns exist in the original; we carry them as strings (as received, e.g. base64). */
const BINARY_ALIASES = new Set(["binary", "blob", "bytes", "varbinary", "bytea"]);

export const DEFAULT_DECIMAL_PRECISION = 38;
export const DEFAULT_DECIMAL_SCALE = 9;

export type ParsedType =
  | { ok: true; type: FieldType; precision?: number; scale?: number; note?: string }
  | { ok: false; message: string; expected: string };

const EXPECTED =
  "string, integer, double, decimal or decimal(p,s), boolean, date, timestamp, json " +
  "(or an alias such as str, int, long, bigint, float, numeric, bool, datetime, struct, array)";

/** Parse a declared type such as `long`, `Decimal(12, 2)`, `varchar(255)` or `array<string>`. */
export function parseFieldType(declared: string): ParsedType {
  const t = declared.trim().toLowerCase().replace(/\s+/g, " ");
  const direct = TYPE_ALIASES.get(t);
  if (direct === "decimal") return { ok: true, type: "decimal", precision: DEFAULT_DECIMAL_PRECISION, scale: DEFAULT_DECIMAL_SCALE };
  if (direct !== undefined) return { ok: true, type: direct };
  if (BINARY_ALIASES.has(t)) return { ok: true, type: "string", note: `${declared} values are carried as strings` };

  const dec = /^(decimal|numeric|dec)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$/.exec(t);
  if (dec) {
    const precision = Number(dec[2]);
    const scale = dec[3] === undefined ? 0 : Number(dec[3]);
    if (precision < 1 || precision > 38) {
      return { ok: false, message: `decimal precision ${precision} is out of range`, expected: "a precision from 1 to 38, e.g. decimal(12,2)" };
    }
    if (scale > precision) {
      return { ok: false, message: `decimal scale ${scale} is larger than its precision ${precision}`, expected: "a scale from 0 to the precision, e.g. decimal(12,2)" };
    }
    return { ok: true, type: "decimal", precision, scale };
  }
  // Length limits on strings are not enforced by the type (use max_length for that).
  if (/^(varchar|char|character|nvarchar|string|character varying)\s*\(\s*\d+\s*\)$/.test(t)) return { ok: true, type: "string" };
  // Nested types keep their inner shape only as documentation: the value is carried as JSON.
  if (/^(array|struct|map|list)\s*[<([]/.test(t) && /[>)\]]$/.test(t)) return { ok: true, type: "json" };
  if (/^timestamp(_ntz|_tz|_ltz|tz)?\s*\(\s*\d+\s*\)$/.test(t)) return { ok: true, type: "timestamp" };

  return { ok: false, message: `unknown type '${declared}'`, expected: EXPECTED };
}

/** Names offered for did-you-mean on an unknown type. */
export function typeNames(): string[] {
  return [...TYPE_ALIASES.keys(), ...BINARY_ALIASES];
}

/** The DuckDB type of a contract field type: the lake's column type (a json field is a JSON column). */
export function duckdbTypeOf(kind: FieldType, precision?: number, scale?: number): string {
  switch (kind) {
    case "string":
      return "VARCHAR";
    case "integer":
      return "BIGINT";
    case "double":
      return "DOUBLE";
    case "decimal":
      return `DECIMAL(${precision ?? DEFAULT_DECIMAL_PRECISION},${scale ?? DEFAULT_DECIMAL_SCALE})`;
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
