/**
 * A contract's `sql` rules, parsed and bound by DuckDB — the dialect they are written in — over
 * the contract's fields typed as the engine types them, before any record is read. A rule that
 * does not parse (`duration_ms >= 0 AND`), calls a function with the wrong argument types, or
 * compares text with a number is refused at its `sql` key with DuckDB's message, instead of
 * failing the run on the engine's generated statement.
 *
 * DuckDB's API is asynchronous and normalising is not, so this is a step of its own:
 * `loadContract`, StreamSink and lint run it. DuckDB is loaded only for a contract with sql rules.
 */
import { quoteIdent } from "../util/sql-text.js";
import type { DuckDBConnection } from "../util/duckdb.js";
import { ContractError, type ContractProblem } from "./errors.js";
import { duckdbTypeOf } from "./field-types.js";
import { RuleExpressionError } from "./rule-expression-error.js";
import { analyzeRuleExpression } from "./sql-guard.js";
import type { Contract, FieldSpec, SourceLoc } from "./types.js";

/** A row rule as every engine spells it: its expression as a boolean, NULL failing. */
export const rowRuleSql = (sql: string): string => `coalesce(CAST((${sql}) AS BOOLEAN), FALSE)`;

/** A dataset sql rule's one value, as every engine spells it. */
export const datasetValueSql = (select: string): string => `CAST((${select}) AS DOUBLE)`;

const ROW_EXPECTED = "a boolean SQL expression over the contract's fields that DuckDB parses and binds (see docs/contracts.md, Rule expressions)";
const DATASET_EXPECTED =
  "SELECT <aggregate> FROM {dataset} [WHERE <condition>] over the contract's fields, which DuckDB parses and binds (see docs/contracts.md, Dataset rules)";
const INPUT = "__ll_rule_input";

/** One statement to try, and where its rule was written. */
interface Probe {
  id: string;
  loc?: SourceLoc;
  expected: string;
  /** The columns the rule reads when the contract declares no fields (they are text then). */
  columns: readonly string[];
  /** The rule's SQL as written, after `SELECT`. */
  written: string;
  select: string;
  where?: string;
}

const checked = new WeakSet<Contract>();

/** Throw a ContractError listing every sql rule DuckDB refuses; a contract that passed once is not checked again. */
export async function checkContractSql(contract: Contract): Promise<void> {
  if (checked.has(contract)) return;
  const problems = await contractSqlProblems(contract);
  if (problems.length > 0) throw new ContractError(problems);
  checked.add(contract);
}

/** What DuckDB says about each sql rule of `contract`, in file order; empty when all of them bind. */
export async function contractSqlProblems(contract: Contract): Promise<ContractProblem[]> {
  const problems: ContractProblem[] = [];
  const probes = probesOf(contract, problems);
  if (probes.length > 0) {
    await onConnection(async (conn) => {
      for (const p of probes) {
        try {
          // The text as written first, so that a syntax error is said of it (`at end of input`,
          // not at a parenthesis of the statement around it).
          await conn.extractStatements(`SELECT ${p.written}`);
          // Then over one row of NULLs: binding finds unknown names and types, the run the
          // literals that do not convert (`ts > '2024-13-01'`), as the engine's first batch would.
          await conn.run(statement(contract.fields, p));
        } catch (err) {
          problems.push(problemAt(p, duckdbMessage(err)));
        }
      }
    });
  }
  return problems.sort((a, b) => (a.file ?? "").localeCompare(b.file ?? "") || (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}

/**
 * The statements to try. Each expression passes the guard first (a hand-built contract has not
 * been through the loader), so DuckDB only ever sees an expression, never a statement or a read.
 */
function probesOf(contract: Contract, problems: ContractProblem[]): Probe[] {
  const fields = contract.fields.map((f) => f.name);
  const out: Probe[] = [];
  const guarded = (id: string, loc: SourceLoc | undefined, expected: string, f: () => string[]): string[] | undefined => {
    try {
      return f();
    } catch (err) {
      if (!(err instanceof RuleExpressionError)) throw err;
      problems.push(problemAt({ id, expected, ...(loc ? { loc } : {}) }, err.reason));
      return undefined;
    }
  };
  for (const r of contract.rowRules) {
    if (r.kind !== "sql") continue;
    const columns = guarded(r.id, r.loc, ROW_EXPECTED, () => analyzeRuleExpression(r.sql, { fields }).columns);
    if (!columns) continue;
    out.push({ id: r.id, expected: ROW_EXPECTED, columns, written: r.sql, select: rowRuleSql(r.sql), ...(r.loc ? { loc: r.loc } : {}) });
  }
  for (const r of contract.datasetRules) {
    if (r.kind !== "sql") continue;
    const { select, where } = r.query;
    const columns = guarded(r.id, r.loc, DATASET_EXPECTED, () => [
      ...analyzeRuleExpression(select, { fields, aggregates: true }).columns,
      ...(where !== undefined ? analyzeRuleExpression(where, { fields }).columns : []),
    ]);
    if (!columns) continue;
    out.push({
      id: r.id,
      expected: DATASET_EXPECTED,
      columns,
      written: `${select} FROM ${INPUT}${where !== undefined ? ` WHERE ${where}` : ""}`,
      select: datasetValueSql(select),
      ...(where !== undefined ? { where } : {}),
      ...(r.loc ? { loc: r.loc } : {}),
    });
  }
  return out;
}

/** The DuckDB type a rule sees a field as (docs/contracts.md: `sql` rules run on the converted values; json as text). */
function duckdbType(f: FieldSpec): string {
  return f.type === "json" ? "VARCHAR" : duckdbTypeOf(f.type, f.precision, f.scale);
}

function statement(fields: readonly FieldSpec[], p: Probe): string {
  // Without declared fields the rule reads the record's keys as text (a schemaless contract).
  const columns = fields.length > 0 ? fields.map((f) => `NULL::${duckdbType(f)} AS ${quoteIdent(f.name)}`) : p.columns.map((c) => `NULL::VARCHAR AS ${quoteIdent(c)}`);
  const input = `(SELECT ${columns.length > 0 ? columns.join(", ") : "NULL AS __ll_none"}) AS ${INPUT}`;
  return `SELECT ${p.select} FROM ${input}${p.where !== undefined ? ` WHERE (${p.where})` : ""}`;
}

function problemAt(p: Pick<Probe, "id" | "loc" | "expected">, message: string): ContractProblem {
  if (!p.loc) return { path: "", message: `sql rule '${p.id}': ${message}`, expected: p.expected };
  return { path: p.loc.path, message, expected: p.expected, file: p.loc.file, line: p.loc.line, column: p.loc.column };
}

/**
 * DuckDB's message without its excerpt of the statement (`LINE 1: SELECT coalesce(…`, which the
 * author never wrote), on one line: `Candidate functions:` and its list become `…: a, b`.
 */
export function duckdbMessage(err: unknown): string {
  const text = (err instanceof Error ? err.message : String(err)).replace(/^Failed to extract statements: /, "");
  const lines = text.split(/\n\s*\nLINE \d+:/)[0]!.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  let out = lines[0] ?? text;
  let listing = out.endsWith(":");
  for (const line of lines.slice(1)) {
    out += listing && !out.endsWith(":") ? `, ${line}` : ` ${line}`;
    if (line.endsWith(":")) listing = true;
  }
  return out;
}

// ── the one connection: one statement at a time, in call order ──

let opened: Promise<DuckDBConnection> | undefined;
let queue: Promise<unknown> = Promise.resolve();

/** One in-memory database for the process, opened on first use (never closed, as the engine's). */
function connection(): Promise<DuckDBConnection> {
  if (opened === undefined) {
    opened = (async () => {
      const { DuckDBInstance } = await import("../util/duckdb.js");
      const instance = await DuckDBInstance.create(":memory:", { threads: "1" });
      const conn = await instance.connect();
      // As the engine's connection: timestamps without a zone are UTC.
      await conn.run("SET TimeZone = 'UTC'");
      return conn;
    })();
    // A failed open is tried again by the next check.
    opened.catch(() => (opened = undefined));
  }
  return opened;
}

function onConnection<T>(f: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const run = queue.then(async () => f(await connection()));
  queue = run.catch(() => undefined);
  return run;
}
