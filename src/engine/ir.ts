/**
 * A tiny expression language that both engines compile from. Coercion and rule
 * predicates are written once, here, as data; `duckdb.ts` turns them into SQL and
 * `polars.ts` into Polars expressions. That is how the two engines stay in step:
 * the only engine-specific code is the handful of primitives below, each with a
 * precisely stated meaning that both backends implement.
 *
 * Null handling follows SQL: every primitive returns null when an input is null,
 * except `isNull`, `coalesce`, `case`, and the three-valued `and` / `or`.
 */

export type CastTarget = "int64" | "float64" | "utf8" | "bool";

export type Expr =
  | { op: "col"; name: string }
  | { op: "lit"; value: string | number | bigint | boolean | null; type: "utf8" | "int64" | "float64" | "bool" }
  /** Base-8 digit `pos` of a non-negative integer below 2^53 (a packed value tag). */
  | { op: "digit8"; e: Expr; pos: number }
  /** Partial regex match (RE2 / Rust-regex common subset, see regex.ts). */
  | { op: "matches"; e: Expr; pattern: string }
  /** Text of capture group `group`; null when there is no match or the group is absent or empty. */
  | { op: "extract"; e: Expr; pattern: string; group: number }
  /** Strip ASCII space, tab, CR and LF from both ends. */
  | { op: "trimWs"; e: Expr }
  /** Replace every match of `pattern` with literal `replacement`. */
  | { op: "replaceAll"; e: Expr; pattern: string; replacement: string }
  /** Right-pad with `fill` to exactly `length` characters, truncating longer values. */
  | { op: "fitRight"; e: Expr; length: number; fill: string }
  /** String concatenation; null if any part is null. */
  | { op: "concat"; parts: Expr[] }
  /** Join the non-null parts with `sep`; null when every part is null. */
  | { op: "joinNonNull"; parts: Expr[]; sep: string }
  /** Length in characters. */
  | { op: "length"; e: Expr }
  /** Lenient cast: null when the value does not convert. Only used on pre-validated text. */
  | { op: "cast"; e: Expr; to: CastTarget }
  | { op: "arith"; fn: "+" | "-" | "*"; a: Expr; b: Expr }
  | { op: "cmp"; fn: "=" | "!=" | "<" | "<=" | ">" | ">="; a: Expr; b: Expr }
  | { op: "and"; args: Expr[] }
  | { op: "or"; args: Expr[] }
  | { op: "not"; e: Expr }
  | { op: "isNull"; e: Expr }
  | { op: "isFinite"; e: Expr }
  | { op: "coalesce"; args: Expr[] }
  /** First matching branch; `otherwise` defaults to a null of the branches' type. */
  | { op: "case"; when: Array<[Expr, Expr]>; otherwise?: Expr }
  /** Membership in a list of literals of one type; null input gives null. */
  | { op: "inList"; e: Expr; values: Array<string | number | boolean>; type: "utf8" | "float64" | "bool" }
  // ── Composite primitives: one meaning, an engine-native implementation each ──
  /** Validated `YYYY-MM-DD` text → days since 1970-01-01 (int64); null when not a real calendar date. */
  | { op: "dateToDays"; e: Expr }
  /** Days since epoch (int64) → a date-typed value (for SQL rules). */
  | { op: "daysToDate"; e: Expr }
  /**
   * Text already matching TIMESTAMP_RE → microseconds since epoch (int64, UTC), offsets applied,
   * digits after the sixth fractional digit dropped; null when the date part is not a real date.
   */
  | { op: "timestampToMicros"; e: Expr }
  /** Microseconds since epoch (int64) → a timestamp-typed value (naive, UTC) for SQL rules. */
  | { op: "microsToTimestamp"; e: Expr }
  /** Microseconds since epoch (int64) → `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
  | { op: "formatMicros"; e: Expr }
  /**
   * Text already matching DECIMAL_RE → canonical decimal text with exactly `scale` fraction
   * digits, rounded half away from zero on the first dropped digit; null when the integer part
   * needs more than precision − scale digits. `-0.00` is written `0.00`.
   */
  | { op: "decimalCanon"; e: Expr; precision: number; scale: number }
  /**
   * Canonical decimal text → a decimal-typed value (for SQL rules and the lake). `text`, when
   * given, is the text `e` was canonicalised from (decimalCanon): an engine whose own decimal
   * cast is that canonicalisation may cast it directly and skip the canonical text.
   */
  | { op: "decimalValue"; e: Expr; precision: number; scale: number; text?: Expr }
  /** A contract `sql` rule over the typed columns; TRUE passes, FALSE and NULL fail (gives a boolean, never null). */
  | { op: "sqlRule"; sql: string }
  /**
   * A window over the batch: TRUE on the row with the largest `order` (an int64, distinct per
   * row) among the rows whose `keys` are equal, NULLs equal to each other; FALSE on the others.
   * Never null. An engine may return the rows in another order after it (DuckDB does).
   */
  | { op: "lastInGroup"; keys: Expr[]; order: Expr };

/** One projection step: columns computed from the previous step's columns, added to them. */
export interface Layer {
  columns: Array<[name: string, expr: Expr]>;
}

// ── Builders: keep the plan compiler (plan*.ts) readable ──

export const col = (name: string): Expr => ({ op: "col", name });
export const str = (value: string): Expr => ({ op: "lit", value, type: "utf8" });
export const int = (value: number | bigint): Expr => ({ op: "lit", value, type: "int64" });
export const num = (value: number): Expr => ({ op: "lit", value, type: "float64" });
export const bool = (value: boolean): Expr => ({ op: "lit", value, type: "bool" });
export const nullOf = (type: "utf8" | "int64" | "float64" | "bool"): Expr => ({ op: "lit", value: null, type });
export const and = (...args: Expr[]): Expr => (args.length === 1 ? args[0]! : { op: "and", args });
export const or = (...args: Expr[]): Expr => (args.length === 1 ? args[0]! : { op: "or", args });
export const not = (e: Expr): Expr => ({ op: "not", e });
export const isNull = (e: Expr): Expr => ({ op: "isNull", e });
export const notNull = (e: Expr): Expr => not(isNull(e));
export const eq = (a: Expr, b: Expr): Expr => ({ op: "cmp", fn: "=", a, b });
export const cmp = (fn: "=" | "!=" | "<" | "<=" | ">" | ">=", a: Expr, b: Expr): Expr => ({ op: "cmp", fn, a, b });
export const matches = (e: Expr, pattern: string): Expr => ({ op: "matches", e, pattern });
export const extract = (e: Expr, pattern: string, group: number): Expr => ({ op: "extract", e, pattern, group });
export const cast = (e: Expr, to: CastTarget): Expr => ({ op: "cast", e, to });
export const coalesce = (...args: Expr[]): Expr => ({ op: "coalesce", args });
export const when = (branches: Array<[Expr, Expr]>, otherwise?: Expr): Expr =>
  otherwise === undefined ? { op: "case", when: branches } : { op: "case", when: branches, otherwise };
/** A boolean that is never null: TRUE only when `e` is TRUE. */
export const isTrue = (e: Expr): Expr => coalesce(e, bool(false));
