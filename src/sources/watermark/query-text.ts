import { ConfigError } from "../../errors.js";

/** The alias of a user's SELECT inside the keyset queries. */
export const QUERY_ALIAS = "lakelogic_rows";

/**
 * A user's SELECT as the FROM item of the keyset queries: `(\n<query>\n) AS "lakelogic_rows"`.
 * The query is checked to be one statement that stays inside those parentheses: it starts with
 * SELECT, WITH, VALUES or TABLE; it closes no parenthesis it did not open; a `;` may only end it;
 * it uses no `$n` parameters (the keyset queries own them). Quotes, dollar quotes and comments
 * are skipped while checking, and the newline before `)` ends a trailing `--` comment.
 */
export function subqueryOf(query: string, option = "query"): string {
  const body = checkedBody(query, option);
  return `(\n${body}\n) AS "${QUERY_ALIAS}"`;
}

function checkedBody(query: string, option: string): string {
  const fail = (what: string): never => {
    throw new ConfigError(option, `${what}. Write one SELECT (or WITH … SELECT) whose rows have the watermark and tie-breaker columns; it is paged as a subquery`);
  };
  const first = /^(?:\s|--[^\n]*\n|\/\*[\s\S]*?\*\/|\()*([A-Za-z]+)/.exec(query)?.[1]?.toUpperCase();
  if (!first || !["SELECT", "WITH", "VALUES", "TABLE"].includes(first)) fail("expected a SELECT statement");
  let depth = 0;
  let end: number | undefined;
  let i = 0;
  while (i < query.length) {
    const c = query[i]!;
    const skipped = skip(query, i);
    if (skipped === -1) fail("has an unterminated quote or comment");
    if (skipped > i) {
      i = skipped;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (end !== undefined && c !== ";") fail("must be one statement: text follows a `;`");
    if (c === ";") end ??= i;
    else if (c === "(") depth++;
    else if (c === ")" && --depth < 0) fail("closes a parenthesis it did not open");
    else if (c === "$" && /[0-9]/.test(query[i + 1] ?? "")) fail(`uses the parameter ${/^\$[0-9]+/.exec(query.slice(i))![0]}; parameters are not available, write the value`);
    i++;
  }
  if (depth > 0) fail("leaves a parenthesis open");
  return query.slice(0, end).trimEnd();
}

/** The index after a quoted string, quoted identifier, dollar quote or comment starting at `i`; `i` if none starts there; -1 if it never ends. */
function skip(text: string, i: number): number {
  const c = text[i]!;
  const rest = text.slice(i);
  if (c === "-" && text[i + 1] === "-") {
    const nl = text.indexOf("\n", i);
    return nl === -1 ? text.length : nl + 1;
  }
  if (c === "/" && text[i + 1] === "*") return blockCommentEnd(text, i);
  if (c === "'") return quoteEnd(text, i, "'", /[eE]/.test(text[i - 1] ?? "") && !/[A-Za-z0-9_]/.test(text[i - 2] ?? ""));
  if (c === '"') return quoteEnd(text, i, '"', false);
  if (c === "$" && !/[A-Za-z0-9_]/.test(text[i - 1] ?? "")) {
    const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(rest)?.[0];
    if (tag === undefined) return i;
    const close = text.indexOf(tag, i + tag.length);
    return close === -1 ? -1 : close + tag.length;
  }
  return i;
}

/** PostgreSQL block comments nest. */
function blockCommentEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length - 1; i++) {
    if (text[i] === "/" && text[i + 1] === "*") {
      depth++;
      i++;
    } else if (text[i] === "*" && text[i + 1] === "/") {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** `'it''s'`, `"a""b"`, and in an E'' string also `\'`. */
function quoteEnd(text: string, start: number, quote: string, backslashEscapes: boolean): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (backslashEscapes && c === "\\") i++;
    else if (c === quote) {
      if (text[i + 1] === quote) i++;
      else return i + 1;
    }
  }
  return -1;
}
