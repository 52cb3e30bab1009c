/**
 * `timestampToMicros` and `decimalCanon` written with the basic IR primitives only.
 * DuckDB has native casts with exactly these semantics (TRY_CAST to TIMESTAMPTZ in a
 * UTC session; TRY_CAST to DECIMAL rounds half away from zero); Polars does not (its
 * decimal cast rounds differently and its datetime parser wants one format per column),
 * so the Polars backend compiles these expansions instead. The parity tests run both
 * forms against the same corpus.
 */
import {
  and,
  cast,
  cmp,
  coalesce,
  extract,
  int,
  isNull,
  matches,
  not,
  nullOf,
  str,
  when,
  type Expr,
} from "./ir.js";

const add = (a: Expr, b: Expr): Expr => ({ op: "arith", fn: "+", a, b });
const sub = (a: Expr, b: Expr): Expr => ({ op: "arith", fn: "-", a, b });
const mul = (a: Expr, b: Expr): Expr => ({ op: "arith", fn: "*", a, b });
const concat = (...parts: Expr[]): Expr => ({ op: "concat", parts });
const num0 = (e: Expr): Expr => coalesce(cast(e, "int64"), int(0));

/** Input: text matching TIMESTAMP_RE group 1 (already trimmed). */
export function expandTimestampToMicros(g: Expr): Expr {
  const days: Expr = { op: "dateToDays", e: extract(g, "^([0-9]{4}-[0-9]{2}-[0-9]{2})", 1) };
  const hh = num0(extract(g, "^.{10}[T ]([0-9]{2})", 1));
  const mi = num0(extract(g, "^.{10}[T ][0-9]{2}:([0-9]{2})", 1));
  const ss = num0(extract(g, "^.{16}:([0-9]{2})", 1));
  const frac = coalesce(extract(g, "^.{19}\\.([0-9]+)", 1), str(""));
  const us = cast({ op: "fitRight", e: frac, length: 6, fill: "0" }, "int64");
  const zone = "^.{16}(?::[0-9]{2}(?:\\.[0-9]+)?)?([+-])([0-9]{2})(?::?([0-9]{2}))?$";
  const sign = extract(g, zone, 1);
  const offMinutes = add(mul(num0(extract(g, zone, 2)), int(60)), num0(extract(g, zone, 3)));
  const offset = when(
    [
      [isNull(sign), int(0)],
      [cmp("=", sign, str("-")), mul(offMinutes, int(-60_000_000))],
    ],
    mul(offMinutes, int(60_000_000)),
  );
  let total = mul(days, int(86_400_000_000));
  total = add(total, mul(hh, int(3_600_000_000)));
  total = add(total, mul(mi, int(60_000_000)));
  total = add(total, mul(ss, int(1_000_000)));
  total = add(total, us);
  return sub(total, offset);
}

/** Input: text matching DECIMAL_RE group 1 (`[+-]?digits[.digits]`, trimmed). */
export function expandDecimalCanon(g: Expr, precision: number, scale: number): Expr {
  const neg = matches(g, "^-");
  const intDigits = coalesce(extract(g, "^[+-]?0*([1-9][0-9]*)", 1), str(""));
  const fracDigits = coalesce(extract(g, "\\.([0-9]+)$", 1), str(""));
  const fitted: Expr = { op: "fitRight", e: fracDigits, length: scale + 1, fill: "0" };
  const keep = scale > 0 ? extract(fitted, `^([0-9]{${scale}})`, 1) : str("");
  const roundUp = matches(fitted, `^[0-9]{${scale}}[5-9]`);
  const digits = concat(intDigits, keep);
  // Add one to a digit string: the last non-9 digit goes up, the 9s after it become 0s.
  const before = coalesce(extract(digits, "^([0-9]*?)[0-8]?9*$", 1), str(""));
  const bumped = extract(digits, "^[0-9]*?([0-8]?)9*$", 1);
  const nines = coalesce(extract(digits, "^[0-9]*?[0-8]?(9*)$", 1), str(""));
  const bumpedUp = when([[isNull(bumped), str("1")]], cast(add(cast(bumped, "int64"), int(1)), "utf8"));
  const incremented = concat(before, bumpedUp, { op: "replaceAll", e: nines, pattern: "9", replacement: "0" });
  const rounded = when([[roundUp, incremented]], digits);
  const intPart = scale > 0 ? coalesce(extract(rounded, `^([0-9]*)[0-9]{${scale}}$`, 1), str("")) : rounded;
  const intStripped = coalesce(extract(intPart, "^0*([1-9][0-9]*)$", 1), str(""));
  const isZero = not(matches(rounded, "[1-9]"));
  const fits = cmp("<=", { op: "length", e: intStripped }, int(precision - scale));
  const text = concat(
    when([[and(neg, not(isZero)), str("-")]], str("")),
    when([[cmp("=", intStripped, str("")), str("0")]], intStripped),
    scale > 0 ? concat(str("."), extract(rounded, `([0-9]{${scale}})$`, 1)) : str(""),
  );
  return when([[and(not(isNull(g)), fits), text]], nullOf("utf8"));
}
