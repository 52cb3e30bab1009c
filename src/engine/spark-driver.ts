/**
 * One Spark driver process (spark/driver.py) and its JSON-lines conversation: requests with an
 * id get one reply each, in order; lines with an `event` go to the event handler. The process
 * holds one SparkSession for its whole life; stderr (Spark's logging) is kept as a short tail
 * for error messages.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NonRetriableError } from "../errors.js";
import { LineProcess, type LineEvent } from "../util/line-process.js";
import { locateSpark, type SparkRuntime } from "./spark-home.js";

export class SparkDriverError extends NonRetriableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SPARK", message, options);
  }
}

export interface DriverConfig {
  master?: string;
  appName?: string;
  /** Extra Spark configuration (`spark.*` keys). */
  conf?: Record<string, string>;
  /** Maven coordinates Spark resolves at start-up (`spark.jars.packages`), beyond the provisioned jars. */
  packages?: string[];
  [key: string]: unknown;
}

export type DriverEvent = LineEvent;

/** The Spark driver process: a LineProcess whose failed requests are SparkDriverErrors. */
export class SparkDriver {
  private constructor(
    private readonly process: LineProcess,
    private readonly dir: string,
  ) {}

  get child(): ChildProcess {
    return this.process.child;
  }

  get ready(): Promise<DriverEvent> {
    return this.process.ready;
  }

  get done(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.process.done;
  }

  /** Exited, and its every stdout line handled (see LineProcess.outputEnded). */
  get finished(): Promise<void> {
    return this.process.done.then(() => this.process.outputEnded);
  }

  /** Starts `driver.py MODE` with the config written to a private temp file. */
  static async start(mode: "serve" | "stream", config: DriverConfig, onEvent: (e: DriverEvent) => void = () => {}, runtime?: SparkRuntime): Promise<SparkDriver> {
    const rt = runtime ?? locateSpark();
    const dir = await mkdtemp(join(tmpdir(), "lakelogic-spark-"));
    const file = join(dir, "config.json");
    await writeFile(file, JSON.stringify({ ...config, jars: rt.jars }), { mode: 0o600 });
    const child = new LineProcess(rt.python, ["-u", rt.driver, mode, file], {
      name: "the Spark driver",
      error: (message) => new SparkDriverError(message),
      onEvent,
      // LAKELOGIC_SPARK_DEBUG=1: Spark's own log on this process's stderr.
      echoStderr: process.env.LAKELOGIC_SPARK_DEBUG === "1",
      env: { ...process.env, PYSPARK_PYTHON: rt.python, PYSPARK_DRIVER_PYTHON: rt.python },
    });
    return new SparkDriver(child, dir);
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  tail(): string {
    return this.process.tail();
  }

  send(msg: Record<string, unknown>): void {
    this.process.send(msg);
  }

  /** One request; resolves to its reply, or rejects with the driver's error. */
  async request<T extends Record<string, unknown>>(op: string, body: Record<string, unknown>): Promise<T> {
    const reply = await this.process.request(op, body);
    if (!reply.ok) throw new SparkDriverError(reply.error ?? "the Spark driver failed the request");
    return reply as unknown as T;
  }

  /** Asks the driver to stop its session, waits for it, and removes the config file. */
  async close(): Promise<void> {
    await this.process.close();
    await rm(this.dir, { recursive: true, force: true });
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.process.kill(signal);
  }
}
