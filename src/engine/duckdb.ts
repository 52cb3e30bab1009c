/**
 * DuckDB engine. A batch travels as ONE string parameter — `{"u":[...],"c0":[...],…}`,
 * one JSON array of tagged text per column (see encode.ts; numeric fields' numbers stay JSON
 * numbers, read back as the same text) — that DuckDB unnests into
 * rows. Coercion, rules, flags, counts and dataset measures are one prepared SELECT per
 * contract. It returns the good rows as typed columns, read as DuckDB data chunks that the
 * DuckDB lake appends as they are (GoodColumns), and then one summary row: a JSON document with
 * the bad rows' failed checks and the aggregates, in a text column (summaryColumn). A statement
 * that throws on some value, or in a dataset measure, is worked around (duckdb-recover.ts).
 *
 * Measured on 10k rows × 8 columns: binding one JSON string and unnesting it costs about
 * 4 ms, a DataChunk appender into a temp table about 24 ms (one native call per string),
 * and reading rows back as JSON about 3× faster than through value vectors.
 */
import { DuckDBInstance, type DuckDBConnection, type DuckDBMaterializedResult, type DuckDBPreparedStatement } from "../util/duckdb.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { assemble, emptyOutput, type EngineOutput } from "./assemble.js";
import { recoverBatch } from "./duckdb-recover.js";
import { batchPayload, buildStatement, summaryColumn, toSql } from "./duckdb-sql.js";
import { keyedTarget } from "./keyed.js";
import { dryRunBatch, encodeBatchInSlices, type EncodedBatch } from "./encode.js";
import { columnsFromChunks, goodColumnsOf } from "./good-columns.js";
import { compilePlan } from "./plan.js";
import type { Plan } from "./plan-types.js";
import type { Engine, ValidationResult } from "./types.js";

export { buildStatement, toSql } from "./duckdb-sql.js";
export { keyedTarget } from "./keyed.js";

/** Records per slice of the JavaScript pass: ~1 ms of work for a typical record. */
const SLICE_ROWS = 2048;

/** Let the event loop run the callbacks that are due (a macrotask, not a microtask). */
const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const MAX_COMPILED = 16;

interface Compiled {
  plan: Plan;
  stmt: DuckDBPreparedStatement;
  /** The statement adds the merge's keys (keyedTarget). */
  keys: boolean;
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
  /** Positions of superseded good rows (keyed targets; NULL when none). */
  sup?: number[] | null;
}

/** What a validation statement returned: the good rows' chunks, then the summary row. */
async function readOutput(plan: Plan, result: DuckDBMaterializedResult): Promise<EngineOutput> {
  const chunks = await result.fetchAllChunks();
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
  return {
    goodColumns: () => (good ? columnsFromChunks(plan, good) : plan.outputColumns.map(() => [])),
    // A summary column of its own is not part of GoodColumns: the chunks are then only read here.
    ...(good && (at < plan.outputs.length || good.extraColumn) ? { typed: good } : {}),
    bad: (meta.bad ?? []).map((b) => ({ pos: b.p, codes: b.c.split(",").map(Number) })),
    ...(meta.sup ? { superseded: meta.sup } : {}),
    counts: meta.counts,
    goodCount: meta.n,
    dataset: meta.ds,
  };
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
    let out: EngineOutput;
    try {
      c.stmt.bindVarchar(1, payload);
      out = await readOutput(plan, await c.stmt.run());
    } catch (err) {
      // A rule that throws on some value, or a dataset measure that throws: set those aside
      // rather than fail the batch (which a retry would fail the same way).
      return recoverBatch(
        {
          conn: this.conn,
          plan,
          keys: c.keys,
          validate: async (p) => {
            c.stmt.bindVarchar(1, p);
            return readOutput(plan, await c.stmt.run());
          },
          validateWith: async (sql, p) => readOutput(plan, await this.conn.run(sql, [p])),
        },
        records,
        enc,
        payload,
        err,
      );
    }
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
        const keys = keyedTarget(contract);
        stmt = await this.conn.prepare(buildStatement(plan, { keys }));
        // Some errors (a literal that does not convert, a bad regex) only show when rows flow.
        stmt.bindVarchar(1, dry);
        await stmt.run();
        return { plan, stmt, keys };
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
