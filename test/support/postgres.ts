/**
 * A throwaway PostgreSQL server for tests: `initdb` into a fresh temp dir, start `postgres` on a
 * free 127.0.0.1 port (unix socket in the same temp dir), wait until it answers, and on `stop()`
 * shut it down and delete the dir. Nothing is downloaded here: the server binaries come from
 * Debian's `postgresql` package, which `scripts/provision-postgres.sh` installs (CI runs it).
 *
 * Bin dir lookup: `$LAKELOGIC_PG_BIN`, else the newest `/usr/lib/postgresql/<ver>/bin`, else
 * `initdb` on PATH. As root (CI), initdb/postgres refuse to run, so both run as the `postgres`
 * OS user (or `nobody` if it is missing; `$LAKELOGIC_PG_OS_USER` overrides) and the temp dir is
 * chowned to it.
 *
 * Pair it with `requireService` (./services.ts) so CI fails and local runs skip loudly.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, realpathSync, readFileSync } from "node:fs";
import { chown, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import pg from "pg";
import { delay, freePort, logTail, timedOut, withTimeout } from "./proc.js";

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust auth (no password). */
  url: string;
  host: "127.0.0.1";
  port: number;
  /** Directory holding the unix socket (`host=<socketDir>` also works). */
  socketDir: string;
  binDir: string;
  /** Shut down (fast mode) and delete the data dir. Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** Upper bound for initdb + start-up; default 60 s. */
  startTimeoutMs?: number;
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string>;
}

const PROVISION_HINT =
  "install the server with scripts/provision-postgres.sh (Debian package `postgresql`) " +
  "or point LAKELOGIC_PG_BIN at a directory holding initdb and postgres";

/** Find the directory with `initdb` and `postgres`; throws with a provisioning hint. */
export function findPostgresBinDir(env: NodeJS.ProcessEnv = process.env): string {
  const has = (dir: string) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres"));
  const override = env.LAKELOGIC_PG_BIN;
  if (override) {
    if (has(override)) return override;
    throw new Error(`LAKELOGIC_PG_BIN=${override} has no initdb/postgres; ${PROVISION_HINT}`);
  }
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    // Newest major version first ("9.6" < "15" numerically, not lexically).
    const versions = readdirSync(root).sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
    for (const v of versions) {
      const dir = join(root, v, "bin");
      if (has(dir)) return dir;
    }
  }
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, "initdb"))) {
      const real = dirname(realpathSync(join(dir, "initdb")));
      if (has(real)) return real;
    }
  }
  throw new Error(`PostgreSQL server binaries (initdb, postgres) not found; ${PROVISION_HINT}`);
}

/** Start a throwaway server. Rejects (never hangs) if it cannot be up within the time limit. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const binDir = findPostgresBinDir();
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  const owner = serverOwner();
  const baseDir = await mkdtemp(join(tmpdir(), "lakelogic-pg-"));
  let keepDir = false;
  try {
    if (owner) await chown(baseDir, owner.uid, owner.gid);
    const dataDir = join(baseDir, "data");
    const initLog = join(baseDir, "initdb.log");
    const init = await run(
      join(binDir, "initdb"),
      ["-D", dataDir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"],
      baseDir,
      owner,
      initLog,
      deadline,
    );
    if (init !== 0) throw new Error(`initdb exited with ${init}: ${await logTail(initLog)}`);

    // A free port can be taken between probing and binding: retry a few times.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const log = join(baseDir, `server-${attempt}.log`);
      const settings: Record<string, string> = {
        listen_addresses: "127.0.0.1",
        port: String(port),
        unix_socket_directories: baseDir,
        // Throwaway data: durability against an OS crash buys nothing here, and costs time.
        fsync: "off",
        synchronous_commit: "off",
        full_page_writes: "off",
        ...options.settings,
      };
      const args = ["-D", dataDir, ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])];
      const child = await spawnLogged(join(binDir, "postgres"), args, baseDir, owner, log);
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
      const up = await waitUntilReady(url, child, deadline);
      if (up === "ready") {
        const server = makeServer(child, baseDir, binDir, port, url);
        keepDir = true;
        return server;
      }
      await stopChild(child, 5_000);
      const text = await logTail(log);
      if (/could not bind|Address already in use/i.test(text) && attempt < 3 && Date.now() < deadline) continue;
      throw new Error(
        up === "timeout"
          ? `PostgreSQL did not accept connections within the start-up limit: ${text}`
          : `PostgreSQL exited during start-up: ${text}`,
      );
    }
  } finally {
    if (!keepDir) await rm(baseDir, { recursive: true, force: true });
  }
}

interface Owner {
  uid: number;
  gid: number;
}

/** As root, the OS user to run the server as (PostgreSQL refuses root); otherwise ourselves. */
function serverOwner(): Owner | undefined {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined;
  const candidates = process.env.LAKELOGIC_PG_OS_USER ? [process.env.LAKELOGIC_PG_OS_USER] : ["postgres", "nobody"];
  for (const user of candidates) {
    try {
      const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
      const gid = Number(execFileSync("id", ["-g", user], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
      if (Number.isInteger(uid) && uid > 0 && Number.isInteger(gid)) return { uid, gid };
    } catch {
      // try the next candidate
    }
  }
  throw new Error(`running as root and none of the OS users ${candidates.join(", ")} exists to run PostgreSQL`);
}

async function spawnLogged(
  cmd: string,
  args: string[],
  cwd: string,
  owner: Owner | undefined,
  logPath: string,
): Promise<ChildProcess> {
  // The log file is opened by us and handed over as the child's stdout/stderr.
  const log = await open(logPath, "w");
  try {
    const child = spawn(cmd, args, {
      cwd,
      stdio: ["ignore", log.fd, log.fd],
      env: { ...process.env, LC_ALL: "C", LANG: "C" },
      ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    return child;
  } finally {
    await log.close();
  }
}

async function run(
  cmd: string,
  args: string[],
  cwd: string,
  owner: Owner | undefined,
  logPath: string,
  deadline: number,
): Promise<number | string> {
  const child = await spawnLogged(cmd, args, cwd, owner, logPath);
  const result = await withTimeout(exitOf(child), deadline - Date.now());
  if (result === timedOut) {
    child.kill("SIGKILL");
    throw new Error(`${cmd} did not finish within the start-up limit`);
  }
  return result;
}

function exitOf(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
}

async function waitUntilReady(
  url: string,
  child: ChildProcess,
  deadline: number,
): Promise<"ready" | "exited" | "timeout"> {
  let exited = false;
  void exitOf(child).then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) return "exited";
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return "ready";
    } catch {
      // not up yet
    } finally {
      await client.end().catch(() => undefined);
    }
    await delay(100);
  }
  return exited ? "exited" : "timeout";
}

function makeServer(child: ChildProcess, baseDir: string, binDir: string, port: number, url: string): PostgresServer {
  // If the test process exits without stop() (crash, forgotten afterAll), don't leave a server
  // behind: immediate shutdown + best-effort removal, synchronously.
  const onExit = () => {
    try {
      child.kill("SIGQUIT");
      waitGoneSync(child.pid, 3_000);
    } catch {
      // already gone
    }
    try {
      execFileSync("rm", ["-rf", baseDir], { stdio: "ignore" });
    } catch {
      // best effort
    }
  };
  process.once("exit", onExit);
  // Our handle must not keep the test worker alive; the exit hook covers cleanup.
  child.unref();
  let stopping: Promise<void> | undefined;
  return {
    url,
    host: "127.0.0.1",
    port,
    socketDir: baseDir,
    binDir,
    stop() {
      stopping ??= (async () => {
        process.removeListener("exit", onExit);
        await stopChild(child, 15_000);
        await rm(baseDir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/** SIGINT = PostgreSQL "fast" shutdown; escalate to SIGKILL if it overstays. */
async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = exitOf(child);
  child.kill("SIGINT");
  if ((await withTimeout(exited, graceMs)) === timedOut) {
    child.kill("SIGKILL");
    await exited;
  }
}

/** Wait (blocking: used in the exit hook) until a pid is gone or a zombie. */
function waitGoneSync(pid: number | undefined, maxMs: number): void {
  if (pid === undefined) return;
  const until = Date.now() + maxMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (Date.now() < until) {
    let state: string | undefined;
    try {
      state = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0];
    } catch {
      return; // no such process
    }
    if (state === "Z" || state === undefined) return;
    Atomics.wait(pause, 0, 0, 50);
  }
}




