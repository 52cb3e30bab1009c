/**
 * The rule-expression lexer: splits a rule the way DuckDB's lexer would, and refuses on the spot
 * whatever can never be part of a rule (comments, statement separators, odd characters).
 */
import { RuleExpressionError } from "./rule-expression-error.js";
import { BUILDS_STRINGS } from "./sql-words.js";

export type TokKind = "ident" | "qident" | "string" | "number" | "op" | "lparen" | "rparen" | "comma" | "dot";
export interface Tok {
  kind: TokKind;
  /** Source text. */
  text: string;
  /** ident: lower-cased; qident: unescaped name; string: unescaped value. */
  value: string;
  start: number;
  end: number;
}

const ALLOWED_OPERATORS = new Set(["=", "==", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "::"]);
/** Characters DuckDB's lexer glues into one operator token. */
const OPERATOR_CHARS = "+-*/<>=~!@#%^&|`?:";

function codePointLabel(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Invisible and bidirectional-control characters make a rule read differently from how it runs. */
function isDeceptive(ch: string): boolean {
  // eslint-disable-next-line no-misleading-character-class -- a list of single code points, not combined characters
  return /[\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0]/u.test(ch);
}

/** Split a rule into tokens; throws `RuleExpressionError` at the first character a rule may not hold. */
export function tokenize(sql: string): Tok[] {
  return new Lexer(sql).run();
}

class Lexer {
  private readonly toks: Tok[] = [];
  private i = 0;

  constructor(private readonly sql: string) {}

  run(): Tok[] {
    const sql = this.sql;
    while (this.i < sql.length) {
      const ch = sql[this.i]!;
      if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") this.i++;
      else if (ch === "'") this.stringLiteral();
      else if (ch === '"') this.quotedIdentifier();
      else if (/[A-Za-z_]/.test(ch)) this.word();
      else if (/[0-9]/.test(ch) || (ch === "." && /[0-9]/.test(sql[this.i + 1] ?? ""))) this.number();
      else if (ch === "(" || ch === ")" || ch === "," || ch === ".") this.punctuation(ch);
      else if (OPERATOR_CHARS.includes(ch)) this.operator();
      else this.refuse(ch);
    }
    return this.toks;
  }

  private fail(reason: string, token: string, offset: number): never {
    throw new RuleExpressionError(this.sql, reason, token, offset);
  }

  /** Record the token from `start` to the current position. */
  private push(kind: TokKind, value: string, start: number): void {
    this.toks.push({ kind, text: this.sql.slice(start, this.i), value, start, end: this.i });
  }

  /** From the opening quote at the current position: the unescaped text up to its closing quote (doubled = one). */
  private readQuoted(quote: string, what: string, start: number): string {
    const sql = this.sql;
    let value = "";
    this.i++;
    for (;;) {
      if (this.i >= sql.length) this.fail(`unterminated ${what}`, sql.slice(start, start + 20), start);
      const c = sql[this.i]!;
      if (isDeceptive(c)) this.fail(`invisible or bidirectional control character ${codePointLabel(c)} inside a ${what}`, c, this.i);
      if (c === quote) {
        if (sql[this.i + 1] === quote) {
          value += quote;
          this.i += 2;
          continue;
        }
        this.i++;
        return value;
      }
      value += c;
      this.i++;
    }
  }

  private stringLiteral(): void {
    const start = this.i;
    // An identifier glued to the quote makes a prefixed literal (E'…' escapes, X'…' blobs):
    // the lexer would read backslashes differently from us, so refuse the form outright.
    const prev = this.toks[this.toks.length - 1];
    if (prev && (prev.kind === "ident" || prev.kind === "qident") && prev.end === start) {
      this.fail(`prefixed string literals such as ${prev.text}'…' are not allowed; write a plain '…' literal`, prev.text, prev.start);
    }
    const value = this.readQuoted("'", "string literal", start);
    this.push("string", value, start);
  }

  private quotedIdentifier(): void {
    const start = this.i;
    const value = this.readQuoted('"', "quoted identifier", start);
    if (value === "") this.fail("empty quoted identifier", '""', start);
    this.push("qident", value, start);
  }

  private word(): void {
    const start = this.i;
    while (this.i < this.sql.length && /[A-Za-z0-9_]/.test(this.sql[this.i]!)) this.i++;
    this.push("ident", this.sql.slice(start, this.i).toLowerCase(), start);
  }

  private number(): void {
    const sql = this.sql;
    const start = this.i;
    const m = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(sql.slice(start));
    const text = m?.[0] ?? sql[start]!;
    this.i += text.length;
    if (this.i < sql.length && /[A-Za-z0-9_.]/.test(sql[this.i]!)) {
      let j = this.i;
      while (j < sql.length && /[A-Za-z0-9_.]/.test(sql[j]!)) j++;
      this.fail("malformed number (hex, binary and underscore forms are not accepted)", sql.slice(start, j), start);
    }
    this.push("number", text, start);
  }

  private punctuation(ch: "(" | ")" | "," | "."): void {
    const start = this.i;
    this.i++;
    const kind: TokKind = ch === "(" ? "lparen" : ch === ")" ? "rparen" : ch === "," ? "comma" : "dot";
    this.push(kind, ch, start);
  }

  private operator(): void {
    const sql = this.sql;
    const start = this.i;
    while (this.i < sql.length && OPERATOR_CHARS.includes(sql[this.i]!)) this.i++;
    let run = sql.slice(start, this.i);
    if (run.includes("--") || run.includes("/*")) {
      const at = start + Math.max(run.indexOf("--"), run.indexOf("/*"));
      this.fail("comments are not allowed in a rule (they can hide the rest of the expression)", sql.slice(at, at + 2), at);
    }
    // As in the PostgreSQL/DuckDB lexer: a trailing + or - starts the next operand (`a>-1`).
    while (run.length > 1 && /[+-]$/.test(run) && !/[~!@#%^&|`?]/.test(run)) run = run.slice(0, -1);
    this.i = start + run.length;
    if (run === "`" || run.startsWith("`")) this.fail('backtick identifiers are not SQL; quote identifiers with double quotes ("name")', run, start);
    if (run.startsWith("->")) this.fail("'->' (lambda or JSON arrow) is not allowed in a rule", run, start);
    if (run === "||") this.fail(`the || operator is not allowed: it ${BUILDS_STRINGS}`, run, start);
    if (!ALLOWED_OPERATORS.has(run)) {
      this.fail(`operator '${run}' is not allowed; allowed operators: ${[...ALLOWED_OPERATORS].join(" ")}`, run, start);
    }
    this.push("op", run, start);
  }

  /** Any other character: say why it cannot be part of a rule. */
  private refuse(ch: string): never {
    const start = this.i;
    if (ch === ";") this.fail("';' outside a string literal: a rule is one expression, not statements", ";", start);
    if (isDeceptive(ch)) this.fail(`invisible or bidirectional control character ${codePointLabel(ch)}`, ch, start);
    const cp = ch.codePointAt(0) ?? 0;
    if (cp > 0x7f) {
      const full = String.fromCodePoint(cp);
      this.fail(`non-ASCII character '${full}' (${codePointLabel(full)}) outside a string literal or quoted identifier`, full, start);
    }
    if (ch === "$") this.fail("parameters and dollar-quoted strings are not allowed", ch, start);
    if (ch === "[" || ch === "]" || ch === "{" || ch === "}") this.fail(`'${ch}' (list, struct and map literals) is not allowed in a rule`, ch, start);
    if (ch === "\\") this.fail("backslash outside a string literal", ch, start);
    this.fail(`character '${ch}' is not allowed in a rule`, ch, start);
  }
}
