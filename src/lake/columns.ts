import { BIGINT, BOOLEAN, DATE, DOUBLE, TIMESTAMP, VARCHAR, type DuckDBType, type DuckDBValue } from "../util/duckdb.js";
import type { FieldType } from "../contract/types.js";
import { duckdbTypeOf } from "../contract/field-types.js";
import type { GoodColumns, Row } from "../engine/types.js";
import { EXTRA_COLUMN, RECORD_COLUMN, type LakeConfig } from "./config.js";
import { payloadCodecOf, type PayloadCodec } from "./payload-codec.js";
import { converterOf } from "./value-convert.js";

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
  /** The same value for the DuckDB writer's JSON batch document (see `payloadBatch`). */
  payload: PayloadCodec;
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
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- a monomorphic getter per column, for speed
  return new Function("row", `return row[${JSON.stringify(name)}];`) as (row: Row) => unknown;
}

/** The row's keys beyond the declared ones, as an object, or undefined when there are none. */
function extraKeys(declared: readonly string[]): (row: Row) => unknown {
  // A switch over the declared names as literals: far cheaper per key than a Set lookup.
  const cases = declared.map((n) => `case ${JSON.stringify(n)}:`).join(" ");
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the declared names compiled into a switch, for speed
  const make = new Function(
    "hasOwn",
    `return (row) => { let extra; for (const k in row) { switch (k) { ${cases} break; default: if (hasOwn(row, k)) (extra ??= {})[k] = row[k]; } } return extra; };`,
  ) as (hasOwn: typeof Object.hasOwn) => (row: Row) => unknown;
  return make(Object.hasOwn);
}

function plan(name: string, kind: FieldType, get: (row: Row) => unknown, precision?: number, scale?: number): ColumnPlan {
  const sqlType = duckdbTypeOf(kind, precision, scale);
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

/**
 * Whether GoodColumns fill a table of these column plans: the same columns, names and kinds in the
 * same order (with the extra-keys column exactly when the plans have one) and — for keyed
 * strategies (`keyPlans`) — keys the engine found distinct (and, for chunks, spelt out for the
 * delete).
 * Otherwise the rows are written, which keep the last row per key.
 */
export function goodColumnsFit(plans: readonly ColumnPlan[], good: GoodColumns, keyPlans?: readonly number[]): boolean {
  const fields = good.fields;
  const extra = plans.length > 0 && plans[plans.length - 1]!.name === EXTRA_COLUMN;
  if (extra !== good.extraColumn || fields.length !== plans.length - (extra ? 1 : 0)) return false;
  if (fields.some((f, c) => plans[c]!.name !== f.name || plans[c]!.kind !== f.type)) return false;
  // The table's columns, then the row slot the writer numbers (GoodChunks.chunks).
  if (good.chunks?.some((c) => c.columnCount !== plans.length + 1)) return false;
  if (keyPlans === undefined || keyPlans.length === 0) return true;
  const keys = good.keys;
  return (
    keys !== undefined &&
    keys.unique &&
    // Chunks carry their keys spelt for the delete; a Parquet file is read for them.
    (good.writeParquet !== undefined || keys.doc !== undefined) &&
    keys.fields.length === keyPlans.length &&
    keys.fields.every((n, i) => n.toLowerCase() === plans[keyPlans[i]!]!.name.toLowerCase())
  );
}
