/**
 * A helper process spoken to in JSON lines (the Spark driver, the Delta helper): requests carry
 * an id and get one reply each; lines with an `event` go to the event handler, and the first
 * `{"event": "ready"}` resolves `ready`. Stdout carries only protocol lines; stderr (the helper's
 * libraries' logging) is kept as a short tail for error messages.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createInterface } from "node:readline";

export type LineEvent = { event: string; [key: string]: unknown };
export type LineReply = { id: number; ok: boolean; error?: string; kind?: string; [key: string]: unknown };

export interface LineProcessOptions {
  /** Builds the error for the process's exit, a failed request or a write after exit. */
  error: (message: string) => Error;
  /** What the process is called in those errors ("the Spark driver"). */
  name: string;
  onEvent?: (e: LineEvent) => void;
  /** Mirror stderr to this process's stderr (a debug switch). */
  echoStderr?: boolean;
  env?: SpawnOptions["env"];
}

const TAIL = 4_000;

export class LineProcess {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: LineReply) => void; reject: (e: Error) => void }>();
  private stderrTail = "";
  private exited?: { code: number | null; signal: NodeJS.Signals | null };
  readonly child: ChildProcess;
  readonly ready: Promise<LineEvent>;
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Every line of stdout has been handled (its end reached). A process's exit can be seen before
   * its last lines are read: whoever waits for lines that may come last waits for this too.
   */
  readonly outputEnded: Promise<void>;

  constructor(command: string, args: readonly string[], private readonly options: LineProcessOptions) {
    this.child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], ...(options.env ? { env: options.env } : {}) });
    const child = this.child;
    let readyResolve!: (e: LineEvent) => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    this.ready.catch(() => undefined);
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-TAIL);
      if (options.echoStderr) process.stderr.write(d);
    });
    const lines = createInterface({ input: child.stdout! });
    this.outputEnded = new Promise((res) => lines.once("close", () => res()));
    lines.on("line", (line) => {
      let msg: LineReply | LineEvent;
      try {
        msg = JSON.parse(line) as LineReply | LineEvent;
      } catch {
        return;
      }
      if ("event" in msg && typeof msg.event === "string") {
        if (msg.event === "ready") readyResolve(msg as LineEvent);
        options.onEvent?.(msg as LineEvent);
        return;
      }
      const reply = msg as LineReply;
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      p.resolve(reply);
    });
    this.done = new Promise((res) => {
      const settle = (code: number | null, signal: NodeJS.Signals | null, why?: string) => {
        if (this.exited) return;
        this.exited = { code, signal };
        const err = options.error(`${options.name} ${why ?? `exited (${signal ?? `code ${code}`})`}: ${this.tail()}`);
        readyReject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        res({ code, signal });
      };
      child.on("exit", (code, signal) => settle(code, signal));
      child.on("error", (e) => settle(null, null, `could not start (${e.message})`));
    });
    child.stdin!.on("error", () => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exited !== undefined;
  }

  /** The stderr lines that look like errors, else its last lines. */
  tail(): string {
    const lines = this.stderrTail.split("\n").filter((l) => /ERROR|Exception|Error|error/.test(l));
    return (lines.length ? lines.slice(-6) : this.stderrTail.split("\n").slice(-6)).join("\n").trim();
  }

  send(msg: Record<string, unknown>): void {
    if (this.exited) throw this.options.error(`${this.options.name} has exited: ${this.tail()}`);
    this.child.stdin!.write(JSON.stringify(msg) + "\n");
  }

  /** One request; resolves to its reply (ok or not: the caller reads `ok`, `error`, `kind`). */
  async request(op: string, body: Record<string, unknown>): Promise<LineReply> {
    await this.ready;
    const id = this.nextId++;
    return new Promise<LineReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send({ ...body, op, id });
      } catch (err) {
        this.pending.delete(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Asks the process to stop (`{"op":"close"}`, then end of input) and waits for it. */
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
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(signal);
  }
}
