/**
 * Engine "spark": the validation plan compiled to Spark SQL (spark-sql.ts) and run by a
 * long-lived Spark driver process (one SparkSession per engine, reused for every batch, stopped
 * by close()). The JavaScript pass (encode.ts) and the result assembly (assemble.ts) are the
 * ones the other engines use, so rows, errors and messages are built by the same code.
 */
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { assemble, emptyOutput, type EngineOutput } from "./assemble.js";
import { dryRunBatch, encodeBatch, type EncodedBatch } from "./encode.js";
import { compilePlan } from "./plan.js";
import { BAD_COL, FAIL_COL, SUPERSEDED_COL, UNKNOWN_COL, type Plan } from "./plan-types.js";
import { buildSparkStatement, type SparkStatement } from "./spark-sql.js";
import type { Engine, ValidationResult } from "./types.js";
import { SparkDriver, SparkDriverError, type DriverConfig } from "./spark-driver.js";

interface Compiled {
  plan: Plan;
  stmt: SparkStatement;
}

interface ValidateReply extends Record<string, unknown> {
  columns: Record<string, unknown[]>;
  measures: Array<number | null>;
  measureErrors: Array<string | null>;
}

/** The encoded batch as the driver's input columns (SparkStatement.input). */
function inputColumns(plan: Plan, enc: EncodedBatch): Record<string, unknown[]> {
  const cols: Record<string, unknown[]> = {
    __ll_i: Array.from({ length: enc.n }, (_, i) => i),
    [UNKNOWN_COL]: enc.unknown,
  };
  plan.tagWords.forEach((name, w) => (cols[name] = enc.tags[w]!));
  // All text: the plan is compiled without numbersAsJson.
  plan.fields.forEach((f) => (cols[f.text] = enc.columns[f.k]!.map((v) => (v === null ? null : String(v)))));
  return cols;
}

function toOutput(plan: Plan, reply: ValidateReply): EngineOutput {
  const c = reply.columns;
  const idx = (c.__ll_i ?? []) as number[];
  const badFlags = (c[BAD_COL] ?? idx.map(() => false)) as boolean[];
  const sup = plan.supersedeBy ? (c[SUPERSEDED_COL] as boolean[]) : undefined;
  const fails = (c[FAIL_COL] ?? []) as Array<string | null>;
  const goodAt: number[] = [];
  const bad: EngineOutput["bad"] = [];
  const superseded: number[] = [];
  idx.forEach((pos, r) => {
    if (badFlags[r]) bad.push({ pos, codes: (fails[r] ?? "").split(",").map(Number) });
    else if (sup?.[r]) superseded.push(pos);
    else goodAt.push(r);
  });
  const goodColumns = plan.outputColumns.map((name) => {
    const values = c[name] ?? [];
    return goodAt.map((r) => values[r]);
  });
  const counts = plan.checks.map((ch) => ((c[ch.flag] ?? []) as boolean[]).reduce((n, v) => (v ? n + 1 : n), 0));
  const datasetErrors = reply.measureErrors.map((e) => e ?? undefined);
  return {
    goodColumns,
    bad,
    counts,
    goodCount: goodAt.length,
    dataset: reply.measures,
    datasetErrors,
    ...(plan.supersedeBy ? { superseded } : {}),
  };
}

export interface SparkEngineOptions extends DriverConfig {
  /** An already running driver to use (SparkStreamSink's); the engine then does not close it. */
  driver?: SparkDriver;
}

export class SparkEngine implements Engine {
  readonly name = "spark" as const;
  private readonly compiled = new WeakMap<Contract, Promise<Compiled>>();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly driver: SparkDriver,
    private readonly owns: boolean,
  ) {}

  /** Starts the driver and its SparkSession (seconds: a JVM and Spark's start-up). */
  static async create(options: SparkEngineOptions = {}): Promise<SparkEngine> {
    const { driver, ...config } = options;
    if (driver) return new SparkEngine(driver, false);
    const started = await SparkDriver.start("serve", { master: "local[2]", appName: "lakelogic-validate", ...config });
    try {
      await started.ready;
    } catch (err) {
      await started.close().catch(() => undefined);
      throw err;
    }
    return new SparkEngine(started, true);
  }

  /** The driver process (its pid, for tests that stop it). */
  get process(): SparkDriver {
    return this.driver;
  }

  validate(records: readonly unknown[], contract: Contract): Promise<ValidationResult> {
    if (this.closed) return Promise.reject(new Error("engine is closed"));
    // One request at a time: the session runs one batch's statement after another.
    const run = this.queue.then(async () => {
      const c = await this.compile(contract);
      const enc = encodeBatch(records, c.plan);
      if (enc.n === 0) return assemble(records, c.plan, enc, emptyOutput(c.plan));
      const reply = await this.driver.request<ValidateReply>("validate", { stmt: c.stmt, cols: inputColumns(c.plan, enc) });
      return assemble(records, c.plan, enc, toOutput(c.plan, reply));
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private compile(contract: Contract): Promise<Compiled> {
    let c = this.compiled.get(contract);
    if (!c) {
      c = (async () => {
        const plan = compilePlan(contract);
        const stmt = buildSparkStatement(plan, contract);
        // Spark analyses the statement when it runs: a rule naming a function or column Spark
        // does not have fails here, with its reason, not in the middle of a stream.
        try {
          await this.driver.request("compile", { stmt, cols: inputColumns(plan, dryRunBatch(plan)) });
        } catch (err) {
          if (!(err instanceof SparkDriverError)) throw err;
          throw new ConfigError("contract", `cannot be evaluated on engine "spark": ${err.message}`, { cause: err });
        }
        return { plan, stmt };
      })();
      this.compiled.set(contract, c);
      c.catch(() => this.compiled.delete(contract));
    }
    return c;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    if (this.owns) await this.driver.close();
  }
}
