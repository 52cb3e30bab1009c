import type { DuckDBValue } from "../util/duckdb.js";
import type { FieldType } from "../contract/types.js";
import { wellFormedJson } from "../util/well-formed-json.js";
import { canonicalIsoMicrosNumber } from "../util/civil-time.js";
import { toEpochDays, toEpochMicros } from "./epoch-values.js";
import { badValue, INT_RE } from "./value-convert.js";

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

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A bigint as a JSON value: a number when exact, else its digits (from_json reads both as BIGINT). */
function int64Payload(b: bigint, column: string, kind: FieldType, shown: unknown): PayloadValue {
  if (b < INT64_MIN || b > INT64_MAX) return badValue(column, kind, shown);
  return b >= -MAX_SAFE_BIG && b <= MAX_SAFE_BIG ? Number(b) : b.toString();
}
const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The JSON form of each column kind. It accepts exactly what `converterOf` accepts and stores
 * the same value; canonical values (what the engines produce) take the first branch.
 */
export function payloadCodecOf(
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
          return badValue(column, kind, v);
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
          return days === undefined ? badValue(column, kind, v) : days;
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
          return micros === undefined ? badValue(column, kind, v) : int64Payload(micros, column, kind, v);
        },
        sql: (r) => `make_timestamp(${r})`,
      };
  }
}
