/**
 * GoodColumns (see types.ts) and the way back to the columns `assemble` builds rows from.
 * The rows are only made when asked for: the lake writer takes the JSON texts as they are.
 */
import type { FieldType } from "../contract/types.js";
import type { Plan } from "./plan.js";
import type { GoodColumns } from "./types.js";

/** Columns for a plan whose outputs arrive as JSON arrays, one per output, in output order. */
export function goodColumnsOf(
  plan: Plan,
  count: number,
  texts: ReadonlyArray<string | null>,
  keys?: GoodColumns["keys"],
): GoodColumns {
  return {
    count,
    ...(keys ? { keys } : {}),
    fields: plan.outputs.map((o, i) => ({
      name: o.name,
      type: o.field.type as FieldType,
      // An aggregate over no rows is NULL, not an empty list.
      json: texts[i] ?? "[]",
    })),
  };
}

/**
 * A JSON array of integers (DuckDB's `[1,-2,null]`, no spaces). JSON.parse is exact up to 15
 * digits; a list with a longer number is split as text instead, so that no digit is lost.
 */
function integers(json: string): Array<number | string | null> {
  if (!/\d{16}/.test(json)) return JSON.parse(json) as Array<number | null>;
  return json.length <= 2 ? [] : json.slice(1, -1).split(",").map((t) => (t === "null" ? null : t));
}

/** The arrays of `plan.outputColumns` (what the row factory reads) from GoodColumns. */
export function columnsFromJson(plan: Plan, good: GoodColumns): unknown[][] {
  const out: unknown[][] = [];
  plan.outputs.forEach((o, i) => {
    const json = good.fields[i]!.json;
    if (o.kind !== "int") {
      out.push(JSON.parse(json) as unknown[]);
      return;
    }
    // The row factory reads an integer from two columns: a number while it is safe, else text.
    const values = integers(json);
    const small = new Array<number | null>(values.length);
    const big = new Array<string | null>(values.length);
    for (let g = 0; g < values.length; g++) {
      const v = values[g]!;
      const n = typeof v === "string" ? Number(v) : v;
      const safe = n === null || Number.isSafeInteger(n);
      small[g] = safe ? n : null;
      big[g] = safe ? null : (v as string);
    }
    out.push(small, big);
  });
  return out;
}
