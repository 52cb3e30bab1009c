/**
 * DuckDB engine. A batch travels as ONE string parameter — `{"u":[...],"c0":[...],…}`,
 * one JSON array of tagged text per column (see encode.ts; numeric fields' numbers stay JSON
 * numbers, read back as the same text) — that DuckDB unnests into
 * rows. Coercion, rules, flags, counts and dataset measures are one prepared SELECT per
 * contract. It returns the good rows as typed columns, read as DuckDB data chunks that the
 * DuckDB lake appends as they are (GoodColumns), and then one summary row: a JSON document with
 * the bad rows' failed checks and the aggregates, in a text column (summaryColumn).
 *
 * Measured on 10k rows × 8 columns: binding one JSON string and unnesting it costs about
 * 4 ms, a DataChunk appender into a temp table about 24 ms (one native call per string),
 * and reading rows back as JSON about 3× faster than through value vectors.
 */
import { DuckDBInstance, type DuckDBConnection, type DuckDBPreparedStatement } from "../util/duckdb.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { assemble, emptyOutput, type EngineOutput } from "./assemble.js";
import { dryRunBatch, encodeBatchInSlices, type EncodedBatch } from "./encode.js";
import { columnsFromChunks, goodColumnsOf } from "./good-columns.js";
import type { Expr, Layer } from "./ir.js";
import { compilePlan } from "./plan.js";
import { BAD_COL, FAIL_COL, UNKNOWN_COL, type Plan } from "./plan-types.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import type { Engine, ValidationResult } from "./types.js";


const SQL_TYPE = { utf8: "VARCHAR", int64: "BIGINT", float64: "DOUBLE", bool: "BOOLEAN" } as const;

export function toSql(e: Expr): string {
  switch (e.op) {
    case "col":
      return quoteIdent(e.name);
    case "lit":
      if (e.value === null) return `CAST(NULL AS ${SQL_TYPE[e.type]})`;
      switch (e.type) {
        case "utf8":
          return quoteString(String(e.value));
        case "int64":
          return `CAST(${String(e.value)} AS BIGINT)`;
        case "float64":
          return `CAST('${String(e.value)}' AS DOUBLE)`;
        case "bool":
          return e.value ? "TRUE" : "FALSE";
      }
      break;
    case "digit8":
      // Shift and mask: no division (and its zero check) per value; tag words are never negative.
      return `((${toSql(e.e)} >> ${3 * e.pos}) & 7)`;
    case "matches":
      return `regexp_matches(${toSql(e.e)}, ${quoteString(e.pattern)})`;
    case "extract":
      // regexp_extract gives '' for "no match"; the IR says null.
      return `nullif(regexp_extract(${toSql(e.e)}, ${quoteString(e.pattern)}, ${e.group}), '')`;
    case "trimWs": {
      // trim() with a character set is slow; most values have nothing to trim.
      const x = toSql(e.e);
      const ends = ["' '", "chr(9)", "chr(10)", "chr(13)"].map((w) => `starts_with(${x}, ${w}) OR ends_with(${x}, ${w})`);
      return `(CASE WHEN ${ends.join(" OR ")} THEN trim(${x}, ' ' || chr(9) || chr(10) || chr(13)) ELSE ${x} END)`;
    }
    case "replaceAll":
      return `regexp_replace(${toSql(e.e)}, ${quoteString(e.pattern)}, ${quoteString(e.replacement.replaceAll("\\", "\\\\"))}, 'g')`;
    case "fitRight":
      return `rpad(${toSql(e.e)}, ${e.length}, ${quoteString(e.fill)})`;
    case "concat":
      return `(${e.parts.map(toSql).join(" || ")})`;
    case "joinNonNull":
      return `nullif(concat_ws(${quoteString(e.sep)}, ${e.parts.map(toSql).join(", ")}), '')`;
    case "length":
      return `CAST(length(${toSql(e.e)}) AS BIGINT)`;
    case "cast":
      return `TRY_CAST(${toSql(e.e)} AS ${SQL_TYPE[e.to]})`;
    case "arith":
      return `(${toSql(e.a)} ${e.fn} ${toSql(e.b)})`;
    case "cmp":
      return `(${toSql(e.a)} ${e.fn === "!=" ? "<>" : e.fn} ${toSql(e.b)})`;
    case "and":
      return `(${e.args.map(toSql).join(" AND ")})`;
    case "or":
      return `(${e.args.map(toSql).join(" OR ")})`;
    case "not":
      return `(NOT ${toSql(e.e)})`;
    case "isNull":
      return `(${toSql(e.e)} IS NULL)`;
    case "isFinite":
      return `isfinite(${toSql(e.e)})`;
    case "coalesce":
      return `coalesce(${e.args.map(toSql).join(", ")})`;
    case "case": {
      const branches = e.when.map(([c, v]) => `WHEN ${toSql(c)} THEN ${toSql(v)}`).join(" ");
      return `(CASE ${branches}${e.otherwise ? ` ELSE ${toSql(e.otherwise)}` : ""} END)`;
    }
    case "inList": {
      const lits = e.values.map((v) =>
        toSql({ op: "lit", value: v, type: e.type === "float64" ? "float64" : e.type === "bool" ? "bool" : "utf8" }),
      );
      return `(${toSql(e.e)} IN (${lits.join(", ")}))`;
    }
    case "dateToDays":
      return `(TRY_CAST(${toSql(e.e)} AS DATE) - DATE '1970-01-01')`;
    case "daysToDate":
      return `(DATE '1970-01-01' + CAST(${toSql(e.e)} AS INTEGER))`;
    case "timestampToMicros": {
      // The connection's TimeZone is UTC, so text without a zone is read as UTC. DuckDB wants
      // seconds before a zone ("10:00Z" fails), so those get ":00".
      const x = toSql(e.e);
      const withSeconds = `(CASE WHEN length(${x}) <= 16 OR substr(${x}, 17, 1) = ':' THEN ${x} ELSE left(${x}, 16) || ':00' || substr(${x}, 17) END)`;
      return `epoch_us(TRY_CAST(${withSeconds} AS TIMESTAMPTZ))`;
    }
    case "microsToTimestamp":
      return `make_timestamp(${toSql(e.e)})`;
    case "formatMicros":
      return `strftime(make_timestamp(${toSql(e.e)}), '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case "decimalCanon":
      return `CAST(TRY_CAST(${toSql(e.e)} AS DECIMAL(${e.precision},${e.scale})) AS VARCHAR)`;
    case "decimalValue":
      // decimalCanon is TRY_CAST to DECIMAL spelt as text: cast the text it came from instead.
      return e.text
        ? `TRY_CAST(${toSql(e.text)} AS DECIMAL(${e.precision},${e.scale}))`
        : `CAST(${toSql(e.e)} AS DECIMAL(${e.precision},${e.scale}))`;
    case "sqlRule":
      return `coalesce(CAST((${e.sql}) AS BOOLEAN), FALSE)`;
  }
  throw new Error(`unreachable: ${(e as { op: string }).op}`);
}

const layerSql = (from: string, layer: Layer): string =>
  `SELECT *, ${layer.columns.map(([n, e]) => `${toSql(e)} AS ${quoteIdent(n)}`).join(", ")} FROM ${from}`;

/** JSON member names of the batch document. */
const payloadKey = (k: number): string => `c${k}`;

/**
 * The batch as the statement's one parameter, spelt one member (unknown keys, tag words, one text
 * column per field) at a time with `pause()` between them (see encodeBatchInSlices).
 */
async function batchPayload(plan: Plan, enc: EncodedBatch, pause?: () => Promise<void>): Promise<string> {
  const members: Array<[string, Array<string | number | null>]> = [
    ["u", enc.unknown],
    ...enc.tags.map((t, w): [string, number[]] => [`t${w}`, t]),
    // Numbers in a text column are read back as their text (from_json into VARCHAR).
    ...plan.fields.map((f): [string, Array<string | number | null>] => [payloadKey(f.k), enc.columns[f.k]!]),
  ];
  // The braces go in with the members: one join makes one flat string, which the binding reads
  // as it is (wrapping the join in a template makes a rope that is copied once more to be read).
  const parts: string[] = [];
  for (const [key, values] of members) {
    if (parts.length > 0) await pause?.();
    parts.push(`${parts.length === 0 ? "{" : ""}"${key}":${JSON.stringify(values)}`);
  }
  parts[parts.length - 1] += "}";
  return parts.join(",");
}

/** Records per slice of the JavaScript pass: ~1 ms of work for a typical record. */
const SLICE_ROWS = 2048;

/** Let the event loop run the callbacks that are due (a macrotask, not a microtask). */
const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The one statement that validates a batch; `probe` instead selects one sql rule over the typed columns. */
export function buildStatement(plan: Plan, options: { probe?: string; keys?: boolean } = {}): string {
  const probe = options.probe;
  const struct =
    `{"u":["VARCHAR"]` +
    plan.tagWords.map((_, w) => `,"t${w}":["BIGINT"]`).join("") +
    plan.fields.map((f) => `,"${payloadKey(f.k)}":["VARCHAR"]`).join("") +
    "}";
  const unnest = [
    `unnest(range(len(j.u))) AS __ll_i`,
    `unnest(j.u) AS ${UNKNOWN_COL}`,
    ...plan.tagWords.map((name, w) => `unnest(j.t${w}) AS ${quoteIdent(name)}`),
    ...plan.fields.map((f) => `unnest(j.${payloadKey(f.k)}) AS ${quoteIdent(f.text)}`),
  ];
  const ctes: string[] = [`s0 AS (SELECT ${unnest.join(", ")} FROM (SELECT from_json($1::VARCHAR, '${struct}') AS j))`];
  if (probe !== undefined) {
    plan.layers.forEach((layer, i) => ctes.push(`s${i + 1} AS (${layerSql(`s${i}`, layer)})`));
    return `WITH ${ctes.join(",\n")}\nSELECT ${toSql({ op: "sqlRule", sql: probe })} FROM s${plan.layers.length}`;
  }
  // The failure list is spelt only for bad rows (below), not computed for every row.
  const post = plan.postLayers.map((l) => ({ columns: l.columns.filter(([n]) => n !== FAIL_COL) }));
  const failExpr = plan.postLayers.flatMap((l) => l.columns).find(([n]) => n === FAIL_COL)?.[1];
  const layers: Layer[] = [
    ...plan.layers,
    ...(plan.sqlRules.length ? [{ columns: plan.sqlRules.map(([c, sql]): [string, Expr] => [c, { op: "sqlRule", sql }]) }] : []),
    ...post.filter((l) => l.columns.length > 0),
  ];
  layers.forEach((layer, i) => ctes.push(`s${i + 1} AS (${layerSql(`s${i}`, layer)})`));
  // The evaluated batch is read three times: materialise it once, with only the columns
  // read afterwards (not every intermediate string).
  const keep = new Set(["__ll_i", BAD_COL, ...plan.checks.map((c) => c.flag), ...plan.outputs.map((o) => o.field.name)]);
  plan.dataset.forEach((d) => d.cols.forEach((c) => keep.add(c)));
  plan.primaryKeyCols?.forEach((c) => keep.add(c));
  ctes.push(`ev AS MATERIALIZED (SELECT ${[...keep].map(quoteIdent).join(", ")} FROM s${layers.length})`);

  const counts = plan.checks.length ? `[${plan.checks.map((c) => `count_if(${quoteIdent(c.flag)})`).join(", ")}]` : "[]";
  const dataset = plan.dataset.map((d) => {
    switch (d.rule.kind) {
      case "unique":
        return `count(DISTINCT row(${d.cols.map(quoteIdent).join(", ")})) FILTER (WHERE NOT ${BAD_COL})`;
      case "null_ratio":
        return `count_if(NOT ${BAD_COL} AND ${quoteIdent(d.cols[0]!)})`;
      case "row_count_between":
        return "0";
    }
  });
  const fail = failExpr ? toSql(failExpr) : "''";
  const doc = [
    `counts := ${counts}`,
    `ds := [${dataset.join(", ")}]::BIGINT[]`,
    `n := count_if(NOT ${BAD_COL})`,
    `bad := (SELECT list(struct_pack(p := __ll_i, c := ${fail})) FROM ev WHERE ${BAD_COL})`,
  ];
  const pk = plan.primaryKeyCols?.map(quoteIdent);
  if (pk) {
    // Compared as the lake compares them (typed values; NULL parts match each other).
    const pkNull = `count_if(NOT ${BAD_COL} AND (${pk.map((c) => `${c} IS NULL`).join(" OR ")}))`;
    // One column: count(DISTINCT) skips NULLs, and all NULL keys are one key (cheaper than row()).
    const distinct =
      pk.length === 1
        ? `count(DISTINCT ${pk[0]}) FILTER (WHERE NOT ${BAD_COL}) + least(${pkNull}, 1)`
        : `count(DISTINCT row(${pk.join(", ")})) FILTER (WHERE NOT ${BAD_COL})`;
    doc.push(`pkDistinct := ${distinct}`, `pkNull := ${pkNull}`);
  }
  // The merge's keys, as text that casts back to each key's type exactly (see GoodColumns.keys).
  const keyFields = options.keys ? plan.primaryKeyFields : undefined;
  if (keyFields) {
    // The first key part's range, so that the lake can skip a merge's delete when no stored
    // key falls in it (GoodColumns.keys.range).
    const over = (agg: string) => `CAST(${agg}(${quoteIdent(keyFields[0]!)}) FILTER (WHERE NOT ${BAD_COL}) AS VARCHAR)`;
    doc.push(`lo := ${over("min")}`, `hi := ${over("max")}`);
  }
  const keysDoc = keyFields
    ? ` || chr(1) || CAST(to_json(struct_pack(${keyFields
        .map((name, i) => `k${i} := list(CAST(${quoteIdent(name)} AS VARCHAR)) FILTER (WHERE NOT ${BAD_COL})`)
        .join(", ")})) AS VARCHAR)`
    : "";
  const meta = `(SELECT CAST(to_json(struct_pack(${doc.join(", ")})) AS VARCHAR)${keysDoc} FROM ev)`;
  const head = `WITH ${ctes.join(",\n")}\n`;
  if (plan.outputs.length === 0) return `${head}SELECT ${meta}`;
  // The good rows come back as rows of typed columns (GoodColumns: DuckDB data chunks the lake
  // appends as they are), followed by one row that carries the counts and the bad rows in a text
  // column (summaryColumn). With one thread the rows keep their order: arrival order, then that row.
  const typed = plan.outputs.map((o) => quoteIdent(o.field.name));
  const at = summaryColumn(plan);
  if (at === typed.length) typed.push("CAST(NULL AS VARCHAR)");
  return (
    `${head}SELECT ${typed.join(", ")} FROM ev WHERE NOT ${BAD_COL}\n` +
    `UNION ALL SELECT ${typed.map((_, i) => (i === at ? meta : "NULL")).join(", ")}`
  );
}

/**
 * The column of the statement's last row that holds the summary, so that the good rows' chunks
 * are GoodColumns as they are: under `unknown_fields: allow` the column for undeclared keys that
 * follows the fields (NULL on every good row GoodColumns stand for); else the first text-typed
 * field; else an added column (GoodColumns are then not given).
 */
function summaryColumn(plan: Plan): number {
  const text = plan.outputs.findIndex((o) => o.field.type === "string" || o.field.type === "json");
  return plan.keepsExtraKeys || text < 0 ? plan.outputs.length : text;
}

/** Does a contract's target replace rows by their primary key (merge, keyed overwrite)? */
export function keyedTarget(contract: Contract): boolean {
  const strategy = contract.materialization.strategy;
  return strategy === "merge" || (strategy === "overwrite" && contract.primaryKey.length > 0);
}

const MAX_COMPILED = 16;

interface Compiled {
  plan: Plan;
  stmt: DuckDBPreparedStatement;
}

/** The summary (summaryColumn): counts, dataset measures, bad rows (NULL when none). */
interface Meta {
  n: number;
  pkDistinct?: number;
  pkNull?: number;
  /** The first key part's smallest and largest value among the good rows (keyed targets). */
  lo?: string | null;
  hi?: string | null;
  counts: number[];
  ds: number[];
  bad: Array<{ p: number; c: string }> | null;
}

export class DuckDBEngine implements Engine {
  readonly name = "duckdb" as const;
  /** Prepared plans by contract object; a few, since a stream keeps one contract. */
  private readonly compiled = new Map<Contract, Promise<Compiled>>();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly conn: DuckDBConnection,
  ) {}

  static async create(): Promise<DuckDBEngine> {
    // One thread: a 10k-row batch is too small to gain from parallel operators (measured:
    // slower with two). It also makes list() aggregate rows in arrival order, which the
    // statement relies on instead of sorting eleven lists (ORDER BY cost ~8 ms per 10k rows).
    const instance = await DuckDBInstance.create(":memory:", { threads: "1" });
    const conn = await instance.connect();
    // Timestamps without a zone are UTC, whatever the machine's zone.
    await conn.run("SET TimeZone = 'UTC'");
    return new DuckDBEngine(instance, conn);
  }

  validate(records: readonly unknown[], contract: Contract): Promise<ValidationResult> {
    if (this.closed) return Promise.reject(new Error("engine is closed"));
    // The JavaScript pass starts at once; only the statement waits for the connection. A caller
    // that asks for the next batch before this one is done gets its encoding done while this
    // batch's statement runs on DuckDB's thread.
    const input = this.compile(contract).then(async (c) => {
      // In slices: a lake write in flight continues between them (see encodeBatchInSlices).
      const enc = await encodeBatchInSlices(records, c.plan, SLICE_ROWS, pause);
      const payload = enc.n === 0 ? undefined : await batchPayload(c.plan, enc, pause);
      return { c, enc, payload };
    });
    // Batches run their statements one after another, in the order they were asked for.
    return this.onConnection(async () => {
      const { c, enc, payload } = await input;
      return this.execute(records, c, enc, payload);
    });
  }

  /** Runs `f` when the connection is free: one statement at a time, in call order. */
  private onConnection<T>(f: () => Promise<T>): Promise<T> {
    const run = this.queue.then(f);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async execute(records: readonly unknown[], c: Compiled, enc: EncodedBatch, payload: string | undefined): Promise<ValidationResult> {
    const plan = c.plan;
    if (payload === undefined) return assemble(records, plan, enc, emptyOutput(plan));
    c.stmt.bindVarchar(1, payload);
    const chunks = await (await c.stmt.run()).fetchAllChunks();
    // The last row carries the summary; the rows before it are the good rows.
    const last = chunks[chunks.length - 1];
    const at = summaryColumn(plan);
    const summary = last?.getColumnVector(at).getItem(last.rowCount - 1);
    if (typeof summary !== "string") throw new Error("internal error: the validation statement's last row is not its summary");
    // JSON text has no raw U+0001: the first one ends the counts document.
    const cut = summary.indexOf("\u0001");
    const meta = JSON.parse(cut < 0 ? summary : summary.slice(0, cut)) as Meta;
    last!.rowCount -= 1;
    if (last!.rowCount === 0) chunks.pop();
    const keys =
      meta.pkDistinct === undefined || !plan.primaryKeyFields
        ? undefined
        : {
            fields: plan.primaryKeyFields,
            unique: meta.pkDistinct === meta.n,
            someNull: (meta.pkNull ?? 0) > 0,
            ...(cut < 0 ? {} : { doc: summary.slice(cut + 1) }),
            ...(typeof meta.lo === "string" && typeof meta.hi === "string" ? { range: { low: meta.lo, high: meta.hi } } : {}),
          };
    const good = plan.outputs.length === 0 ? undefined : goodColumnsOf(plan, meta.n, chunks, plan.keepsExtraKeys, keys);
    const out: EngineOutput = {
      goodColumns: () => (good ? columnsFromChunks(plan, good) : plan.outputColumns.map(() => [])),
      // A summary column of its own is not part of GoodColumns: the chunks are then only read here.
      ...(good && (at < plan.outputs.length || good.extraColumn) ? { typed: good } : {}),
      bad: (meta.bad ?? []).map((b) => ({ pos: b.p, codes: b.c.split(",").map(Number) })),
      counts: meta.counts,
      goodCount: meta.n,
      dataset: meta.ds,
    };
    return assemble(records, plan, enc, out);
  }

  private compile(contract: Contract): Promise<Compiled> {
    let c = this.compiled.get(contract);
    if (!c) {
      if (this.compiled.size >= MAX_COMPILED) {
        const [oldest, evicted] = this.compiled.entries().next().value as [Contract, Promise<Compiled>];
        this.compiled.delete(oldest);
        // After the statements already queued: a batch asked for earlier may still use it.
        void evicted.then((e) => this.onConnection(async () => e.stmt.destroySync()), () => undefined);
      }
      c = this.prepare(contract);
      this.compiled.set(contract, c);
      c.catch(() => this.compiled.delete(contract));
    }
    return c;
  }

  /** Not async: its statement must take its place on the connection before the caller's batch does. */
  private prepare(contract: Contract): Promise<Compiled> {
    return this.onConnection(async () => {
      const plan = compilePlan(contract, { allStringText: true, numbersAsJson: true });
      const dry = await batchPayload(plan, dryRunBatch(plan));
      let stmt: DuckDBPreparedStatement | undefined;
      try {
        stmt = await this.conn.prepare(buildStatement(plan, { keys: keyedTarget(contract) }));
        // Some errors (a literal that does not convert, a bad regex) only show when rows flow.
        stmt.bindVarchar(1, dry);
        await stmt.run();
        return { plan, stmt };
      } catch (err) {
        stmt?.destroySync();
        throw await this.diagnose(plan, dry, err);
      }
    });
  }

  /** Find the rule that breaks the statement, if one does on its own. */
  private async diagnose(plan: Plan, dry: string, err: unknown): Promise<Error> {
    for (const check of plan.checks) {
      const rule = check.rule;
      if (rule?.kind !== "sql" && rule?.kind !== "regex_match") continue;
      try {
        if (rule.kind === "sql") await this.conn.run(buildStatement(plan, { probe: rule.sql }), [dry]);
        else await this.conn.run(`SELECT ${toSql({ op: "matches", e: { op: "lit", value: "", type: "utf8" }, pattern: rule.pattern })}`);
      } catch (ruleErr) {
        return new ConfigError(`rule ${check.ruleId}`, `does not compile on duckdb: ${(ruleErr as Error).message}`, {
          cause: ruleErr,
        });
      }
    }
    return new ConfigError("contract", `cannot be evaluated on duckdb: ${(err as Error).message}`, { cause: err });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    this.compiled.clear();
    // The instance, its connection and prepared statements are left to the garbage collector:
    // results of earlier batches may not be collected yet, and closing the database under them
    // corrupts the native heap (see src/lake/duckdb-db.ts).
  }
}
