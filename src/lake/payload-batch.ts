import type { Row } from "../engine/types.js";
import type { ColumnPlan } from "./columns.js";
import { LakeWriteError } from "./errors.js";
import { jsonDocument } from "./json.js";
import { keyPart, NULL_KEY } from "./key-identity.js";
import type { PayloadValue } from "./payload-codec.js";

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

/**
 * The keys of `rows` (holding at least the key fields) as a keys document like PayloadBatch's
 * `keysDoc`: what a merge's delete removes.
 */
export function keysBatch(plans: readonly ColumnPlan[], rows: readonly Row[], keyPlans: readonly number[]): { keysDoc: string; nullKey: boolean } {
  const columns = keyPlans.map((p) => payloadColumn(plans[p]!, rows, undefined));
  return {
    keysDoc: jsonDocument(Object.fromEntries(keyPlans.map((p, i) => [`c${p}`, columns[i]!]))),
    nullKey: columns.some((c) => c.includes(null)),
  };
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
