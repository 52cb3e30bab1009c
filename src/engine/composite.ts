/**
 * `timestampToMicros` and `decimalCanon` written with the basic IR primitives only.
 * DuckDB has native casts with exactly these semantics (TRY_CAST to TIMESTAMPTZ in a
 * UTC session; TRY_CAST to DECIMAL rounds half away from zero); Polars does not (its
 * decimal cast rounds differently and its datetime parser wants one format per column),
 * so the Polars backend runs these expansions instead. A test checks both forms agree.
 *
 * An expansion is staged: each intermediate value becomes a column computed once, in a
 * stage after the ones it reads. Written as one nested expression, the shared parts
 * would be copied into every use and evaluated again each time (measured: 30× slower).
 */
import {
  and,
  cast,
  cmp,
  coalesce,
  col,
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

export interface Staged {
  /** Column definitions; stage i may read columns of stages before it. */
  stages: Array<Array<[name: string, expr: Expr]>>;
  result: Expr;
}

class Stager {
  readonly stages: Array<Array<[string, Expr]>> = [];
  constructor(private readonly prefix: string) {}
  /** Compute `e` as a column in stage `stage`; returns a reference to it. */
  at(stage: number, name: string, e: Expr): Expr {
    while (this.stages.length <= stage) this.stages.push([]);
    const full = `${this.prefix}_${name}`;
    this.stages[stage]!.push([full, e]);
    return col(full);
  }
}

const add = (a: Expr, b: Expr): Expr => ({ op: "arith", fn: "+", a, b });
const sub = (a: Expr, b: Expr): Expr => ({ op: "arith", fn: "-", a, b });
const mul = (a: Expr, b: Expr): Expr => ({ op: "arith", fn: "*", a, b });
const concat = (...parts: Expr[]): Expr => ({ op: "concat", parts });
const num0 = (e: Expr): Expr => coalesce(cast(e, "int64"), int(0));

/** Input: text matching TIMESTAMP_RE group 1 (already trimmed). `prefix` names the stage columns. */
export function expandTimestampToMicros(g: Expr, prefix: string): Staged {
  const s = new Stager(prefix);
  const zone = "^.{16}(?::[0-9]{2}(?:\\.[0-9]+)?)?([+-])([0-9]{2})(?::?([0-9]{2}))?$";
  const days = s.at(0, "days", { op: "dateToDays", e: extract(g, "^([0-9]{4}-[0-9]{2}-[0-9]{2})", 1) });
  const hh = s.at(0, "hh", num0(extract(g, "^.{10}[T ]([0-9]{2})", 1)));
  const mi = s.at(0, "mi", num0(extract(g, "^.{10}[T ][0-9]{2}:([0-9]{2})", 1)));
  const ss = s.at(0, "ss", num0(extract(g, "^.{16}:([0-9]{2})", 1)));
  const frac = coalesce(extract(g, "^.{19}\\.([0-9]+)", 1), str(""));
  const us = s.at(0, "us", cast({ op: "fitRight", e: frac, length: 6, fill: "0" }, "int64"));
  const sign = s.at(0, "sign", extract(g, zone, 1));
  const offMinutes = s.at(0, "off", add(mul(num0(extract(g, zone, 2)), int(60)), num0(extract(g, zone, 3))));
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
  return { stages: s.stages, result: sub(total, offset) };
}

/** Input: text matching DECIMAL_RE group 1 (`[+-]?digits[.digits]`, trimmed). */
export function expandDecimalCanon(g: Expr, precision: number, scale: number, prefix: string): Staged {
  const s = new Stager(prefix);
  const neg = s.at(0, "neg", matches(g, "^-"));
  const intDigits = s.at(0, "int", coalesce(extract(g, "^[+-]?0*([1-9][0-9]*)", 1), str("")));
  const fracDigits = coalesce(extract(g, "\\.([0-9]+)$", 1), str(""));
  const fitted = s.at(0, "fit", { op: "fitRight", e: fracDigits, length: scale + 1, fill: "0" });
  const roundUp = s.at(1, "up", matches(fitted, `^[0-9]{${scale}}[5-9]`));
  const keep = scale > 0 ? extract(fitted, `^([0-9]{${scale}})`, 1) : str("");
  const digits = s.at(1, "digits", concat(intDigits, keep));
  // Add one to a digit string: the last non-9 digit goes up, the 9s after it become 0s.
  const before = coalesce(extract(digits, "^([0-9]*?)[0-8]?9*$", 1), str(""));
  const bumped = s.at(2, "bumped", extract(digits, "^[0-9]*?([0-8]?)9*$", 1));
  const nines = coalesce(extract(digits, "^[0-9]*?[0-8]?(9*)$", 1), str(""));
  const bumpedUp = when([[isNull(bumped), str("1")]], cast(add(cast(bumped, "int64"), int(1)), "utf8"));
  const incremented = concat(before, bumpedUp, { op: "replaceAll", e: nines, pattern: "9", replacement: "0" });
  const rounded = s.at(3, "rounded", when([[roundUp, incremented]], digits));
  const intPart = scale > 0 ? coalesce(extract(rounded, `^([0-9]*)[0-9]{${scale}}$`, 1), str("")) : rounded;
  const intStripped = s.at(4, "intpart", coalesce(extract(intPart, "^0*([1-9][0-9]*)$", 1), str("")));
  const isZero = s.at(4, "zero", not(matches(rounded, "[1-9]")));
  const fits = cmp("<=", { op: "length", e: intStripped }, int(precision - scale));
  const text = concat(
    when([[and(neg, not(isZero)), str("-")]], str("")),
    when([[cmp("=", intStripped, str("")), str("0")]], intStripped),
    scale > 0 ? concat(str("."), extract(rounded, `([0-9]{${scale}})$`, 1)) : str(""),
  );
  return { stages: s.stages, result: when([[and(not(isNull(g)), fits), text]], nullOf("utf8")) };
}

/** The composite ops in `e`'s own position expanded to stages; other ops are left alone. */
export function stageComposite(e: Expr, prefix: string): Staged | undefined {
  if (e.op === "timestampToMicros") return expandTimestampToMicros(e.e, prefix);
  if (e.op === "decimalCanon") return expandDecimalCanon(e.e, e.precision, e.scale, prefix);
  return undefined;
}

/** One expression with the stage columns substituted (for positions where stages cannot run). */
export function inlineStaged(staged: Staged): Expr {
  const defs = new Map<string, Expr>();
  const sub = (e: Expr): Expr => {
    if (e.op === "col") return defs.get(e.name) ?? e;
    const out: Record<string, unknown> = { ...e };
    for (const [k, v] of Object.entries(e)) {
      if (Array.isArray(v)) {
        out[k] = v.map((x: unknown) =>
          Array.isArray(x) ? x.map((y: unknown) => sub(y as Expr)) : typeof x === "object" && x !== null ? sub(x as Expr) : x,
        );
      } else if (typeof v === "object" && v !== null) out[k] = sub(v as Expr);
    }
    return out as Expr;
  };
  for (const stage of staged.stages) for (const [name, e] of stage) defs.set(name, sub(e));
  return sub(staged.result);
}
