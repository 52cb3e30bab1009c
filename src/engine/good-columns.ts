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

/** The arrays of `plan.outputColumns` (what the row factory reads) from GoodColumns. */
export function columnsFromJson(plan: Plan, good: GoodColumns): unknown[][] {
  const out: unknown[][] = [];
  plan.outputs.forEach((o, i) => {
    const values = JSON.parse(good.fields[i]!.json) as unknown[];
    if (o.kind !== "int") {
      out.push(values);
      return;
    }
    // The row factory reads an integer from two columns: a number while it is safe, else text.
    const small = new Array<number | null>(values.length);
    const big = new Array<string | null>(values.length);
    for (let g = 0; g < values.length; g++) {
      const text = values[g] as string | null;
      const n = text === null ? null : Number(text);
      const safe = n === null || Number.isSafeInteger(n);
      small[g] = safe ? n : null;
      big[g] = safe ? null : text;
    }
    out.push(small, big);
  });
  return out;
}
