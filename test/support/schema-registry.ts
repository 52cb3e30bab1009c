/**
 * A throwaway schema registry for tests: Apicurio Registry 2.x (a real registry; its
 * Confluent-compatible API is at `/apis/ccompat/v7`), in-memory storage, on 127.0.0.1 and a free
 * port, a small heap. The distribution comes from Maven Central only, via
 * `scripts/provision-schema-registry.sh` (CI runs it; if the cache is missing, `startSchemaRegistry`
 * runs it too).
 *
 * Home lookup: `$LAKELOGIC_SCHEMA_REGISTRY_HOME`, else
 * `${LAKELOGIC_CACHE:-~/.cache/lakelogic}/apicurio-registry-<ver>` (`<ver>` = `$APICURIO_VERSION`,
 * default 2.6.13.Final).
 *
 * ```ts
 * const registry = await requireService("connectors/schema registry (Apicurio)", () => startSchemaRegistry());
 * afterAll(() => registry?.stop());
 * const id = await registry!.register("orders-value", "AVRO", JSON.stringify(schema));
 * ```
 *
 * Clean-up: `stop()` ends the JVM; an exit hook and a detached watchdog do it if the test process
 * dies first.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { delay, freePort, javaBinary, logTail, startWatchdog, stopProcess } from "./proc.js";

export const APICURIO_VERSION = process.env.APICURIO_VERSION ?? "2.6.13.Final";
const PROVISION_HINT = "run `bash scripts/provision-schema-registry.sh` (fetches Apicurio Registry from Maven Central; needs Java 17 and Maven)";
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const runnerJar = () => `apicurio-registry-app-${APICURIO_VERSION}-runner.jar`;

export interface SchemaRegistryServer {
  /** The Confluent-compatible base URL: `http://127.0.0.1:<port>/apis/ccompat/v7`. */
  url: string;
  port: number;
  /** Register a schema under `subject` (Confluent API) and return its global id. */
  register(subject: string, schemaType: "AVRO" | "PROTOBUF", schema: string): Promise<number>;
  stop(): Promise<void>;
  logTail(): Promise<string>;
}

export function findSchemaRegistryHome(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.LAKELOGIC_SCHEMA_REGISTRY_HOME;
  if (override) {
    if (existsSync(join(override, runnerJar()))) return override;
    throw new Error(`LAKELOGIC_SCHEMA_REGISTRY_HOME=${override} holds no ${runnerJar()}; ${PROVISION_HINT}`);
  }
  const cache = env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic");
  const home = join(cache, `apicurio-registry-${APICURIO_VERSION}`);
  if (existsSync(join(home, ".complete"))) return home;
  try {
    const out = execFileSync("bash", [join(repoRoot, "scripts", "provision-schema-registry.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 5 * 60_000,
      env: { ...env, APICURIO_VERSION },
    });
    const dir = out.trim().split("\n").pop() ?? "";
    if (dir && existsSync(join(dir, ".complete"))) return dir;
    throw new Error(`provision-schema-registry.sh printed ${JSON.stringify(out.trim())}`);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`Apicurio Registry not found in ${home} and provisioning failed${stderr ? `: ${stderr}` : ""}; ${PROVISION_HINT}`, { cause: err });
  }
}

export async function startSchemaRegistry(options: { startTimeoutMs?: number; heapMb?: number } = {}): Promise<SchemaRegistryServer> {
  const home = findSchemaRegistryHome();
  const baseDir = await mkdtemp(join(tmpdir(), "lakelogic-registry-"));
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const logFile = join(baseDir, "registry.log");
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const log = await open(logFile, "w");
    let child: ChildProcess;
    try {
      child = spawn(
        javaBinary(),
        [
          `-Xmx${options.heapMb ?? 384}m`,
          "-XX:+UseSerialGC",
          "-XX:-UsePerfData",
          `-Dquarkus.http.host=127.0.0.1`,
          `-Dquarkus.http.port=${port}`,
          "-jar",
          join(home, runnerJar()),
        ],
        { stdio: ["ignore", log.fd, log.fd], cwd: baseDir },
      );
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", (err) => reject(new Error(`cannot run java for Apicurio Registry (set JAVA_HOME): ${err.message}`, { cause: err })));
      });
    } finally {
      await log.close();
    }
    const url = `http://127.0.0.1:${port}/apis/ccompat/v7`;
    const ready = await waitReady(url, child, Date.now() + timeoutMs);
    if (ready !== "ready") {
      child.kill("SIGKILL");
      const text = await logTail(logFile);
      if (/Address already in use|BindException|Port .* in use/i.test(text) && attempt < 3) continue;
      await rm(baseDir, { recursive: true, force: true });
      throw new Error(ready === "timeout" ? `Apicurio Registry did not answer on ${url} within ${timeoutMs} ms: ${text}` : `Apicurio Registry exited during start-up: ${text}`);
    }
    return running(child, url, port, baseDir, logFile);
  }
}

function running(child: ChildProcess, url: string, port: number, baseDir: string, logFile: string): SchemaRegistryServer {
  const watchdog = startWatchdog(child.pid, baseDir);
  const onExit = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", onExit);
  child.unref();
  let stopping: Promise<void> | undefined;
  return {
    url,
    port,
    async register(subject, schemaType, schema) {
      const res = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`, {
        method: "POST",
        headers: { "content-type": "application/vnd.schemaregistry.v1+json" },
        body: JSON.stringify({ schemaType, schema }),
      });
      const body = (await res.json()) as { id?: number; message?: string };
      if (!res.ok || typeof body.id !== "number") throw new Error(`registering ${subject} failed: ${res.status} ${JSON.stringify(body)}`);
      return body.id;
    },
    stop() {
      stopping ??= (async () => {
        process.removeListener("exit", onExit);
        child.ref();
        await stopProcess(child, 10_000);
        watchdog?.kill("SIGKILL");
        await rm(baseDir, { recursive: true, force: true });
      })();
      return stopping;
    },
    logTail: () => logTail(logFile),
  };
}

async function waitReady(url: string, child: ChildProcess, deadline: number): Promise<"ready" | "exited" | "timeout"> {
  let exited = false;
  child.once("exit", () => (exited = true));
  while (Date.now() < deadline) {
    if (exited) return "exited";
    try {
      const res = await fetch(`${url}/subjects`);
      if (res.ok) return "ready";
    } catch {
      // not listening yet
    }
    await delay(200);
  }
  return "timeout";
}

