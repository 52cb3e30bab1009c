/**
 * SparkStreamSink: the contract on Spark Structured Streaming, run where Spark's data is. The
 * driver (spark/driver.py) runs the query with `foreachBatch` and Spark's own
 * `checkpointLocation` for source offsets; each micro-batch is validated on the executors — the
 * records encoded by spark/jsvalues.py as the engines' JavaScript pass encodes them, the rules
 * by the contract's plan compiled to Spark SQL (./executor-plan.ts) — and the good rows are
 * MERGEd into a Delta table on the primary key, the bad ones appended to a Delta quarantine
 * table with their reasons, each write once per batch (Delta's txnAppId / txnVersion). No
 * record reaches the driver's memory or this process: the driver reports each batch's counts.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { ContractError } from "../contract/errors.js";
import { loadContract } from "../contract/load.js";
import type { Contract } from "../contract/types.js";
import { ConfigError, NonRetriableError } from "../errors.js";
import { checkQuarantineTarget, isUri, joinLocation, quarantineLocationIn } from "../lake/config.js";
import { ruleCountsOf } from "../engine/assemble.js";
import { SparkDriver, SparkDriverError, type DriverEvent } from "../engine/spark-driver.js";
import { executorPlan } from "./executor-plan.js";
import { checkMasterReachable, checkSparkSinkOptions } from "./options.js";
import type { SparkBatchReport, SparkStreamSinkOptions } from "./types.js";

export type { SparkBatchReport, SparkSource, SparkStreamSinkOptions, SparkTrigger } from "./types.js";

export interface SparkRunSummary {
  dataset: string;
  batches: number;
  sourceCount: number;
  goodCount: number;
  badCount: number;
  supersededCount: number;
  reports: SparkBatchReport[];
  /** `error`: the run failed; the summary of a SparkRunError counts the batches committed before. */
  stoppedBy: "end" | "stop" | "error";
  targetPath: string;
  quarantinePath: string;
  checkpointLocation: string;
  startedAt: Date;
  finishedAt: Date;
}

/**
 * The SparkSession did not start on the master (nothing there speaks Spark, the cluster refused
 * the application): nothing was read or written. Not retriable as such: the master is to be
 * checked (LAKELOGIC_SPARK_DEBUG=1 shows Spark's log).
 */
export class SparkStartError extends NonRetriableError {
  constructor(
    readonly master: string,
    readonly reason: string,
  ) {
    super("SPARK_START", `the SparkSession did not start on master ${master}: ${reason}`);
  }
}

/** The stream failed after it started: `summary` counts the micro-batches Delta committed before. */
export class SparkRunError extends SparkDriverError {
  constructor(
    readonly summary: SparkRunSummary,
    cause: Error,
  ) {
    super(cause.message, { cause });
  }
}

/** ` (in FILE)` for a contract loaded from a file, so a refusal names it. */
function inFile(contract: Contract): string {
  return contract.file ? ` (in ${contract.file})` : "";
}

/** Where the good rows go: Delta at `materialization.target_path`; other formats are refused. */
export function deltaTargets(contract: Contract, options: Pick<SparkStreamSinkOptions, "targetPath" | "quarantinePath">): { target: string; quarantine: string } {
  const raw = contract.raw.materialization as Record<string, unknown> | undefined;
  const declared = typeof raw?.format === "string" ? raw.format : undefined;
  if (declared !== undefined && declared !== "delta") {
    throw new ConfigError(
      "materialization.format",
      `"${declared}" cannot be written by engine "spark": SparkStreamSink writes Delta tables (remove the key or write "delta")${inFile(contract)}`,
    );
  }
  const base = contract.materialization.targetPath;
  const table = contract.materialization.table;
  const target = options.targetPath ?? (base ? joinLocation(base, table) : undefined);
  if (!target) throw new ConfigError("targetPath", `SparkStreamSink needs a Delta table path: pass targetPath or set materialization.target_path${inFile(contract)}`);
  if (options.quarantinePath !== undefined) return { target, quarantine: options.quarantinePath };
  const named = declaredQuarantineTarget(contract);
  if (named === undefined) return { target, quarantine: `${target}_quarantine` };
  checkQuarantineTarget(named, table, "delta");
  // The lake's rule: a name is a table beside the Delta table, in the directory that holds it.
  const lake = options.targetPath === undefined ? base! : parentOf(options.targetPath);
  return { target, quarantine: quarantineLocationIn(lake, table, named) };
}

/** `quarantine.target` (or its spellings `table`, `location`) when the contract writes one. */
function declaredQuarantineTarget(contract: Contract): string | undefined {
  const raw = contract.raw?.["quarantine"];
  if (raw === null || typeof raw !== "object") return undefined;
  const keys = ["target", "table", "location"];
  return keys.some((k) => typeof (raw as Record<string, unknown>)[k] === "string") ? contract.quarantine.target : undefined;
}

/** The directory holding a table path or URI. */
function parentOf(location: string): string {
  if (!isUri(location)) return dirname(location);
  const trimmed = location.replace(/\/+$/, "");
  return trimmed.slice(0, trimmed.lastIndexOf("/"));
}

/** What SparkStreamSink needs of a contract: declared fields (the Delta schema) and a Delta target. */
function checkedTargets(contract: Contract, options: SparkStreamSinkOptions): { target: string; quarantine: string } {
  if (contract.fields.length === 0) throw new ConfigError("fields", `SparkStreamSink needs declared fields: the Delta table's schema comes from them${inFile(contract)}`);
  return deltaTargets(contract, options);
}

/** A contract file, loaded as every command loads it; a missing file is a ContractError naming it. */
async function loadContractFile(path: string): Promise<Contract> {
  if (path.includes("\n") || !existsSync(path)) {
    throw new ContractError([{ path: "", file: path, message: "contract file not found", expected: "the path of a YAML contract" }]);
  }
  return loadContract(path);
}

/**
 * The driver's reason for a session that did not start, with the first ERROR line of Spark's
 * own log when it says more (a standalone master's "All masters are unresponsive! Giving up.").
 */
function sparkLogReason(reason: string, tail: string): string {
  const logged = /^\S+ \S+ ERROR [^:]+: (.+)$/m.exec(tail)?.[1]?.trim();
  return logged && !reason.includes(logged) ? `${reason} (Spark: ${logged})` : reason;
}

/** The run's counts: the sums of its committed batches. */
function totals(reports: SparkBatchReport[]): Pick<SparkRunSummary, "batches" | "sourceCount" | "goodCount" | "badCount" | "supersededCount"> {
  const sum = (k: "sourceCount" | "goodCount" | "badCount" | "supersededCount"): number => reports.reduce((n, r) => n + r[k], 0);
  return { batches: reports.length, sourceCount: sum("sourceCount"), goodCount: sum("goodCount"), badCount: sum("badCount"), supersededCount: sum("supersededCount") };
}

export class SparkStreamSink {
  private driver?: SparkDriver;
  private stopFile?: string;
  private stopRequested = false;

  /**
   * `contract`: a loaded Contract, or the path of a contract file (loaded by run(), as
   * `loadContract` loads it; errors name the file). A Contract is checked here, a path when run.
   */
  constructor(
    private readonly contract: Contract | string,
    private readonly options: SparkStreamSinkOptions,
  ) {
    checkSparkSinkOptions(options);
    if (typeof contract !== "string") checkedTargets(contract, options);
  }

  /** The running driver's process id (tests stop it to prove crash safety). */
  get driverPid(): number | undefined {
    return this.driver?.pid;
  }

  /** Ends a processing-time run after the batch in flight; an available_now run ends by itself. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    if (this.stopFile) await writeFile(this.stopFile, "stop");
  }

  async run(): Promise<SparkRunSummary> {
    this.stopRequested = false;
    const contract = typeof this.contract === "string" ? await loadContractFile(this.contract) : this.contract;
    const targets = checkedTargets(contract, this.options);
    const o = this.options;
    const master = o.master ?? "local[2]";
    // Before a JVM starts: a master nothing answers at is named now, not after Spark's retries.
    await checkMasterReachable(master);
    // Compiled before a JVM starts: a rule Spark cannot run with its meaning is refused now.
    const { plan, executor } = executorPlan(contract);
    const trigger = o.trigger ?? "available_now";
    const startedAt = new Date();
    const dir = await mkdtemp(join(tmpdir(), "lakelogic-spark-stream-"));
    this.stopFile = join(dir, "stop");
    const reports: SparkBatchReport[] = [];
    const { target: targetPath, quarantine: quarantinePath } = targets;
    const summary = (stoppedBy: SparkRunSummary["stoppedBy"]): SparkRunSummary => ({
      ...totals(reports),
      ...{ dataset: contract.dataset, reports, stoppedBy, targetPath, quarantinePath },
      ...{ checkpointLocation: o.checkpointLocation, startedAt, finishedAt: new Date() },
    });
    const events: DriverEvent[] = [];
    let wake: (() => void) | undefined;
    const onEvent = (e: DriverEvent): void => {
      events.push(e);
      wake?.();
    };
    const source = o.source.type === "kafka"
      ? { ...o.source, bootstrapServers: Array.isArray(o.source.bootstrapServers) ? o.source.bootstrapServers.join(",") : o.source.bootstrapServers }
      : o.source;
    let driver: SparkDriver;
    try {
      // A stop() that came while the contract loaded.
      if (this.stopRequested) await writeFile(this.stopFile, "stop");
      driver = await SparkDriver.start(
        "stream",
        {
          master,
          appName: `lakelogic-stream-${contract.dataset}`,
          ...(o.conf ? { conf: o.conf } : {}),
          ...(o.packages ? { packages: o.packages } : {}),
          source,
          checkpointLocation: o.checkpointLocation,
          trigger,
          stopFile: this.stopFile,
          targetPath: targets.target,
          quarantinePath: targets.quarantine,
          // quarantine.enabled: false — the bad rows are counted, not written (as StreamSink).
          quarantine: contract.quarantine.enabled,
          primaryKey: contract.materialization.strategy === "append" ? [] : contract.primaryKey,
          executor,
        },
        onEvent,
      );
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      this.stopFile = undefined;
      throw err;
    }
    this.driver = driver;
    const next = async (): Promise<DriverEvent | undefined> => {
      for (;;) {
        const e = events.shift();
        if (e) return e;
        // Its exit is final once its last lines are read: the error that explains it may come last.
        const exited = await Promise.race([driver.finished.then(() => "exit" as const), new Promise<"event">((r) => (wake = () => r("event")))]);
        wake = undefined;
        if (exited === "exit" && events.length === 0) return undefined;
      }
    };
    try {
      for (;;) {
        const e = await next();
        if (!e) throw new SparkDriverError(`the Spark driver exited before the stream ended: ${driver.tail()}`);
        if (e.event === "committed") {
          const report: SparkBatchReport = {
            batchId: e.batchId as number,
            sourceCount: e.sourceCount as number,
            goodCount: e.goodCount as number,
            badCount: e.badCount as number,
            supersededCount: e.supersededCount as number,
            badAlreadyPresent: e.badAlreadyPresent as number,
            ruleCounts: ruleCountsOf(plan, e.checkCounts as number[], e.notObjectCount as number),
            durationMs: e.durationMs as number,
            phasesMs: { validate: e.validateMs as number, merge: e.mergeMs as number, quarantine: e.quarantineMs as number },
          };
          reports.push(report);
          o.onBatch?.(report);
        } else if (e.event === "error") {
          // What kept the stream from starting is bad input, named; anything later is a failed run.
          if (e.stage === "session") throw new SparkStartError(master, sparkLogReason(String(e.error), driver.tail()));
          if (e.stage === "source") throw new ConfigError("source.path", String(e.error));
          if (e.stage === "contract") throw new ConfigError("contract", `cannot be evaluated on engine "spark": ${String(e.error)}${inFile(contract)}`);
          throw new SparkDriverError(`the Spark stream failed: ${String(e.error)}`);
        } else if (e.event === "summary") {
          break;
        }
      }
      await driver.done;
    } catch (err) {
      // A failure of the stream (not a contract Spark refuses): what was committed comes along.
      if (err instanceof SparkDriverError) throw new SparkRunError(summary("error"), err);
      throw err;
    } finally {
      if (driver.child.exitCode === null && driver.child.signalCode === null) driver.kill("SIGTERM");
      await driver.done;
      await rm(dir, { recursive: true, force: true });
      this.driver = undefined;
      this.stopFile = undefined;
    }
    return summary(trigger === "available_now" ? "end" : "stop");
  }
}

/** Reads Delta tables through one driver (one SparkSession) until closed: tests, the CLI, the bench. */
export class DeltaReader {
  private constructor(private readonly driver: SparkDriver) {}

  static async start(options: { master?: string } = {}): Promise<DeltaReader> {
    const driver = await SparkDriver.start("serve", { master: options.master ?? "local[1]", appName: "lakelogic-read" });
    await driver.ready;
    return new DeltaReader(driver);
  }

  /** The table's rows; `select`: Spark SQL expressions to read instead of its columns. */
  async read(path: string, orderBy: string[] = [], select?: string[]): Promise<Array<Record<string, unknown>>> {
    const reply = await this.driver.request<{ rows: Array<Record<string, unknown>> }>("read", { path, orderBy, ...(select ? { select } : {}) });
    return reply.rows;
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
