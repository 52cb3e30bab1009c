/**
 * A real Temporal dev server for tests: `temporal server start-dev` on a free loopback port,
 * with LakeLogic's search attributes registered, backed by a SQLite file so that it can be
 * restarted mid-stream. The CLI binary is built once by scripts/provision-temporal.sh.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Connection } from "@temporalio/client";
import { SEARCH_ATTRIBUTES } from "../../src/temporal/search-attributes.js";
import { freePort, stopProcess, waitFor } from "./proc.js";

export interface TemporalServer {
  address: string;
  namespace: string;
  dbFile: string;
  stop(): Promise<void>;
  /** Stop and start again on the same port and database file. */
  restart(): Promise<void>;
}

const provisionScript = fileURLToPath(new URL("../../scripts/provision-temporal.sh", import.meta.url));

/** The cached CLI binary; builds it when absent only if `build` is set (CI provisions first). */
export function temporalBinary(build = false): string {
  const explicit = process.env.TEMPORAL_CLI;
  if (explicit && existsSync(explicit)) return explicit;
  const cache = process.env.LAKELOGIC_CACHE ?? join(process.env.HOME ?? tmpdir(), ".cache", "lakelogic");
  const bin = join(cache, `temporal-${process.env.TEMPORAL_CLI_VERSION ?? "1.5.1"}`, "temporal");
  if (existsSync(bin)) return bin;
  if (!build) throw new Error(`the Temporal CLI is not provisioned: run bash scripts/provision-temporal.sh (looked for ${bin})`);
  return execFileSync("bash", [provisionScript], { encoding: "utf8" }).trim();
}

export async function startTemporal(): Promise<TemporalServer> {
  const bin = temporalBinary();
  const dir = mkdtempSync(join(tmpdir(), "ll-temporal-"));
  const dbFile = join(dir, "temporal.sqlite");
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let log = "";

  const start = async () => {
    const args = ["server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", String(port), "--db-filename", dbFile, "--log-level", "error"];
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push("--search-attribute", `${name}=${type}`);
    child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    child.stderr!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    const exited = new Promise<never>((_, reject) =>
      child!.once("exit", (code) => reject(new Error(`temporal dev server exited with ${code}: ${log}`))),
    );
    // A cold dev server on two busy cores takes a while; the SDK's own 5 s probe is too short.
    await Promise.race([
      exited,
      waitFor(
        `temporal dev server on ${address}`,
        async () => {
          const conn = await Connection.connect({ address, connectTimeout: 1000 });
          try {
            await conn.workflowService.getSystemInfo({});
            return true;
          } finally {
            await conn.close();
          }
        },
        60_000,
        250,
      ),
    ]);
  };
  const stopServer = async () => {
    if (child) await stopProcess(child, 10_000);
    child = undefined;
  };

  await start();
  return {
    address,
    namespace: "default",
    dbFile,
    stop: async () => {
      await stopServer();
      rmSync(dir, { recursive: true, force: true });
    },
    restart: async () => {
      await stopServer();
      await start();
    },
  };
}
