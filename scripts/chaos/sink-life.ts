/**
 * One life of a StreamSink consumer (`lakelogic run` in a child process) under the chaos
 * harness: started, then SIGKILLed as its plan says — after a random delay, or right after its
 * n-th write (before that batch's commit) — or left to finish.
 *
 * With the checkpoint in the lake (`checkpoint: "target"`) a batch's write is its commit: there is
 * no moment between them, and the steps a plan counts are the commits the run logs instead.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const childScript = fileURLToPath(new URL("../../test/crash/chaos-run-child.ts", import.meta.url));

/**
 * `delay`: from the spawn (start-up, opening, the first reads); `midStream`: that long after the
 * first write, wherever the run then is; `afterWrite`: right after the n-th write, before its commit
 * (with writeIsCommit: right after the n-th commit, as the next batch is read).
 */
export type SinkPlan = { kill: "delay"; ms: number } | { kill: "midStream"; ms: number } | { kill: "afterWrite"; n: number } | { kill: "none" };

export interface SinkLife {
  killed: boolean;
  exitCode: number | null;
  /** Highest batch id this life announced as written. */
  maxWritten: number;
  /** The kill landed between a write and its commit (the hook point). */
  atHook: boolean;
  output: string;
}

export interface SinkLifeOptions {
  /**
   * Run the life as a machine of its own, as test/temporal/support.ts spawnWorker does: a
   * private mount namespace (root only) with an empty tmpfs over this directory.
   */
  privateDisk?: string;
  /** The checkpoint is in the lake: count logged commits as the steps (there is no hook point). */
  writeIsCommit?: boolean;
}

export function sinkLife(args: string[], env: Record<string, string>, plan: SinkPlan, options: SinkLifeOptions = {}): Promise<SinkLife> {
  const { privateDisk, writeIsCommit = false } = options;
  return new Promise((resolve, reject) => {
    const node = [process.execPath, "--import", import.meta.resolve("tsx"), childScript, ...args];
    // `exec` keeps the consumer's pid the child's, so the SIGKILL reaches it.
    const [command, ...argv] = privateDisk ? ["unshare", "-m", "--propagation", "private", "sh", "-c", 'mount -t tmpfs none "$0" && exec "$@"', privateDisk, ...node] : node;
    const child = spawn(command!, argv, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env, ...(plan.kill === "afterWrite" && !writeIsCommit ? { LL_HANG_ON_WRITE: String(plan.n) } : {}) },
    });
    let output = "";
    let maxWritten = 0;
    let writes = 0;
    let killed = false;
    let atHook = false;
    const kill = () => {
      if (killed || child.exitCode !== null) return;
      killed = true;
      child.kill("SIGKILL");
    };
    let timer = plan.kill === "delay" ? setTimeout(kill, plan.ms) : undefined;
    // A step: "written <id>" on stdout (the hook), or with writeIsCommit the text log's commit line on stderr.
    const step = writeIsCommit ? /\bbatch committed\b.*\bbatch=(\d+)\b/ : /^written (\d+)$/;
    const lines = (stream: "stdout" | "stderr") => {
      let pending = "";
      return (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-20_000);
        if ((stream === "stderr") !== writeIsCommit) return;
        pending += chunk.toString();
        const complete = pending.split("\n");
        pending = complete.pop()!;
        for (const line of complete) {
          const m = step.exec(line);
          if (!m) continue;
          writes++;
          if (plan.kill === "midStream" && writes === 1) timer = setTimeout(kill, plan.ms);
          maxWritten = Math.max(maxWritten, Number(m[1]));
          if (plan.kill === "afterWrite" && writes === plan.n && !killed) {
            atHook = !writeIsCommit;
            kill();
          }
        }
      };
    };
    child.stdout.on("data", lines("stdout"));
    child.stderr.on("data", lines("stderr"));
    child.on("error", reject);
    child.on("exit", (exitCode, signal) => {
      if (timer) clearTimeout(timer);
      // A kill that raced a normal exit did not happen: the signal decides.
      const died = killed && signal === "SIGKILL";
      resolve({ killed: died, exitCode, maxWritten, atHook: atHook && died, output });
    });
  });
}
