/**
 * How the Polars engine takes a batch's text columns in: one joined string per column, split on
 * Polars' threads (see withTextColumns).
 */
import type * as PolarsModule from "nodejs-polars";

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
