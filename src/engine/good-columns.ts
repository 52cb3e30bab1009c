/**
 * GoodColumns (see types.ts) and the way back to the columns `assemble` builds rows from.
 * The rows are only made when asked for: the lake writer appends the chunks as they are.
 */
import type { FieldType } from "../contract/types.js";
import { DuckDBDateValue, DuckDBDecimalValue, DuckDBTimestampValue, type DuckDBDataChunk, type DuckDBValue } from "../util/duckdb.js";
import { formatMicros } from "./canonical.js";
import type { Plan } from "./plan-types.js";
import type { GoodChunks, GoodColumns } from "./types.js";

/** GoodColumns over chunks whose first columns are the plan's outputs, in output order. */
export function goodColumnsOf(
  plan: Plan,
  count: number,
  chunks: readonly DuckDBDataChunk[],
  extraColumn: boolean,
  keys?: GoodColumns["keys"],
): GoodChunks {
  const rows = chunks.reduce((n, c) => n + c.rowCount, 0);
  if (rows !== count) throw new Error(`internal error: the engine returned ${rows} good rows, but counted ${count}`);
  return {
    count,
    fields: plan.outputs.map((o) => ({ name: o.name, type: o.field.type as FieldType })),
    extraColumn,
    chunks,
    ...(keys ? { keys } : {}),
  };
}

/**
 * The arrays of `plan.outputColumns` (what the row factory reads) from GoodColumns: the typed
 * values turned into canonical row values (docs/contracts.md) — the spelling the engine's
 * canonical columns have (decimal with its scale's digits, timestamps as UTC ISO text with
 * microseconds, integers beyond 2^53 as digits).
 */
export function columnsFromChunks(plan: Plan, good: GoodChunks): unknown[][] {
  const byColumn = new Map<string, unknown[]>();
  plan.outputs.forEach((o, c) => {
    const values: DuckDBValue[] = [];
    for (const chunk of good.chunks) for (const v of chunk.getColumnValues(c)) values.push(v);
    switch (o.kind) {
      case "int": {
        // The row factory reads an integer from two columns: a number while it is safe, else text.
        const small = new Array<number | null>(values.length);
        const big = new Array<string | null>(values.length);
        values.forEach((v, g) => {
          const b = v as bigint | null;
          const safe = b === null || (b >= -MAX_SAFE && b <= MAX_SAFE);
          small[g] = b === null ? null : safe ? Number(b) : null;
          big[g] = safe ? null : String(b);
        });
        byColumn.set(o.col, small);
        byColumn.set(o.bigCol!, big);
        return;
      }
      case "text":
        byColumn.set(o.col, values.map(canonicalText));
        return;
      default:
        // string and json (text), float (number), bool (boolean): as they are.
        byColumn.set(o.col, values);
    }
  });
  return plan.outputColumns.map((name) => byColumn.get(name)!);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MICROS_PER_DAY = 86_400_000_000n;

/** A decimal, date or timestamp as its canonical text. */
function canonicalText(v: DuckDBValue): string | null {
  if (v === null) return null;
  if (v instanceof DuckDBDecimalValue) return decimalText(v.value, v.scale);
  if (v instanceof DuckDBTimestampValue) return formatMicros(v.micros);
  if (v instanceof DuckDBDateValue) return formatMicros(BigInt(v.days) * MICROS_PER_DAY).slice(0, 10);
  throw new Error(`internal error: unexpected value ${String(v)} in a text column`);
}

/** `value / 10^scale` with exactly `scale` fractional digits, as DuckDB casts a DECIMAL to text. */
function decimalText(value: bigint, scale: number): string {
  const neg = value < 0n;
  const digits = (neg ? -value : value).toString().padStart(scale + 1, "0");
  const int = digits.slice(0, digits.length - scale);
  return `${neg ? "-" : ""}${int}${scale > 0 ? `.${digits.slice(digits.length - scale)}` : ""}`;
}
