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
import { dryRunBatch, encodeBatchInSlices, unknownKeys, type EncodedBatch } from "./encode.js";
import { screenStatement, takesJsonText } from "./duckdb-json.js";
import { columnsFromChunks, goodColumnsOf } from "./good-columns.js";
import { compilePlan } from "./plan.js";
import type { Plan } from "./plan-types.js";
import type { Engine, JsonTextInput, ValidationResult } from "./types.js";

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
  /** The statements for records given as JSON text (duckdb-json.ts), prepared on first use; undefined when the plan takes none. */
  json?: Promise<JsonStatements | undefined>;
}

interface JsonStatements {
  screen: DuckDBPreparedStatement;
  validate: DuckDBPreparedStatement;
}

/** A batch some of whose records are JSON text: the JavaScript pass's part and the lines. */
interface TextInput {
  enc: EncodedBatch;
  payload: string;
  lines: string;
  positions: string;
  /** Input index → engine position of each text record, in input order. */
  textIndex: number[];
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

/**
 * The JavaScript pass over the batch's value records, and the text records' lines and engine
 * positions: engine rows are the object records in arrival order, whichever way each came.
 */
async function textInput(records: readonly unknown[], plan: Plan, json: ReadonlyArray<JsonTextInput | undefined>): Promise<TextInput> {
  const valueIndex: number[] = [];
  const texts: string[] = [];
  const textInputIndex: number[] = [];
  for (let i = 0; i < records.length; i++) {
    const j = json[i];
    if (j === undefined) valueIndex.push(i);
    else {
      texts.push(j.json);
      textInputIndex.push(i);
    }
  }
  const part = await encodeBatchInSlices(
    valueIndex.map((i) => records[i]),
    plan,
    SLICE_ROWS,
    pause,
  );
  // Merge the two (each in input order) into engine positions.
  const n = part.n + textInputIndex.length;
  const index = new Int32Array(n);
  const valuePositions: number[] = new Array<number>(part.n);
  const textIndex: number[] = new Array<number>(textInputIndex.length);
  let a = 0;
  let b = 0;
  for (let pos = 0; pos < n; pos++) {
    const ia = a < part.n ? valueIndex[part.index[a]!]! : Infinity;
    const ib = b < textInputIndex.length ? textInputIndex[b]! : Infinity;
    if (ia < ib) {
      index[pos] = ia;
      valuePositions[a++] = pos;
    } else {
      index[pos] = ib;
      textIndex[b++] = pos;
    }
  }
  const unknown = new Array<string | null>(n).fill(null);
  for (let r = 0; r < part.n; r++) unknown[valuePositions[r]!] = part.unknown[r] ?? null;
  const enc: EncodedBatch = {
    n,
    index,
    notObject: part.notObject.map((i) => valueIndex[i]!),
    columns: part.columns,
    tags: part.tags,
    unknown,
  };
  const payload = await batchPayload(plan, part, pause, valuePositions);
  return { enc, payload, lines: texts.join("\n"), positions: JSON.stringify(textIndex), textIndex };
}

/** `assemble` over values: a text record is decoded where a bad row needs it, or when the good rows are built. */
function assembleText(
  records: readonly unknown[],
  plan: Plan,
  text: TextInput,
  json: ReadonlyArray<JsonTextInput | undefined>,
  out: EngineOutput,
): ValidationResult {
  const values = records.slice();
  const { enc } = text;
  for (const b of out.bad) {
    const i = enc.index[b.pos]!;
    const j = json[i];
    if (j === undefined) continue;
    values[i] = j.value;
    if (plan.tracksUnknown) enc.unknown[b.pos] = unknownKeys(values[i] as Record<string, unknown>, plan.knownKeys);
  }
  return assemble(values, plan, enc, out, () => {
    for (let i = 0; i < json.length; i++) if (json[i] !== undefined) values[i] = json[i]!.value;
  });
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

  screenJson(texts: readonly string[], contract: Contract): Promise<readonly number[] | undefined> {
    if (this.closed) return Promise.reject(new Error("engine is closed"));
    const joined = texts.join("\n");
    return this.compile(contract).then(async (c) => {
      const json = await this.jsonStatements(c);
      if (!json) return undefined;
      return this.onConnection(async () => {
        json.screen.bindVarchar(1, joined);
        const rows = (await json.screen.runAndReadAll()).getRows();
        return JSON.parse(String(rows[0]![0])) as number[];
      });
    });
  }

  validate(records: readonly unknown[], contract: Contract, json?: ReadonlyArray<JsonTextInput | undefined>): Promise<ValidationResult> {
    if (this.closed) return Promise.reject(new Error("engine is closed"));
    if (json?.some((j) => j !== undefined)) return this.validateText(records, contract, json);
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

  /**
   * A batch some of whose records are JSON text that `screenJson` accepted: the others go through
   * the JavaScript pass, and one statement reads both (their rows in arrival order).
   */
  private validateText(records: readonly unknown[], contract: Contract, json: ReadonlyArray<JsonTextInput | undefined>): Promise<ValidationResult> {
    const input = this.compile(contract).then(async (c) => ({ c, text: takesJsonText(c.plan) ? await textInput(records, c.plan, json) : undefined }));
    return this.onConnection(async () => {
      const { c, text } = await input;
      // On the connection already: prepared here if screenJson has not prepared them.
      const statements = text ? await (c.json ??= this.prepareJson(c)) : undefined;
      if (!statements || !text) return this.validateDecoded(records, c, json);
      let out: EngineOutput;
      try {
        statements.validate.bindVarchar(1, text.payload);
        statements.validate.bindVarchar(2, text.lines);
        statements.validate.bindVarchar(3, text.positions);
        out = await readOutput(c.plan, await statements.validate.run());
      } catch {
        // The recovery of a failing statement works on values: decode the texts and start again.
        return this.validateDecoded(records, c, json);
      }
      return assembleText(records, c.plan, text, json, out);
    });
  }

  /** The batch with every text record decoded, through the JavaScript pass (on the connection already). */
  private async validateDecoded(records: readonly unknown[], c: Compiled, json: ReadonlyArray<JsonTextInput | undefined>): Promise<ValidationResult> {
    const values = records.map((r, i) => (json[i] === undefined ? r : json[i]!.value));
    const enc = await encodeBatchInSlices(values, c.plan, SLICE_ROWS, pause);
    const payload = enc.n === 0 ? undefined : await batchPayload(c.plan, enc, pause);
    return this.execute(values, c, enc, payload);
  }

  private jsonStatements(c: Compiled): Promise<JsonStatements | undefined> {
    c.json ??= this.onConnection(() => this.prepareJson(c));
    return c.json;
  }

  /** Call on the connection. */
  private async prepareJson(c: Compiled): Promise<JsonStatements | undefined> {
    if (!takesJsonText(c.plan)) return undefined;
    const screen = await this.conn.prepare(screenStatement(c.plan));
    const validate = await this.conn.prepare(buildStatement(c.plan, { keys: c.keys, jsonLines: true }));
    return { screen, validate };
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
