/**
 * How the Polars engine hands over what it evaluated: the good rows as GoodParquet, the columns
 * they are read from, and the row positions it numbers a batch with.
 */
import type * as PolarsModule from "nodejs-polars";
import type { FieldType } from "../contract/types.js";
import { BAD_COL, SUPERSEDED_COL, type Plan } from "./plan-types.js";
import type { GoodParquet } from "./types.js";

let iota = new Int32Array(0);
/** 0, 1, …, n - 1: a view of one array, grown as batches grow (Int32Array.from cost ~2.5 ms per 10,000). */
export function rowPositions(n: number): Int32Array {
  if (iota.length < n) iota = Int32Array.from({ length: Math.max(n, iota.length * 2) }, (_, i) => i);
  return iota.subarray(0, n);
}

/** The columns the good rows are read from: those `written` reads, the rows', GoodParquet's, dataset measures'. */
export function keptColumns(plan: Plan): string[] {
  return [
    ...new Set([
      BAD_COL,
      ...(plan.supersedeBy ? [SUPERSEDED_COL] : []),
      ...plan.outputColumns,
      ...plan.outputs.map((o) => o.field.name),
      ...plan.dataset.flatMap((d) => d.cols),
    ]),
  ];
}

/**
 * The good rows as GoodParquet. The file is written by a sink on Polars' threads (measured on
 * 10,000 order rows: 3.8 ms, 0.3 ms of it on the JavaScript thread; `writeParquet` to a buffer
 * held that thread 4.9 ms, and writing the buffer out cost 1.5 ms more), with LZ4 (faster than
 * snappy or none here). Keys are described for targets that replace rows by key, where the
 * plan has kept one row per key and quarantined NULL key parts.
 */
export function goodParquet(plan: Plan, goodDf: PolarsModule.DataFrame, typed: PolarsModule.Expr[]): GoodParquet {
  return {
    count: goodDf.height,
    fields: plan.outputs.map((o) => ({ name: o.name, type: o.field.type as FieldType })),
    extraColumn: plan.keepsExtraKeys,
    writeParquet: async (path) => {
      await goodDf.lazy().select(...typed).sinkParquet(path, { compression: "lz4", maintainOrder: true }).collect();
    },
    ...(plan.supersedeBy && plan.primaryKeyFields ? { keys: { fields: plan.primaryKeyFields, unique: true, someNull: false } } : {}),
  };
}

/**
 * What separates a column's values in its joined string. Any string may hold it: a column whose
 * values do is handed over value by value instead (withTextColumns checks every batch).
 */
export const TEXT_SEPARATOR = "\u0000";

/** The prebuilt expressions of one text column's joined form (building one costs ~1 ms). */
export interface TextIn {
  /** The one-row joined string → the column's rows. */
  split: PolarsModule.Expr;
  /** The column with its masked rows set to null, and the mask's name. */
  nullFix: PolarsModule.Expr;
  mask: string;
  name: string;
}

export function textInExprs(pl: typeof PolarsModule.default, name: string): TextIn {
  const mask = `${name}__ll_null`;
  return {
    split: pl.col(name).str.split(TEXT_SEPARATOR).explode(),
    nullFix: pl.when(pl.col(mask).eq(pl.lit(1))).then(pl.lit(null).cast(pl.Utf8)).otherwise(pl.col(name)).alias(name),
    mask,
    name,
  };
}

/**
 * A frame of `series` and a batch's text columns, one per `textIn` (same order). A Series built
 * from a JS array costs ~0.4 µs per value on the JavaScript thread; one string per column, joined
 * here natively and split on Polars' threads when the frame runs, costs a fraction of that.
 * Exact: a column is split back only when the separator occurs in none of its values (it occurs
 * exactly n - 1 times in the joined string), else it is handed over value by value; the rows
 * that were null, which `join` spells as "", are set back to null by a mask.
 */
export function withTextColumns(
  pl: typeof PolarsModule.default,
  series: readonly PolarsModule.Series[],
  columns: ReadonlyArray<ReadonlyArray<string | null>>,
  textIn: readonly TextIn[],
): PolarsModule.LazyDataFrame {
  const whole = [...series];
  const joined: PolarsModule.Series[] = [];
  const split: PolarsModule.Expr[] = [];
  const nullFix: PolarsModule.Expr[] = [];
  const masks: string[] = [];
  columns.forEach((values, k) => {
    const t = textIn[k]!;
    const text = values.join(TEXT_SEPARATOR);
    if (separatorCount(text, values.length) !== values.length - 1) {
      whole.push(pl.Series(t.name, values as Array<string | null>, pl.Utf8));
      return;
    }
    joined.push(pl.Series(t.name, [text], pl.Utf8));
    split.push(t.split);
    let at = values.indexOf(null);
    if (at === -1) return;
    // A typed array is copied into the Series at once, not value by value.
    const mask = new Uint8Array(values.length);
    for (; at !== -1; at = values.indexOf(null, at + 1)) mask[at] = 1;
    whole.push(pl.Series(t.mask, mask));
    nullFix.push(t.nullFix);
    masks.push(t.mask);
  });
  let lf: PolarsModule.LazyDataFrame = pl.DataFrame(whole).lazy();
  if (joined.length) {
    const text: PolarsModule.LazyDataFrame = pl.DataFrame(joined).lazy().select(...split);
    lf = pl.concat([lf, text], { how: "horizontal" });
  }
  return nullFix.length ? lf.withColumns(...nullFix).drop(masks) : lf;
}

/** How often the separator occurs in `joined`, counted up to `n`. */
function separatorCount(joined: string, n: number): number {
  let count = 0;
  for (let at = joined.indexOf(TEXT_SEPARATOR); at !== -1 && count < n; at = joined.indexOf(TEXT_SEPARATOR, at + 1)) count++;
  return count;
}
