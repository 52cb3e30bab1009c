/** Small process and network helpers shared by the test-server launchers. */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1 (the OS picks it; we release it for the server to bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      srv.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `probe` until it returns true, or fail after `timeoutMs` with `what` in the message. */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, everyMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    await delay(everyMs);
  }
  throw new Error(`${what}: not ready after ${timeoutMs} ms${last instanceof Error ? ` (${last.message})` : ""}`);
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
export async function stopProcess(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The end of a server's log file, for error messages. */
export async function logTail(path: string, max = 3_000): Promise<string> {
  try {
    const text = (await readFile(path, "utf8")).trim();
    return text.length > max ? `…${text.slice(-max)}` : text || "(no output)";
  } catch {
    return "(no log)";
  }
}

export const timedOut = Symbol("timed out");

/** Race against a timer that is cleared afterwards (a pending timer would keep the worker alive). */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | typeof timedOut> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof timedOut>((resolve) => {
    timer = setTimeout(() => resolve(timedOut), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `$JAVA_HOME/bin/java` when set, else `java` from the PATH. */
export function javaBinary(): string {
  const home = process.env.JAVA_HOME;
  return home && existsSync(join(home, "bin", "java")) ? join(home, "bin", "java") : "java";
}

/** Kills a server (and removes its dir) if this process disappears without cleaning up. */
export function startWatchdog(pid: number | undefined, dir: string): ChildProcess | undefined {
  if (pid === undefined) return undefined;
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 2; done; kill -9 ${pid} 2>/dev/null; rm -rf '${dir.replace(/'/g, "'\\''")}'`;
  const dog = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  dog.unref();
  return dog;
}

/** `pid` and every process under it (Linux's /proc children lists), children first. */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // Gone already, or no such list: the process alone.
  }
  return [...children.flatMap(processTree), pid];
}

/**
 * SIGKILLs `pid` with everything under it at once, as a machine that dies: PySpark's driver and
 * its JVM, so neither shuts down cleanly (a JVM whose Python dies alone unregisters the app).
 */
export function killTree(pid: number): void {
  for (const p of processTree(pid)) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}
