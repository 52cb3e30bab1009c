/**
 * One Spark driver process (spark/driver.py) and its JSON-lines conversation: requests with an
 * id get one reply each, in order; lines with an `event` go to the event handler. The process
 * holds one SparkSession for its whole life; stderr (Spark's logging) is kept as a short tail
 * for error messages.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { NonRetriableError } from "../errors.js";
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

export type DriverEvent = { event: string; [key: string]: unknown };
type Reply = { id: number; ok: boolean; error?: string; [key: string]: unknown };

const TAIL = 4_000;

export class SparkDriver {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  private stderrTail = "";
  private exited?: { code: number | null; signal: NodeJS.Signals | null };
  readonly ready: Promise<DriverEvent>;
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly child: ChildProcess,
    private readonly dir: string,
    onEvent: (e: DriverEvent) => void,
  ) {
    let readyResolve!: (e: DriverEvent) => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    this.ready.catch(() => undefined);
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-TAIL);
      // LAKELOGIC_SPARK_DEBUG=1: Spark's own log on this process's stderr.
      if (process.env.LAKELOGIC_SPARK_DEBUG === "1") process.stderr.write(d);
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      let msg: Reply | DriverEvent;
      try {
        msg = JSON.parse(line) as Reply | DriverEvent;
      } catch {
        return;
      }
      if ("event" in msg && typeof msg.event === "string") {
        if (msg.event === "ready") readyResolve(msg as DriverEvent);
        onEvent(msg as DriverEvent);
        return;
      }
      const reply = msg as Reply;
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      p.resolve(reply);
    });
    this.done = new Promise((res) => {
      child.on("exit", (code, signal) => {
        this.exited = { code, signal };
        const err = new SparkDriverError(`the Spark driver exited (${signal ?? `code ${code}`}): ${this.tail()}`);
        readyReject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        res({ code, signal });
      });
    });
    child.stdin!.on("error", () => undefined);
  }

  /** Starts `driver.py MODE` with the config written to a private temp file. */
  static async start(mode: "serve" | "stream", config: DriverConfig, onEvent: (e: DriverEvent) => void = () => {}, runtime?: SparkRuntime): Promise<SparkDriver> {
    const rt = runtime ?? locateSpark();
    const dir = await mkdtemp(join(tmpdir(), "lakelogic-spark-"));
    const file = join(dir, "config.json");
    await writeFile(file, JSON.stringify({ ...config, jars: rt.jars }), { mode: 0o600 });
    const child = spawn(rt.python, ["-u", rt.driver, mode, file], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, PYSPARK_PYTHON: rt.python, PYSPARK_DRIVER_PYTHON: rt.python },
    });
    return new SparkDriver(child, dir, onEvent);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  tail(): string {
    const lines = this.stderrTail.split("\n").filter((l) => /ERROR|Exception|Error|error/.test(l));
    return (lines.length ? lines.slice(-6) : this.stderrTail.split("\n").slice(-6)).join("\n").trim();
  }

  send(msg: Record<string, unknown>): void {
    if (this.exited) throw new SparkDriverError(`the Spark driver has exited: ${this.tail()}`);
    this.child.stdin!.write(JSON.stringify(msg) + "\n");
  }

  /** One request; resolves to its reply, or rejects with the driver's error. */
  async request<T extends Record<string, unknown>>(op: string, body: Record<string, unknown>): Promise<T> {
    await this.ready;
    const id = this.nextId++;
    const reply = await new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send({ ...body, op, id });
      } catch (err) {
        this.pending.delete(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    if (!reply.ok) throw new SparkDriverError(reply.error ?? "the Spark driver failed the request");
    return reply as unknown as T;
  }

  /** Asks the driver to stop its session, waits for it, and removes the config file. */
  async close(): Promise<void> {
    if (!this.exited) {
      try {
        this.send({ op: "close" });
        this.child.stdin!.end();
      } catch {
        // already gone
      }
    }
    await this.done;
    await rm(this.dir, { recursive: true, force: true });
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(signal);
  }
}
