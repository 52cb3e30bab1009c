/**
 * The Spark SQL dialect of the validation plan: the same plan (plan.ts) the DuckDB and Polars
 * engines run, spelt as one Spark SQL statement over a view of the encoded batch. The
 * composite conversions run as their primitive expansions (composite.ts), as on Polars, so the
 * only Spark-specific code is one spelling per IR primitive.
 *
 * What Spark cannot express with exactly the contract's meaning is refused here, with the
 * reason, rather than evaluated differently: regex syntax whose Java meaning differs from RE2's
 * (toJavaRegex) and `sql` rules written in DuckDB-only syntax (checkSparkSql). Spark's analyser
 * refuses the rest (unknown functions, columns) when the driver compiles the statement.
 */
import { analyzeRuleExpression } from "../contract/index.js";
import { datasetValueSql, rowRuleSql } from "../contract/sql-bind.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { stageComposite } from "./composite.js";
import type { Expr, Layer } from "./ir.js";
import { BAD_COL, FAIL_COL, SUPERSEDED_COL, UNKNOWN_COL, type DatasetPlan, type Plan } from "./plan-types.js";

const SPARK_TYPE = { utf8: "STRING", int64: "BIGINT", float64: "DOUBLE", bool: "BOOLEAN" } as const;

/** The view the driver registers for the encoded batch, and the one for the evaluated rows. */
export const BATCH_VIEW = "__ll_batch";
export const EVAL_VIEW = "__ll_ev";

/** `a`b` → `` `a``b` ``. */
export const sparkIdent = (name: string): string => `\`${name.replaceAll("`", "``")}\``;

/** A Spark SQL string literal: Spark unescapes backslashes inside quotes, so they are doubled. */
export const sparkString = (s: string): string =>
  `'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'").replaceAll("\n", "\\n").replaceAll("\r", "\\r")}'`;

/** Thrown while spelling a pattern or rule Spark would read differently; `where` names it. */
export class SparkDialectError extends Error {}

const WORD = "[0-9A-Za-z_]";
const OUTSIDE: Record<string, string> = {
  // Java's \s also matches \x0B; RE2's does not.
  s: "[\\t\\n\\f\\r ]",
  S: "[^\\t\\n\\f\\r ]",
  // Java's \b is Unicode-aware on Java 17; RE2's is ASCII.
  b: `(?:(?<=${WORD})(?!${WORD})|(?<!${WORD})(?=${WORD}))`,
  B: `(?:(?<=${WORD})(?=${WORD})|(?<!${WORD})(?!${WORD}))`,
};
/** Escapes whose Java meaning inside and outside a class is RE2's (ASCII \d and \w by default). */
const SAME = new Set(["d", "D", "w", "W", "t", "n", "r", "f", "A", "z", "x"]);

/**
 * An RE2 pattern as a Java pattern with the same matches, or SparkDialectError naming the
 * construct that has no exact Java spelling here. `.` (Java: not \r, \u0085, \u2028, \u2029
 * either) becomes `[^\n]`; `$` (Java: also before a final line break) becomes `\z`.
 */
export function toJavaRegex(pattern: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const n = pattern[i + 1];
      if (n === undefined) throw new SparkDialectError("the pattern ends with a lone backslash");
      i++;
      if (/[^0-9A-Za-z]/.test(n)) out += c + n;
      else if (SAME.has(n)) out += c + n;
      else if (inClass && n === "s") out += "\\t\\n\\f\\r ";
      else if (!inClass && OUTSIDE[n]) out += OUTSIDE[n];
      else throw new SparkDialectError(`the escape \\${n}${inClass ? " inside a character class" : ""} has a different meaning in Java regex`);
      continue;
    }
    if (inClass) {
      if (c === "[") throw new SparkDialectError("a '[' inside a character class (Java reads it as a class union; POSIX classes like [[:alpha:]] are RE2-only)");
      if (c === "&" && pattern[i + 1] === "&") throw new SparkDialectError("'&&' inside a character class is an intersection in Java regex");
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      // A `]` right after `[` or `[^` is a literal member, not the end.
      if (pattern[i + 1] === "^") out += pattern[++i];
      if (pattern[i + 1] === "]") out += "\\" + pattern[++i];
      continue;
    }
    if (c === "(" && pattern[i + 1] === "?" && pattern[i + 2] !== ":") {
      throw new SparkDialectError("flags, named groups and lookarounds '(?…' differ between RE2 and Java regex");
    }
    if ((c === "+" || c === "*" || c === "?" || c === "}") && pattern[i + 1] === "+") {
      throw new SparkDialectError(`'${c}+' is a possessive quantifier in Java regex and an error in RE2`);
    }
    if (c === "{" && pattern[i + 1] === ",") throw new SparkDialectError("'{,n}' is literal text in RE2 and an error in Java regex");
    if (c === ".") out += "[^\\n]";
    else if (c === "$") out += "\\z";
    else out += c;
  }
  return out;
}

/**
 * Functions a rule may call (docs/contracts.md) that Spark has with DuckDB's meaning. The others
 * are refused for engine "spark": some are missing there, and some share a name but not a
 * meaning (`log` is base 10 on DuckDB and natural on Spark, `trunc` truncates dates on Spark,
 * `dayofweek` counts from 1, `datediff` and `date_add` take other arguments, `isnan(NULL)` is
 * false, `chr` wraps at 256).
 */
const SPARK_SAME_FUNCTIONS: ReadonlySet<string> = new Set([
  "length", "char_length", "character_length", "octet_length", "lower", "lcase", "upper", "ucase",
  "trim", "ltrim", "rtrim", "substr", "substring", "left", "right", "reverse", "instr", "ascii",
  "md5", "levenshtein", "contains", "abs", "round", "floor", "ceil", "ceiling", "sqrt", "cbrt",
  "power", "pow", "exp", "ln", "log10", "log2", "mod", "greatest", "least", "coalesce", "nullif",
  "ifnull", "if", "year", "month", "day", "dayofmonth", "dayofyear", "hour", "minute", "quarter",
  "weekofyear", "last_day", "make_date",
  // aggregates (dataset sql rules)
  "count", "count_if", "sum", "avg", "mean", "min", "max", "stddev", "stddev_samp", "stddev_pop",
  "variance", "var_samp", "var_pop", "bool_and", "bool_or",
]);

/** Syntax both dialects accept with different meanings (or DuckDB-only syntax). */
const DIFFERENT_SYNTAX: Array<[RegExp, string]> = [
  [/::/, "'::' casts are DuckDB syntax (write CAST(x AS type))"],
  [/\\/, "a backslash: Spark reads escapes inside string literals and DuckDB does not"],
  [/\^/, "'^' is power on DuckDB and bitwise xor on Spark (use power(a, b))"],
  [/\/\//, "'//' is DuckDB's integer division"],
  [/~~|!~~|\b(ilike|similar\s+to|glob)\b/i, "a DuckDB-only pattern operator"],
  [/"/, "double quotes are identifiers on DuckDB and strings on Spark (quote names with backticks or leave them bare)"],
];

/**
 * Throws SparkDialectError when a `sql` rule (or a dataset rule's query part) uses a function or
 * syntax that Spark reads differently from DuckDB, or not at all.
 */
export function checkSparkSql(sql: string, aggregates = false): void {
  for (const [re, why] of DIFFERENT_SYNTAX) if (re.test(sql)) throw new SparkDialectError(`${why}: ${sql}`);
  const { functions } = analyzeRuleExpression(sql, { aggregates });
  const other = functions.filter((f) => !SPARK_SAME_FUNCTIONS.has(f));
  if (other.length) {
    throw new SparkDialectError(`${other.map((f) => `${f}()`).join(", ")} has no function of the same meaning on Spark: ${sql}`);
  }
}

export function toSparkSql(e: Expr): string {
  const s = toSparkSql;
  switch (e.op) {
    case "col":
      return sparkIdent(e.name);
    case "lit":
      if (e.value === null) return `CAST(NULL AS ${SPARK_TYPE[e.type]})`;
      switch (e.type) {
        case "utf8":
          return sparkString(String(e.value));
        case "int64":
          return `CAST(${String(e.value)} AS BIGINT)`;
        case "float64":
          return `CAST('${String(e.value)}' AS DOUBLE)`;
        case "bool":
          return e.value ? "TRUE" : "FALSE";
      }
      break;
    case "digit8":
      return `(shiftright(${s(e.e)}, ${3 * e.pos}) & 7)`;
    case "matches":
      return `(${s(e.e)} RLIKE ${sparkString(toJavaRegex(e.pattern))})`;
    case "extract":
      return `nullif(regexp_extract(${s(e.e)}, ${sparkString(toJavaRegex(e.pattern))}, ${e.group}), '')`;
    case "trimWs":
      return `trim(BOTH ${sparkString(" \t\n\r")} FROM ${s(e.e)})`;
    case "replaceAll":
      // Java replacement text: `\` and `$` are special.
      return `regexp_replace(${s(e.e)}, ${sparkString(toJavaRegex(e.pattern))}, ${sparkString(e.replacement.replace(/[\\$]/g, "\\$&"))})`;
    case "fitRight":
      return `rpad(${s(e.e)}, ${e.length}, ${sparkString(e.fill)})`;
    case "concat":
      return `concat(${e.parts.map(s).join(", ")})`;
    case "joinNonNull":
      return `nullif(concat_ws(${sparkString(e.sep)}, ${e.parts.map(s).join(", ")}), '')`;
    case "length":
      return `CAST(char_length(${s(e.e)}) AS BIGINT)`;
    case "cast":
      // Non-ANSI mode (the driver sets it): a value that does not convert gives NULL.
      return `CAST(${s(e.e)} AS ${SPARK_TYPE[e.to]})`;
    case "arith":
      return `(${s(e.a)} ${e.fn} ${s(e.b)})`;
    case "cmp":
      return `(${s(e.a)} ${e.fn === "!=" ? "<>" : e.fn} ${s(e.b)})`;
    case "and":
      return `(${e.args.map(s).join(" AND ")})`;
    case "or":
      return `(${e.args.map(s).join(" OR ")})`;
    case "not":
      return `(NOT ${s(e.e)})`;
    case "isNull":
      return `(${s(e.e)} IS NULL)`;
    case "isFinite": {
      // Spark's isnan(NULL) is false, and NaN = NaN is true there: spelt out.
      const x = s(e.e);
      return `(CASE WHEN ${x} IS NULL THEN CAST(NULL AS BOOLEAN) ELSE NOT isnan(${x}) AND abs(${x}) <> CAST('Infinity' AS DOUBLE) END)`;
    }
    case "coalesce":
      return `coalesce(${e.args.map(s).join(", ")})`;
    case "case": {
      const branches = e.when.map(([c, v]) => `WHEN ${s(c)} THEN ${s(v)}`).join(" ");
      return `(CASE ${branches}${e.otherwise ? ` ELSE ${s(e.otherwise)}` : ""} END)`;
    }
    case "inList": {
      const type = e.type === "float64" ? "float64" : e.type === "bool" ? "bool" : "utf8";
      return `(${s(e.e)} IN (${e.values.map((v) => s({ op: "lit", value: v, type })).join(", ")}))`;
    }
    case "dateToDays":
      return `CAST(datediff(CAST(${s(e.e)} AS DATE), DATE'1970-01-01') AS BIGINT)`;
    case "daysToDate":
      return `date_add(DATE'1970-01-01', CAST(${s(e.e)} AS INT))`;
    case "microsToTimestamp":
      // The session time zone is UTC: the naive value DuckDB gives, as a Spark timestamp.
      return `timestamp_micros(${s(e.e)})`;
    case "formatMicros":
      return `date_format(timestamp_micros(${s(e.e)}), "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")`;
    case "decimalValue":
      return `CAST(${s(e.e)} AS DECIMAL(${e.precision},${e.scale}))`;
    case "sqlRule":
      return rowRuleSql(e.sql);
    case "lastInGroup":
      return `(row_number() OVER (PARTITION BY ${e.keys.map(s).join(", ")} ORDER BY ${s(e.order)} DESC) = 1)`;
    case "timestampToMicros":
    case "decimalCanon":
      // Staged into primitives before spelling (compileLayers).
      throw new Error(`internal error: ${e.op} reached the Spark spelling unstaged`);
  }
  throw new Error(`unreachable: ${(e as { op: string }).op}`);
}

/** Layers with the composite conversions staged into columns ahead of the layer using them. */
function stagedLayers(layers: readonly Layer[]): Layer[] {
  return layers.flatMap((l) => {
    const pre: Array<Array<[string, Expr]>> = [];
    const cols = l.columns.map(([n, e]): [string, Expr] => {
      const staged = stageComposite(e, n);
      if (!staged) return [n, e];
      staged.stages.forEach((stage, i) => (pre[i] ??= []).push(...stage));
      return [n, staged.result];
    });
    return [...pre, cols].map((columns) => ({ columns }));
  });
}

/** What the driver runs for one batch of a contract, and what it reads back. */
export interface SparkStatement {
  /** Columns of the batch view, in order, with their Spark types. */
  input: Array<{ name: string; type: "BIGINT" | "STRING" }>;
  /** The statement over BATCH_VIEW: one row per batch row, ordered by arrival. */
  sql: string;
  /** Columns the statement returns, in order. */
  columns: string[];
  /** One query per dataset rule over EVAL_VIEW (the statement's rows), each giving one value. */
  measures: string[];
}

function sparkMeasure(d: DatasetPlan, good: string): string {
  const cols = d.cols.map(sparkIdent);
  switch (d.rule.kind) {
    case "unique":
      return `SELECT CAST(count(DISTINCT struct(${cols.join(", ")})) AS DOUBLE) FROM ${EVAL_VIEW} WHERE ${good}`;
    case "null_ratio":
      return `SELECT CAST(count_if(${cols[0]!}) AS DOUBLE) FROM ${EVAL_VIEW} WHERE ${good}`;
    case "row_count_between":
      return "SELECT CAST(0 AS DOUBLE)";
    case "sql": {
      const { select, where } = d.rule.query;
      return `SELECT ${datasetValueSql(select)} FROM ${EVAL_VIEW} WHERE ${good}${where !== undefined ? ` AND (${where})` : ""}`;
    }
  }
}

/**
 * The plan as Spark SQL. Throws ConfigError (option: the rule, or "contract") when a rule or
 * pattern has no exact Spark meaning.
 */
export interface SparkStatementOptions {
  /** More columns of the batch view that the statement returns as they are. */
  carry?: Array<{ name: string; type: "BIGINT" | "STRING" }>;
  /** More of the statement's own columns to return (a declared field's typed value, by name). */
  keep?: string[];
  /** ORDER BY arrival (default true): the serving engine reads rows back by position; on the executors no order is needed. */
  ordered?: boolean;
}

export function buildSparkStatement(plan: Plan, contract: Contract, options: SparkStatementOptions = {}): SparkStatement {
  for (const check of plan.checks) {
    const rule = check.rule;
    try {
      if (rule?.kind === "sql") checkSparkSql(rule.sql);
      if (rule?.kind === "regex_match") toJavaRegex(rule.pattern);
    } catch (err) {
      if (err instanceof SparkDialectError) {
        throw new ConfigError(`rule ${check.ruleId}`, `cannot run on engine "spark" with the same meaning: ${err.message}`);
      }
      throw err;
    }
  }
  for (const rule of contract.datasetRules) {
    if (rule.kind !== "sql") continue;
    try {
      checkSparkSql(rule.query.select, true);
      if (rule.query.where !== undefined) checkSparkSql(rule.query.where);
    } catch (err) {
      if (err instanceof SparkDialectError) {
        throw new ConfigError(`dataset rule ${rule.id}`, `cannot run on engine "spark" with the same meaning: ${err.message}`);
      }
      throw err;
    }
  }
  const input: SparkStatement["input"] = [
    { name: "__ll_i", type: "BIGINT" },
    { name: UNKNOWN_COL, type: "STRING" },
    ...plan.tagWords.map((name) => ({ name, type: "BIGINT" as const })),
    ...plan.fields.map((f) => ({ name: f.text, type: "STRING" as const })),
    ...(options.carry ?? []),
  ];
  const layers: Layer[] = [
    ...stagedLayers(plan.layers),
    ...(plan.sqlRules.length ? [{ columns: plan.sqlRules.map(([c, sql]): [string, Expr] => [c, { op: "sqlRule", sql }]) }] : []),
    ...stagedLayers(plan.postLayers),
  ].filter((l) => l.columns.length > 0);
  const ctes = layers.map(
    (l, i) => `s${i + 1} AS (SELECT *, ${l.columns.map(([n, e]) => `${toSparkSql(e)} AS ${sparkIdent(n)}`).join(", ")} FROM ${i === 0 ? BATCH_VIEW : `s${i}`})`,
  );
  const keep = new Set(["__ll_i", BAD_COL, ...plan.checks.map((c) => c.flag), ...plan.outputColumns]);
  for (const c of options.carry ?? []) keep.add(c.name);
  for (const c of options.keep ?? []) keep.add(c);
  if (plan.checks.length) keep.add(FAIL_COL);
  plan.dataset.forEach((d) => d.cols.forEach((c) => keep.add(c)));
  if (plan.supersedeBy) keep.add(SUPERSEDED_COL);
  // Dataset sql rules read the typed fields by name.
  if (plan.dataset.some((d) => d.rule.kind === "sql")) plan.fields.forEach((f) => f.spec && keep.add(f.name));
  const available = new Set<string>(input.map((c) => c.name));
  layers.forEach((l) => l.columns.forEach(([n]) => available.add(n)));
  const columns = [...keep].filter((c) => available.has(c));
  const last = layers.length === 0 ? BATCH_VIEW : `s${layers.length}`;
  const sql = `${ctes.length ? `WITH ${ctes.join(",\n")}\n` : ""}SELECT ${columns.map(sparkIdent).join(", ")} FROM ${last}${options.ordered === false ? "" : " ORDER BY __ll_i"}`;
  const good = plan.supersedeBy ? `NOT ${BAD_COL} AND NOT ${sparkIdent(SUPERSEDED_COL)}` : `NOT ${BAD_COL}`;
  return { input, sql, columns, measures: plan.dataset.map((d) => sparkMeasure(d, good)) };
}
