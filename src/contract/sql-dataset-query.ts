/**
 * A dataset `sql` rule is a query that gives one value over the batch's good rows, compared with
 * `must_be_between` / `must_be_less_than` / `must_be_greater_than`, as in the Python package:
 *
 *     sql: "SELECT count(*) FROM {dataset} WHERE amount < 0"
 *     must_be_less_than: 1
 *
 * Only one shape is accepted — `SELECT <expression> FROM <the batch> [WHERE <condition>]` — so
 * every engine can run it over its own good rows and nothing else can be read: the expression may
 * call aggregates besides the functions row rules may call, the condition is a row rule's
 * expression, and the table is `{dataset}`, `source` or the contract's dataset name.
 */
import { RuleExpressionError } from "./rule-expression-error.js";
import { analyzeRuleExpression } from "./sql-guard.js";
import { tokenize, type Tok } from "./sql-tokenize.js";

export interface DatasetQuery {
  /** The one value, an expression over the good rows (aggregates allowed). */
  select: string;
  /** Rows counted by `select`, a per-row condition; absent: every good row. */
  where?: string;
  /** Fields the query reads, spelt as declared. */
  columns: string[];
}

export interface DatasetQueryOptions {
  fields?: readonly string[];
  /** The contract's dataset name: `FROM <dataset>` names the batch too. */
  dataset?: string;
}

const SHAPE = "SELECT <aggregate expression> FROM {dataset} [WHERE <condition>]";
/** Stands for `{dataset}` while tokenizing (braces are not SQL). */
const PLACEHOLDER = "__lakelogic_dataset__";

/** Split and check a dataset `sql` rule; throws `RuleExpressionError` naming what is refused. */
export function parseDatasetQuery(sql: string, options: DatasetQueryOptions = {}): DatasetQuery {
  // A trailing ';' ends the one statement (the Python package runs the text as written).
  const text = sql.replace(/\{\s*dataset\s*\}/gi, PLACEHOLDER).replace(/(\s*;)+\s*$/, "");
  const toks = tokenize(text);
  const fail = (reason: string, t?: Tok): never => {
    throw new RuleExpressionError(sql, `${reason}; a dataset sql rule is one query: ${SHAPE}`, t?.text, t?.start);
  };
  const first = toks[0];
  if (first?.kind !== "ident" || first.value !== "select") fail("it must start with SELECT", first);

  const end = toks.length;
  const from = topLevel(toks, 1, end, (t) => t.kind === "ident" && t.value === "from");
  if (from === undefined) fail("FROM is missing");
  const table = toks[from! + 1];
  const names = new Set([PLACEHOLDER, "source", ...(options.dataset ? [options.dataset.toLowerCase()] : [])]);
  const tableName = table?.kind === "qident" ? table.value.toLowerCase() : table?.kind === "ident" ? table.value : undefined;
  if (tableName === undefined || !names.has(tableName)) fail("it may read only the batch's good rows, FROM {dataset}", table ?? toks[from!]);

  const after = toks[from! + 2];
  let where: string | undefined;
  if (after !== undefined && from! + 2 < end) {
    if (after.kind !== "ident" || after.value !== "where") fail(`${after.text} is not allowed here (no joins, grouping, ordering or limits)`, after);
    const stop = toks[end - 1]!;
    where = text.slice(toks[from! + 3]?.start ?? after.end, stop.end).trim();
    if (where === "") fail("WHERE needs a condition", after);
  }
  const select = text.slice(first!.end, toks[from!]!.start).trim();
  if (select === "") fail("SELECT needs one expression", first);
  const comma = topLevel(toks, 1, from!, (t) => t.kind === "comma");
  if (comma !== undefined) fail("SELECT gives one value: one expression, without commas", toks[comma]);

  const fields = options.fields;
  const columns = new Set(analyzeRuleExpression(select, { fields, aggregates: true }).columns);
  if (where !== undefined) analyzeRuleExpression(where, { fields }).columns.forEach((c) => columns.add(c));
  return { select, ...(where !== undefined ? { where } : {}), columns: [...columns] };
}

/** The index of the first token outside parentheses between `from` and `end` that `match`es, or undefined. */
function topLevel(toks: readonly Tok[], from: number, end: number, match: (t: Tok) => boolean): number | undefined {
  let depth = 0;
  for (let k = from; k < end; k++) {
    const t = toks[k]!;
    if (t.kind === "lparen") depth++;
    else if (t.kind === "rparen") depth--;
    else if (depth === 0 && match(t)) return k;
  }
  return undefined;
}
