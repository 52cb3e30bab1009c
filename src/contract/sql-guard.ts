/**
 * "Rules are expressions, never statements."
 *
 * A `sql` rule is pasted into the engine's query as a per-row boolean expression, so a contract
 * author (or whoever can edit the YAML) must not be able to run statements, read files, reach the
 * network or the environment through it. Instead of hunting for bad things we tokenize the rule
 * the way DuckDB's lexer would and accept only an allowlist: identifiers, literals, a few
 * operators, expression keywords, SQL type names, and calls to pure scalar functions.
 */
import { LakeLogicError } from "../errors.js";
import { didYouMean } from "./suggest.js";

/** A rule expression was rejected. `offset` is the 0-based position of `token` in `sql`. */
export class RuleExpressionError extends LakeLogicError {
  readonly sql: string;
  readonly token?: string;
  readonly offset?: number;
  /** The bare problem, without the expression quoted (the contract loader adds its own location). */
  readonly reason: string;
  constructor(sql: string, reason: string, token?: string, offset?: number) {
    const at = offset === undefined ? "" : ` (at offset ${offset})`;
    super("RULE_EXPRESSION", `rule expression rejected${at}: ${reason}. Expression: ${sql}`);
    this.sql = sql;
    this.reason = reason;
    this.token = token;
    this.offset = offset;
  }
}

export interface RuleExpressionOptions {
  /**
   * Field names of the contract. When given (and non-empty) every column reference must name one
   * of them, compared case-insensitively as DuckDB does for quoted and unquoted identifiers alike.
   */
  fields?: readonly string[];
}

export interface RuleExpressionInfo {
  /** Column references, spelt as the contract's field when `fields` was given, else as written. */
  columns: string[];
  /** Functions called, lower-cased. */
  functions: string[];
}

type TokKind = "ident" | "qident" | "string" | "number" | "op" | "lparen" | "rparen" | "comma" | "dot";
interface Tok {
  kind: TokKind;
  /** Source text. */
  text: string;
  /** ident: lower-cased; qident: unescaped name; string: unescaped value. */
  value: string;
  start: number;
  end: number;
}

/**
 * Pure scalar functions a rule may call. Nothing here reads files, network, settings or clocks, and
 * nothing can blow one row up into gigabytes (repeat, lpad, rpad, printf and format are left out).
 */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set([
  // strings
  "length", "len", "char_length", "character_length", "octet_length", "strlen", "lower", "lcase",
  "upper", "ucase", "trim", "ltrim", "rtrim", "substr", "substring", "left", "right", "replace",
  "reverse", "concat", "concat_ws", "strpos", "instr", "contains",
  "starts_with", "ends_with", "prefix", "suffix", "regexp_matches", "regexp_full_match",
  "regexp_extract", "regexp_replace", "split_part", "ascii", "unicode", "ord", "chr", "md5",
  "sha256", "levenshtein", "damerau_levenshtein", "jaro_winkler_similarity", "jaccard",
  "translate", "strip_accents", "nfc_normalize", "like_escape", "ilike_escape",
  // numbers
  "abs", "round", "floor", "ceil", "ceiling", "trunc", "sign", "sqrt", "cbrt", "power", "pow", "exp",
  "ln", "log", "log10", "log2", "mod", "greatest", "least", "isnan", "isinf", "isfinite",
  // nulls and conditionals
  "coalesce", "nullif", "ifnull", "if",
  // dates and times (pure: they take their input, never the clock)
  "date_part", "datepart", "date_trunc", "datetrunc", "date_diff", "datediff", "date_sub",
  "date_add", "year", "month", "day", "dayofmonth", "dayofweek", "dayofyear", "isodow", "hour",
  "minute", "second", "millisecond", "microsecond", "week", "weekofyear", "yearweek", "quarter",
  "epoch", "epoch_ms", "make_date", "make_time", "make_timestamp", "strftime", "strptime",
  "try_strptime", "to_timestamp", "last_day", "monthname", "dayname", "isoyear",
  // JSON and lists (read a value of the row, nothing else)
  "json_valid", "json_extract", "json_extract_string", "json_type", "json_array_length",
  "json_exists", "array_length", "list_contains", "array_contains", "list_has",
]);

/** Functions people reach for that must never run inside a rule, with the reason shown to them. */
const DANGEROUS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    read_csv: "reads files", read_csv_auto: "reads files", read_json: "reads files",
    read_json_auto: "reads files", read_json_objects: "reads files", read_ndjson: "reads files",
    read_ndjson_auto: "reads files", read_ndjson_objects: "reads files", read_parquet: "reads files",
    parquet_scan: "reads files", parquet_metadata: "reads files", parquet_schema: "reads files",
    parquet_file_metadata: "reads files", parquet_kv_metadata: "reads files", read_text: "reads files",
    read_blob: "reads files", csv_scan: "reads files", sniff_csv: "reads files", glob: "lists files",
    read_xlsx: "reads files", st_read: "reads files", delta_scan: "reads files",
    iceberg_scan: "reads files", sqlite_scan: "opens databases", sqlite_attach: "opens databases",
    postgres_scan: "opens databases", postgres_attach: "opens databases",
    postgres_query: "opens databases", postgres_execute: "opens databases",
    mysql_scan: "opens databases", mysql_query: "opens databases", query: "runs SQL",
    query_table: "runs SQL", getenv: "reads the environment", current_setting: "reads settings",
    http_get: "reaches the network", http_post: "reaches the network", http_head: "reaches the network",
    load_aws_credentials: "reads credentials", nextval: "changes state", currval: "reads state",
    setseed: "changes state", random: "is not deterministic", uuid: "is not deterministic",
    gen_random_uuid: "is not deterministic", now: "reads the clock", today: "reads the clock",
    get_current_time: "reads the clock", get_current_timestamp: "reads the clock",
    transaction_timestamp: "reads the clock", current_localtimestamp: "reads the clock",
    current_database: "reads the session", current_schema: "reads the session",
    current_schemas: "reads the session", current_query: "reads the session",
    current_user: "reads the session", version: "reads the system", txid_current: "reads the session",
  }),
);

/** Words that are never column references when unquoted; most start a statement or a subquery. */
const FORBIDDEN_KEYWORDS: ReadonlySet<string> = new Set([
  // statements
  "select", "insert", "update", "delete", "merge", "upsert", "create", "drop", "alter", "truncate",
  "attach", "detach", "copy", "pragma", "set", "reset", "install", "load", "call", "export",
  "import", "execute", "prepare", "deallocate", "vacuum", "checkpoint", "force", "begin", "commit",
  "rollback", "abort", "use", "explain", "describe", "show", "summarize", "grant", "revoke",
  "analyze", "analyse", "values", "returning",
  // query clauses and subquery forms
  "exists", "with", "recursive", "table", "where", "group", "having", "order", "limit", "offset",
  "fetch", "qualify", "window", "over", "filter", "within", "union", "except", "intersect",
  "join", "lateral", "using", "into", "pivot", "unpivot", "pivot_longer", "pivot_wider", "all",
  "any", "some", "array", "lambda", "asc", "desc", "for", "do", "only", "on", "default", "check",
  "collate", "column", "constraint", "references", "foreign", "primary", "unique", "variadic",
  "symmetric", "asymmetric", "leading", "trailing", "both", "placing", "initially", "deferrable",
  // session values and clocks written without parentheses
  "current_user", "session_user", "user", "current_role", "current_catalog", "current_schema",
  "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
]);

const STATEMENT_WORDS = new Set([
  "select", "insert", "update", "delete", "merge", "upsert", "create", "drop", "alter", "truncate",
  "attach", "detach", "copy", "pragma", "set", "reset", "install", "load", "call", "export",
  "import", "execute", "prepare", "deallocate", "vacuum", "checkpoint", "force", "begin", "commit",
  "rollback", "abort", "use", "explain", "describe", "show", "summarize", "grant", "revoke",
  "analyze", "analyse", "values", "with", "table", "pivot", "unpivot",
]);
const CLOCK_WORDS = new Set(["current_date", "current_time", "current_timestamp", "localtime", "localtimestamp"]);

/** Expression keywords accepted anywhere (a few more are accepted in one position only, below). */
const EXPRESSION_KEYWORDS: ReadonlySet<string> = new Set([
  "and", "or", "not", "is", "null", "true", "false", "unknown", "in", "between", "like", "ilike",
  "similar", "to", "escape", "case", "when", "then", "else", "end",
]);

/** Words that may make up a type name after `AS` or `::`. */
const TYPE_WORDS: ReadonlySet<string> = new Set([
  "boolean", "bool", "logical", "tinyint", "int1", "smallint", "int2", "short", "integer", "int",
  "int4", "int32", "signed", "bigint", "int8", "int64", "long", "hugeint", "int128", "utinyint",
  "usmallint", "uinteger", "ubigint", "uhugeint", "float", "float4", "real", "double", "float8",
  "decimal", "numeric", "dec", "varchar", "char", "character", "bpchar", "text", "string", "date",
  "time", "timetz", "timestamp", "timestamptz", "datetime", "timestamp_s", "timestamp_ms",
  "timestamp_ns", "timestamp_us", "interval", "uuid", "json", "blob", "bytea", "binary", "varbinary",
]);
/** Words that continue a multi-word type: DOUBLE PRECISION, TIMESTAMP WITH TIME ZONE, … */
const TYPE_CONTINUATIONS: ReadonlySet<string> = new Set(["precision", "varying", "with", "without", "time", "zone"]);
const TYPED_LITERAL_WORDS = new Set(["date", "time", "timestamp", "timestamptz", "interval"]);
const INTERVAL_UNITS = new Set([
  "year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours", "minute",
  "minutes", "second", "seconds", "millisecond", "milliseconds", "microsecond", "microseconds",
]);

const ALLOWED_OPERATORS = new Set(["=", "==", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "||", "::"]);
/** Characters DuckDB's lexer glues into one operator token. */
const OPERATOR_CHARS = "+-*/<>=~!@#%^&|`?:";
const MAX_LENGTH = 10_000;
const MAX_DEPTH = 64;

function codePointLabel(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Invisible and bidirectional-control characters make a rule read differently from how it runs. */
function isDeceptive(ch: string): boolean {
  return /[\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0]/u.test(ch);
}

function tokenize(sql: string): Tok[] {
  const toks: Tok[] = [];
  const fail = (reason: string, token: string, offset: number): never => {
    throw new RuleExpressionError(sql, reason, token, offset);
  };
  let i = 0;
  /** From the opening quote at `i`: the unescaped text up to its closing quote (doubled = one). */
  const readQuoted = (quote: string, what: string, start: number): string => {
    let value = "";
    i++;
    for (;;) {
      if (i >= sql.length) fail(`unterminated ${what}`, sql.slice(start, start + 20), start);
      const c = sql[i]!;
      if (isDeceptive(c)) fail(`invisible or bidirectional control character ${codePointLabel(c)} inside a ${what}`, c, i);
      if (c === quote) {
        if (sql[i + 1] === quote) {
          value += quote;
          i += 2;
          continue;
        }
        i++;
        return value;
      }
      value += c;
      i++;
    }
  };
  while (i < sql.length) {
    const ch = sql[i]!;
    if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") {
      i++;
      continue;
    }
    const start = i;
    if (ch === "'") {
      // An identifier glued to the quote makes a prefixed literal (E'…' escapes, X'…' blobs):
      // the lexer would read backslashes differently from us, so refuse the form outright.
      const prev = toks[toks.length - 1];
      if (prev && (prev.kind === "ident" || prev.kind === "qident") && prev.end === start) {
        fail(`prefixed string literals such as ${prev.text}'…' are not allowed; write a plain '…' literal`, prev.text, prev.start);
      }
      const value = readQuoted("'", "string literal", start);
      toks.push({ kind: "string", text: sql.slice(start, i), value, start, end: i });
      continue;
    }
    if (ch === '"') {
      const value = readQuoted('"', "quoted identifier", start);
      if (value === "") fail("empty quoted identifier", '""', start);
      toks.push({ kind: "qident", text: sql.slice(start, i), value, start, end: i });
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      while (i < sql.length && /[A-Za-z0-9_]/.test(sql[i]!)) i++;
      const text = sql.slice(start, i);
      toks.push({ kind: "ident", text, value: text.toLowerCase(), start, end: i });
      continue;
    }
    if (/[0-9]/.test(ch) || (ch === "." && /[0-9]/.test(sql[i + 1] ?? ""))) {
      const m = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(sql.slice(i));
      const text = m?.[0] ?? ch;
      i += text.length;
      if (i < sql.length && /[A-Za-z0-9_.]/.test(sql[i]!)) {
        let j = i;
        while (j < sql.length && /[A-Za-z0-9_.]/.test(sql[j]!)) j++;
        fail("malformed number (hex, binary and underscore forms are not accepted)", sql.slice(start, j), start);
      }
      toks.push({ kind: "number", text, value: text, start, end: i });
      continue;
    }
    if (ch === "(" || ch === ")" || ch === "," || ch === ".") {
      i++;
      const kind: TokKind = ch === "(" ? "lparen" : ch === ")" ? "rparen" : ch === "," ? "comma" : "dot";
      toks.push({ kind, text: ch, value: ch, start, end: i });
      continue;
    }
    if (OPERATOR_CHARS.includes(ch)) {
      while (i < sql.length && OPERATOR_CHARS.includes(sql[i]!)) i++;
      let run = sql.slice(start, i);
      if (run.includes("--") || run.includes("/*")) {
        const at = start + Math.max(run.indexOf("--"), run.indexOf("/*"));
        fail("comments are not allowed in a rule (they can hide the rest of the expression)", sql.slice(at, at + 2), at);
      }
      // As in the PostgreSQL/DuckDB lexer: a trailing + or - starts the next operand (`a>-1`).
      while (run.length > 1 && /[+-]$/.test(run) && !/[~!@#%^&|`?]/.test(run)) run = run.slice(0, -1);
      i = start + run.length;
      if (run === "`" || run.startsWith("`")) fail('backtick identifiers are not SQL; quote identifiers with double quotes ("name")', run, start);
      if (run.startsWith("->")) fail("'->' (lambda or JSON arrow) is not allowed in a rule", run, start);
      if (!ALLOWED_OPERATORS.has(run)) {
        fail(`operator '${run}' is not allowed; allowed operators: ${[...ALLOWED_OPERATORS].join(" ")}`, run, start);
      }
      toks.push({ kind: "op", text: run, value: run, start, end: i });
      continue;
    }
    if (ch === ";") fail("';' outside a string literal: a rule is one expression, not statements", ";", start);
    if (isDeceptive(ch)) fail(`invisible or bidirectional control character ${codePointLabel(ch)}`, ch, start);
    const cp = ch.codePointAt(0) ?? 0;
    if (cp > 0x7f) {
      const full = String.fromCodePoint(cp);
      fail(`non-ASCII character '${full}' (${codePointLabel(full)}) outside a string literal or quoted identifier`, full, start);
    }
    if (ch === "$") fail("parameters and dollar-quoted strings are not allowed", ch, start);
    if (ch === "[" || ch === "]" || ch === "{" || ch === "}") fail(`'${ch}' (list, struct and map literals) is not allowed in a rule`, ch, start);
    if (ch === "\\") fail("backslash outside a string literal", ch, start);
    fail(`character '${ch}' is not allowed in a rule`, ch, start);
  }
  return toks;
}

type Frame = "group" | "call" | "cast" | "type";

/**
 * Check a `sql` rule: one boolean expression over the row's fields, built only from literals,
 * column references, operators, expression keywords, casts and pure scalar functions.
 * Throws `RuleExpressionError` naming the offending token and what is allowed.
 */
export function checkRuleExpression(sql: string, options?: RuleExpressionOptions): void {
  analyzeRuleExpression(sql, options);
}

/** As `checkRuleExpression`, and returns the columns and functions the expression uses. */
export function analyzeRuleExpression(sql: string, options?: RuleExpressionOptions): RuleExpressionInfo {
  if (typeof sql !== "string") throw new RuleExpressionError(String(sql), "a rule expression must be a string");
  if (sql.trim() === "") throw new RuleExpressionError(sql, "empty expression");
  if (sql.length > MAX_LENGTH) throw new RuleExpressionError(sql.slice(0, 80) + "…", `expression longer than ${MAX_LENGTH} characters`);
  const toks = tokenize(sql);
  const fields = options?.fields && options.fields.length > 0 ? options.fields : undefined;
  const byLower = new Map<string, string>();
  for (const f of fields ?? []) byLower.set(f.toLowerCase(), f);

  const columns = new Set<string>();
  const functions = new Set<string>();
  const stack: Array<{ frame: Frame; sawAs?: boolean }> = [];
  const fail = (reason: string, t: Tok): never => {
    throw new RuleExpressionError(sql, reason, t.text, t.start);
  };
  const at = (k: number): Tok | undefined => toks[k];

  const columnRef = (t: Tok, name: string, quoted: boolean): void => {
    if (!fields) {
      columns.add(name);
      return;
    }
    const hit = byLower.get(name.toLowerCase());
    if (hit !== undefined) {
      columns.add(hit);
      return;
    }
    const guess = didYouMean(name, fields);
    const shown = quoted ? t.text : name;
    fail(
      `${shown} is not a field of this contract` +
        (guess !== undefined ? ` (did you mean ${guess}?)` : `; fields: ${fields.join(", ")}`),
      t,
    );
  };

  /** Consume a type name starting at k (after AS or ::); returns the index after it. */
  const typeName = (k: number, after: string): number => {
    const t = at(k);
    if (!t || t.kind !== "ident" || !TYPE_WORDS.has(t.value)) {
      const shown = t ? t.text : "end of expression";
      throw new RuleExpressionError(sql, `expected a SQL type name after ${after}, found ${shown}`, t?.text, t?.start);
    }
    k++;
    while (at(k)?.kind === "ident" && TYPE_CONTINUATIONS.has(at(k)!.value)) k++;
    if (at(k)?.kind === "lparen") {
      k++;
      for (;;) {
        const p = at(k);
        if (p?.kind !== "number") {
          throw new RuleExpressionError(sql, "type parameters must be numbers, e.g. DECIMAL(12, 2)", p?.text, p?.start);
        }
        k++;
        if (at(k)?.kind === "comma") {
          k++;
          continue;
        }
        if (at(k)?.kind === "rparen") {
          k++;
          break;
        }
        const q = at(k);
        throw new RuleExpressionError(sql, "expected ',' or ')' in type parameters", q?.text, q?.start);
      }
    }
    return k;
  };

  let k = 0;
  while (k < toks.length) {
    const t = toks[k]!;
    const prev = at(k - 1);
    const next = at(k + 1);
    switch (t.kind) {
      case "ident": {
        const name = t.value;
        if (prev?.kind === "dot") {
          // `x.field` (struct member) or `x.lower()` (method-call syntax): the name after the
          // dot is a member, never a column of the row; as a call it must be allowed like any other.
          if (next?.kind === "lparen") {
            checkFunction(t, name);
            functions.add(name);
            push("call", t);
            k += 2;
            continue;
          }
          k++;
          continue;
        }
        if (k === 0 && STATEMENT_WORDS.has(name)) {
          fail(`statements are not allowed (${t.text}); a rule is a boolean expression evaluated for each row, like a WHERE clause`, t);
        }
        if (EXPRESSION_KEYWORDS.has(name)) {
          // `IN` takes a list of values only: `x IN tbl` must never name anything else.
          if (name === "in" && next?.kind !== "lparen") fail("IN must be followed by a parenthesised list of values", next ?? t);
          // `NOT (…)`, `IN (…)`, `THEN (…)`: the parenthesis that follows is a group, not a call.
          k++;
          continue;
        }
        if (next?.kind === "lparen") {
          if (name === "cast" || name === "try_cast") {
            push("cast", t);
            k += 2;
            continue;
          }
          const inner = at(k + 2);
          if (name === "exists" || STATEMENT_WORDS.has(name) || (inner?.kind === "ident" && (STATEMENT_WORDS.has(inner.value) || inner.value === "from"))) {
            fail(`subqueries are not allowed (${t.text} (…))`, t);
          }
          checkFunction(t, name);
          functions.add(name);
          push("call", t);
          k += 2;
          continue;
        }
        if ((TYPED_LITERAL_WORDS.has(name) || TYPE_WORDS.has(name)) && next?.kind === "string") {
          // DATE '2024-01-01', TIMESTAMP '…', INTERVAL '1 day', INTERVAL '2' HOUR
          k += 2;
          if (name === "interval" && at(k)?.kind === "ident" && INTERVAL_UNITS.has(at(k)!.value)) k++;
          continue;
        }
        if (name === "interval" && next?.kind === "number") {
          const unit = at(k + 2);
          if (unit?.kind !== "ident" || !INTERVAL_UNITS.has(unit.value)) {
            fail("INTERVAL <number> must be followed by a unit such as DAY or HOUR", unit ?? t);
          }
          k += 3;
          continue;
        }
        if (name === "as") {
          const top = stack[stack.length - 1];
          if (!top || top.frame !== "cast" || top.sawAs) fail("AS is allowed only inside CAST(… AS type)", t);
          top!.sawAs = true;
          k = typeName(k + 1, "AS");
          continue;
        }
        if (name === "distinct") {
          // Only as `IS [NOT] DISTINCT FROM`, the null-safe comparison.
          const isBefore = prev?.kind === "ident" && (prev.value === "is" || (prev.value === "not" && at(k - 2)?.value === "is"));
          if (!isBefore || next?.kind !== "ident" || next.value !== "from") {
            fail("DISTINCT is allowed only in `IS [NOT] DISTINCT FROM`", t);
          }
          k += 2;
          continue;
        }
        if (name === "from") fail("FROM is not allowed: a rule reads only the current row (subqueries and table reads are refused)", t);
        if (CLOCK_WORDS.has(name)) {
          fail(`${t.text} reads the clock: a rule must give the same answer when a batch is replayed`, t);
        }
        if (FORBIDDEN_KEYWORDS.has(name)) {
          const hint = fields && byLower.has(name) ? `; it is also a field: write it quoted, "${byLower.get(name)}"` : "";
          const what = STATEMENT_WORDS.has(name) || name === "exists" ? "statements and subqueries are not allowed" : "it is not an expression keyword a rule may use";
          fail(`${t.text} is a reserved SQL word (${what})${hint}`, t);
        }
        if (name === "cast" || name === "try_cast") fail(`${t.text} must be followed by (`, t);
        // SQL reads `name 'text'` as a cast to a type called `name`: allow it only for real type names.
        if (next?.kind === "string") fail(`${t.text} '…' is not a typed literal; write CAST('…' AS type) with a SQL type`, t);
        calledMember(k);
        columnRef(t, t.text, false);
        k++;
        continue;
      }
      case "qident": {
        if (next?.kind === "lparen") fail(`quoted function names are not allowed (${t.text}(…)); call functions by their plain name`, t);
        if (next?.kind === "string") fail(`${t.text} '…' is not a typed literal; write CAST('…' AS type) with a SQL type`, t);
        if (prev?.kind !== "dot") {
          calledMember(k);
          columnRef(t, t.value, true);
        }
        k++;
        continue;
      }
      case "string":
      case "number":
        k++;
        continue;
      case "op": {
        if (t.value === "::") {
          k = typeName(k + 1, "::");
          continue;
        }
        k++;
        continue;
      }
      case "lparen": {
        if (next?.kind === "ident" && (STATEMENT_WORDS.has(next.value) || next.value === "from")) {
          fail(`subqueries are not allowed (( ${next.text} …)`, next);
        }
        push("group", t);
        k++;
        continue;
      }
      case "rparen": {
        if (stack.length === 0) fail("unbalanced ')'", t);
        stack.pop();
        k++;
        continue;
      }
      case "comma": {
        if (stack.length === 0) fail("',' outside parentheses: a rule is one expression (combine conditions with AND / OR)", t);
        k++;
        continue;
      }
      case "dot": {
        const okBefore = prev && (prev.kind === "ident" || prev.kind === "qident" || prev.kind === "rparen" || prev.kind === "string");
        const okAfter = next && (next.kind === "ident" || next.kind === "qident");
        if (!okBefore || !okAfter) fail("'.' must join a value and a member name (struct.field or value.function())", t);
        k++;
        continue;
      }
    }
  }
  if (stack.length > 0) {
    const last = toks[toks.length - 1]!;
    throw new RuleExpressionError(sql, "unbalanced '(': missing ')'", last.text, last.end);
  }
  return { columns: [...columns], functions: [...functions] };

  function push(frame: Frame, t: Tok): void {
    stack.push({ frame });
    if (stack.length > MAX_DEPTH) fail(`parentheses nested deeper than ${MAX_DEPTH}`, t);
  }

  /** `a.b.fn(…)`: judge the call before the qualifier, so `main.read_csv()` is reported as a file read. */
  function calledMember(k0: number): void {
    let j = k0 + 1;
    while (at(j)?.kind === "dot" && (at(j + 1)?.kind === "ident" || at(j + 1)?.kind === "qident")) j += 2;
    const last = at(j - 1);
    if (j > k0 + 1 && last?.kind === "ident" && at(j)?.kind === "lparen") checkFunction(last, last.value);
  }

  function checkFunction(t: Tok, name: string): void {
    if (ALLOWED_FUNCTIONS.has(name)) return;
    const danger = DANGEROUS.get(name) ??
      (name.startsWith("read_") || name.endsWith("_scan") || name.endsWith("_attach") ? "reads files or databases" : undefined) ??
      (name.startsWith("duckdb_") || name.startsWith("pragma_") ? "reads database metadata" : undefined);
    if (danger !== undefined) {
      fail(`function ${name}() is not allowed: it ${danger}. Rules may call only pure scalar functions (lower, length, coalesce, regexp_matches, date_part, …)`, t);
    }
    const guess = didYouMean(name, ALLOWED_FUNCTIONS);
    fail(
      `function ${name}() is not allowed` +
        (guess !== undefined ? ` (did you mean ${guess}?)` : "") +
        ". Rules may call only pure scalar functions (lower, length, coalesce, regexp_matches, date_part, …; see docs/contracts.md)",
      t,
    );
  }
}
