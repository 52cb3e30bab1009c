/**
 * "Rules are expressions, never statements."
 *
 * A `sql` rule is pasted into the engine's query as a per-row boolean expression, so a contract
 * author (or whoever can edit the YAML) must not be able to run statements, read files, reach the
 * network or the environment through it. Instead of hunting for bad things we tokenize the rule
 * the way DuckDB's lexer would and accept only an allowlist: identifiers, literals, a few
 * operators, expression keywords, SQL type names, and calls to pure scalar functions.
 */
import { RuleExpressionError } from "./rule-expression-error.js";
import { tokenize, type Tok } from "./sql-tokenize.js";
import {
  AGGREGATE_FUNCTIONS,
  ALLOWED_FUNCTIONS,
  CLOCK_WORDS,
  EXPRESSION_KEYWORDS,
  FORBIDDEN_KEYWORDS,
  INTERVAL_UNITS,
  JSON_EXTRACT_FUNCTIONS,
  STATEMENT_WORDS,
  TYPED_LITERAL_WORDS,
  TYPE_CONTINUATIONS,
  TYPE_WORDS,
  functionDanger,
} from "./sql-words.js";
import { didYouMean } from "./suggest.js";

export { RuleExpressionError } from "./rule-expression-error.js";
export { ALLOWED_FUNCTIONS } from "./sql-words.js";

export interface RuleExpressionOptions {
  /**
   * Field names of the contract. When given (and non-empty) every column reference must name one
   * of them, compared case-insensitively as DuckDB does for quoted and unquoted identifiers alike.
   */
  fields?: readonly string[];
  /**
   * Also accept aggregate calls (`count(*)`, `count(DISTINCT x)`, `avg(x)`, …): the SELECT list of
   * a dataset `sql` rule, which judges a batch rather than a row.
   */
  aggregates?: boolean;
}

export interface RuleExpressionInfo {
  /** Column references, spelt as the contract's field when `fields` was given, else as written. */
  columns: string[];
  /** Functions called, lower-cased. */
  functions: string[];
}

const MAX_LENGTH = 10_000;
const MAX_DEPTH = 64;

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
  const fields = options?.fields && options.fields.length > 0 ? options.fields : undefined;
  const walker = new ExpressionWalker(sql, tokenize(sql), fields, options?.aggregates === true);
  walker.walk();
  return { columns: [...walker.columns], functions: [...walker.functions] };
}

/**
 * Walks the tokens once, left to right, accepting each only in a position where it cannot start
 * a statement, a subquery or a call outside the allowlist. Each step returns the next index.
 */
class ExpressionWalker {
  readonly columns = new Set<string>();
  readonly functions = new Set<string>();
  private readonly stack: Array<{ frame: Frame; sawAs?: boolean }> = [];
  private readonly byLower = new Map<string, string>();

  constructor(
    private readonly sql: string,
    private readonly toks: Tok[],
    private readonly fields: readonly string[] | undefined,
    private readonly aggregates = false,
  ) {
    for (const f of fields ?? []) this.byLower.set(f.toLowerCase(), f);
  }

  walk(): void {
    let k = 0;
    while (k < this.toks.length) k = this.step(k);
    if (this.stack.length > 0) {
      const last = this.toks[this.toks.length - 1]!;
      throw new RuleExpressionError(this.sql, "unbalanced '(': missing ')'", last.text, last.end);
    }
  }

  private at(k: number): Tok | undefined {
    return this.toks[k];
  }

  private fail(reason: string, t: Tok): never {
    throw new RuleExpressionError(this.sql, reason, t.text, t.start);
  }

  private step(k: number): number {
    const t = this.toks[k]!;
    switch (t.kind) {
      case "ident":
        return this.identifier(k);
      case "qident":
        return this.quotedIdentifier(k);
      case "string":
      case "number":
        return k + 1;
      case "op":
        return t.value === "::" ? this.typeName(k + 1, "::") : k + 1;
      case "lparen":
        return this.openParen(k);
      case "rparen":
        if (this.stack.length === 0) this.fail("unbalanced ')'", t);
        this.stack.pop();
        return k + 1;
      case "comma":
        if (this.stack.length === 0) this.fail("',' outside parentheses: a rule is one expression (combine conditions with AND / OR)", t);
        return k + 1;
      case "dot":
        return this.dot(k);
    }
  }

  /** An unquoted word: a keyword, a call, a typed literal, a cast's AS, or a column reference. */
  private identifier(k: number): number {
    const t = this.toks[k]!;
    const name = t.value;
    const next = this.at(k + 1);
    if (this.at(k - 1)?.kind === "dot") return this.member(k);
    if (k === 0 && STATEMENT_WORDS.has(name)) {
      this.fail(`statements are not allowed (${t.text}); a rule is a boolean expression evaluated for each row, like a WHERE clause`, t);
    }
    if (EXPRESSION_KEYWORDS.has(name)) {
      // `IN` takes a list of values only: `x IN tbl` must never name anything else.
      if (name === "in" && next?.kind !== "lparen") this.fail("IN must be followed by a parenthesised list of values", next ?? t);
      // `NOT (…)`, `IN (…)`, `THEN (…)`: the parenthesis that follows is a group, not a call.
      return k + 1;
    }
    if (next?.kind === "lparen") return this.call(k);
    const literal = this.typedLiteral(k);
    if (literal !== undefined) return literal;
    if (name === "as") return this.castAs(k);
    if (name === "distinct") return this.distinctFrom(k);
    this.refuseWord(t, next);
    this.calledMember(k);
    this.columnRef(t, t.text, false);
    return k + 1;
  }

  /**
   * The name after a dot: `x.field` (struct member) or `x.lower()` (method-call syntax). It is a
   * member, never a column of the row; as a call it must be allowed like any other.
   */
  private member(k: number): number {
    const t = this.toks[k]!;
    if (this.at(k + 1)?.kind !== "lparen") return k + 1;
    this.checkFunction(t, t.value);
    // `x.json_extract('$.a')`, or `schema.json_extract(x, '$.a')`: every argument may be the path.
    this.checkJsonPath(t, k + 1, 0);
    this.functions.add(t.value);
    this.push("call", t);
    return k + 2;
  }

  /** `name(`: a cast, a call of an allowed function, or a refused subquery. */
  private call(k: number): number {
    const t = this.toks[k]!;
    const name = t.value;
    if (name === "cast" || name === "try_cast") {
      this.push("cast", t);
      return k + 2;
    }
    const inner = this.at(k + 2);
    if (name === "exists" || STATEMENT_WORDS.has(name) || (inner?.kind === "ident" && (STATEMENT_WORDS.has(inner.value) || inner.value === "from"))) {
      this.fail(`subqueries are not allowed (${t.text} (…))`, t);
    }
    this.checkFunction(t, name);
    this.checkJsonPath(t, k + 1, 1);
    this.functions.add(name);
    this.push("call", t);
    return k + 2;
  }

  /**
   * `json_extract(json, path)`: a recursive path ('$..x', '$.**') returns every nested value, each
   * a copy of part of the document, so the result grows with size × depth. The path must be a
   * string literal (a path read from the row could be anything) without recursion.
   */
  private checkJsonPath(t: Tok, open: number, firstPath: number): void {
    if (!JSON_EXTRACT_FUNCTIONS.has(t.value)) return;
    const paths = this.argumentsAt(open).slice(firstPath);
    const literal = `function ${t.value}() needs its path as a string literal such as '$.a.b' or '$.items[0]'`;
    const why = "; a rule is a boolean check, and a path taken from the row could be recursive and return a copy of the document per match";
    if (paths.length === 0) this.fail(literal + why, t);
    for (const arg of paths) {
      const tok = arg[0];
      if (arg.length !== 1 || tok?.kind !== "string") this.fail(literal + why, tok ?? t);
      if (tok.value.includes("..") || tok.value.includes("**")) {
        this.fail(
          `function ${t.value}() is not allowed with the recursive path '${tok.value}': it returns a copy of the document per nested match, ` +
            "far larger than the row; a rule is a boolean check, so name one value ('$.a.b', '$.items[0]')",
          tok,
        );
      }
    }
  }

  /** The top-level arguments of the call whose '(' is at `open`, as token lists. */
  private argumentsAt(open: number): Tok[][] {
    const args: Tok[][] = [];
    let current: Tok[] = [];
    let depth = 0;
    for (let j = open + 1; j < this.toks.length; j++) {
      const tok = this.toks[j]!;
      if (tok.kind === "rparen" && depth === 0) break;
      if (tok.kind === "comma" && depth === 0) {
        args.push(current);
        current = [];
        continue;
      }
      if (tok.kind === "lparen") depth++;
      if (tok.kind === "rparen") depth--;
      current.push(tok);
    }
    if (current.length > 0 || args.length > 0) args.push(current);
    return args;
  }

  /** DATE '2024-01-01', TIMESTAMP '…', INTERVAL '1 day', INTERVAL '2' HOUR, INTERVAL 2 HOUR; else undefined. */
  private typedLiteral(k: number): number | undefined {
    const t = this.toks[k]!;
    const name = t.value;
    const next = this.at(k + 1);
    if ((TYPED_LITERAL_WORDS.has(name) || TYPE_WORDS.has(name)) && next?.kind === "string") {
      const after = this.at(k + 2);
      if (name === "interval" && after?.kind === "ident" && INTERVAL_UNITS.has(after.value)) return k + 3;
      return k + 2;
    }
    if (name === "interval" && next?.kind === "number") {
      const unit = this.at(k + 2);
      if (unit?.kind !== "ident" || !INTERVAL_UNITS.has(unit.value)) {
        this.fail("INTERVAL <number> must be followed by a unit such as DAY or HOUR", unit ?? t);
      }
      return k + 3;
    }
    return undefined;
  }

  private castAs(k: number): number {
    const top = this.stack[this.stack.length - 1];
    if (!top || top.frame !== "cast" || top.sawAs) this.fail("AS is allowed only inside CAST(… AS type)", this.toks[k]!);
    top.sawAs = true;
    return this.typeName(k + 1, "AS");
  }

  /** DISTINCT only as `IS [NOT] DISTINCT FROM`, the null-safe comparison, or first in an aggregate's call. */
  private distinctFrom(k: number): number {
    const prev = this.at(k - 1);
    const next = this.at(k + 1);
    const fn = this.at(k - 2);
    if (this.aggregates && prev?.kind === "lparen" && fn?.kind === "ident" && AGGREGATE_FUNCTIONS.has(fn.value)) return k + 1;
    const isBefore = prev?.kind === "ident" && (prev.value === "is" || (prev.value === "not" && this.at(k - 2)?.value === "is"));
    if (!isBefore || next?.kind !== "ident" || next.value !== "from") {
      this.fail("DISTINCT is allowed only in `IS [NOT] DISTINCT FROM`", this.toks[k]!);
    }
    return k + 2;
  }

  /** Words that would otherwise read as a column reference but are SQL a rule may not use there. */
  private refuseWord(t: Tok, next: Tok | undefined): void {
    const name = t.value;
    if (name === "from") this.fail("FROM is not allowed: a rule reads only the current row (subqueries and table reads are refused)", t);
    if (CLOCK_WORDS.has(name)) {
      this.fail(`${t.text} reads the clock: a rule must give the same answer when a batch is replayed`, t);
    }
    if (FORBIDDEN_KEYWORDS.has(name)) {
      const hint = this.fields && this.byLower.has(name) ? `; it is also a field: write it quoted, "${this.byLower.get(name)}"` : "";
      const what = STATEMENT_WORDS.has(name) || name === "exists" ? "statements and subqueries are not allowed" : "it is not an expression keyword a rule may use";
      this.fail(`${t.text} is a reserved SQL word (${what})${hint}`, t);
    }
    if (name === "cast" || name === "try_cast") this.fail(`${t.text} must be followed by (`, t);
    // SQL reads `name 'text'` as a cast to a type called `name`: allow it only for real type names.
    if (next?.kind === "string") this.fail(`${t.text} '…' is not a typed literal; write CAST('…' AS type) with a SQL type`, t);
  }

  private quotedIdentifier(k: number): number {
    const t = this.toks[k]!;
    const next = this.at(k + 1);
    if (next?.kind === "lparen") this.fail(`quoted function names are not allowed (${t.text}(…)); call functions by their plain name`, t);
    if (next?.kind === "string") this.fail(`${t.text} '…' is not a typed literal; write CAST('…' AS type) with a SQL type`, t);
    if (this.at(k - 1)?.kind !== "dot") {
      this.calledMember(k);
      this.columnRef(t, t.value, true);
    }
    return k + 1;
  }

  private openParen(k: number): number {
    const next = this.at(k + 1);
    if (next?.kind === "ident" && (STATEMENT_WORDS.has(next.value) || next.value === "from")) {
      this.fail(`subqueries are not allowed (( ${next.text} …)`, next);
    }
    this.push("group", this.toks[k]!);
    return k + 1;
  }

  private dot(k: number): number {
    const prev = this.at(k - 1);
    const next = this.at(k + 1);
    const okBefore = prev && (prev.kind === "ident" || prev.kind === "qident" || prev.kind === "rparen" || prev.kind === "string");
    const okAfter = next && (next.kind === "ident" || next.kind === "qident");
    if (!okBefore || !okAfter) this.fail("'.' must join a value and a member name (struct.field or value.function())", this.toks[k]!);
    return k + 1;
  }

  /** Consume a type name starting at k (after AS or ::); returns the index after it. */
  private typeName(k: number, after: string): number {
    const t = this.at(k);
    if (!t || t.kind !== "ident" || !TYPE_WORDS.has(t.value)) {
      const shown = t ? t.text : "end of expression";
      throw new RuleExpressionError(this.sql, `expected a SQL type name after ${after}, found ${shown}`, t?.text, t?.start);
    }
    k++;
    while (this.at(k)?.kind === "ident" && TYPE_CONTINUATIONS.has(this.at(k)!.value)) k++;
    return this.at(k)?.kind === "lparen" ? this.typeParameters(k + 1) : k;
  }

  /** `(12, 2)` after a type name, from just past the `(`; returns the index after the `)`. */
  private typeParameters(k: number): number {
    for (;;) {
      const p = this.at(k);
      if (p?.kind !== "number") {
        throw new RuleExpressionError(this.sql, "type parameters must be numbers, e.g. DECIMAL(12, 2)", p?.text, p?.start);
      }
      k++;
      if (this.at(k)?.kind === "comma") {
        k++;
        continue;
      }
      if (this.at(k)?.kind === "rparen") return k + 1;
      const q = this.at(k);
      throw new RuleExpressionError(this.sql, "expected ',' or ')' in type parameters", q?.text, q?.start);
    }
  }

  private columnRef(t: Tok, name: string, quoted: boolean): void {
    if (!this.fields) {
      this.columns.add(name);
      return;
    }
    const hit = this.byLower.get(name.toLowerCase());
    if (hit !== undefined) {
      this.columns.add(hit);
      return;
    }
    const guess = didYouMean(name, this.fields);
    const shown = quoted ? t.text : name;
    this.fail(
      `${shown} is not a field of this contract` +
        (guess !== undefined ? ` (did you mean ${guess}?)` : `; fields: ${this.fields.join(", ")}`),
      t,
    );
  }

  private push(frame: Frame, t: Tok): void {
    this.stack.push({ frame });
    if (this.stack.length > MAX_DEPTH) this.fail(`parentheses nested deeper than ${MAX_DEPTH}`, t);
  }

  /** `a.b.fn(…)`: judge the call before the qualifier, so `main.read_csv()` is reported as a file read. */
  private calledMember(k0: number): void {
    let j = k0 + 1;
    while (this.at(j)?.kind === "dot" && (this.at(j + 1)?.kind === "ident" || this.at(j + 1)?.kind === "qident")) j += 2;
    const last = this.at(j - 1);
    if (j > k0 + 1 && last?.kind === "ident" && this.at(j)?.kind === "lparen") {
      this.checkFunction(last, last.value);
      this.checkJsonPath(last, j, 0);
    }
  }

  private checkFunction(t: Tok, name: string): void {
    if (ALLOWED_FUNCTIONS.has(name)) return;
    if (this.aggregates && AGGREGATE_FUNCTIONS.has(name)) return;
    const danger = functionDanger(name);
    if (danger !== undefined) {
      this.fail(`function ${name}() is not allowed: it ${danger}. Rules may call only pure scalar functions (lower, length, coalesce, regexp_matches, date_part, …)`, t);
    }
    const guess = didYouMean(name, ALLOWED_FUNCTIONS);
    this.fail(
      `function ${name}() is not allowed` +
        (guess !== undefined ? ` (did you mean ${guess}?)` : "") +
        ". Rules may call only pure scalar functions (lower, length, coalesce, regexp_matches, date_part, …; see docs/contracts.md)",
      t,
    );
  }
}
