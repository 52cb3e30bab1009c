/**
 * Throwaway object-store servers for tests, each a real implementation of its cloud's API on
 * 127.0.0.1, a free port, keeping data in memory:
 *
 * - S3: moto in server mode (PyPI `moto[server]`, a private venv; `scripts/provision-s3.sh`)
 * - Azure Blob: Azurite (npm `azurite`, its own cache dir; `scripts/provision-azurite.sh`)
 * - GCS: fake-gcs-server (Go module proxy; `scripts/provision-gcs.sh`)
 *
 * CI runs the provision scripts; if a cache is missing, the start function runs its script too.
 *
 * ```ts
 * const s3 = await requireService("checkpoint/s3 (moto)", () => startS3());
 * afterAll(() => s3?.stop());
 * await s3!.createBucket("ckpt");
 * ```
 *
 * Clean-up: `stop()` ends the server; an exit hook and a detached watchdog do it if the test
 * process dies first, so no server outlives its test run.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import { delay, freePort, logTail, startWatchdog, stopProcess } from "./proc.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/** Dummy credentials for the AWS default chain (moto does not check them). */
export const S3_TEST_CREDENTIALS = { accessKeyId: "test", secretAccessKey: "test" } as const;

/** Azurite's well-known development account and key, published in Microsoft's Azurite docs (not a secret). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/**
 * The environment a process needs to reach this S3 server through each SDK's default chain
 * (delta-rs and the AWS SDK read these), as a user's machine would have them.
 */
export function s3Environment(endpoint: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: endpoint,
    AWS_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
    AWS_REGION: "us-east-1",
    AWS_ALLOW_HTTP: "true",
  };
}

export interface ObjectStoreServer {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Create an empty bucket / container. */
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
  logTail(): Promise<string>;
}

export interface AzuriteServer extends ObjectStoreServer {
  /** A connection string for the dev account on this server (AZURE_STORAGE_CONNECTION_STRING). */
  connectionString: string;
}

/** Run a provision script (idempotent, cached) and return the path it prints last. */
export function provisioned(script: string, hint: string): string {
  try {
    const out = execFileSync("bash", [join(repoRoot, "scripts", script)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 10 * 60_000,
      env: { ...process.env, LAKELOGIC_CACHE: process.env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic") },
    });
    const path = out.trim().split("\n").pop() ?? "";
    if (path && existsSync(path)) return path;
    throw new Error(`${script} printed ${JSON.stringify(out.trim())}`);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`${script} failed${stderr ? `: ${stderr.slice(-1500)}` : ""}; ${hint}`, { cause: err });
  }
}

export async function startS3(): Promise<ObjectStoreServer> {
  const bin = provisioned("provision-s3.sh", "run `bash scripts/provision-s3.sh` (installs moto[server] from PyPI; needs python3 with venv)");
  // moto's own launcher, with its requests serialised so that conditional writes are atomic (see moto-serial.py).
  const python = join(dirname(bin), "python");
  const serial = fileURLToPath(new URL("./moto-serial.py", import.meta.url));
  const server = await startServer("moto", (port) => [python, [serial, "-H", "127.0.0.1", "-p", String(port)]], async (endpoint) => (await fetch(`${endpoint}/`)).ok);
  const client = new S3Client({ endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true, credentials: S3_TEST_CREDENTIALS });
  return {
    ...server,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      client.destroy();
      await server.stop();
    },
  };
}

export async function startAzurite(): Promise<AzuriteServer> {
  const bin = provisioned("provision-azurite.sh", "run `bash scripts/provision-azurite.sh` (installs azurite from npm into the cache)");
  const server = await startServer(
    "Azurite",
    // No --location: --inMemoryPersistence keeps nothing on disk. No telemetry: tests reach nothing outside loopback.
    (port) => [bin, ["--blobHost", "127.0.0.1", "--blobPort", String(port), "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck", "--silent"]],
    async (endpoint) => (await fetch(`${endpoint}/${AZURITE_ACCOUNT}?comp=list`)).status > 0,
  );
  const connectionString =
    `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};` +
    `BlobEndpoint=${server.endpoint}/${AZURITE_ACCOUNT};`;
  const service = BlobServiceClient.fromConnectionString(connectionString);
  return {
    ...server,
    connectionString,
    async createBucket(name) {
      await service.getContainerClient(name).create();
    },
  };
}

export async function startGcs(): Promise<ObjectStoreServer> {
  const bin = provisioned("provision-gcs.sh", "run `bash scripts/provision-gcs.sh` (builds fake-gcs-server with Go from the Go module proxy)");
  const server = await startServer(
    "fake-gcs-server",
    (port) => [bin, ["-scheme", "http", "-host", "127.0.0.1", "-port", String(port), "-backend", "memory", "-log-level", "error"]],
    async (endpoint) => (await fetch(`${endpoint}/storage/v1/b`)).ok,
  );
  return {
    ...server,
    async createBucket(name) {
      const res = await fetch(`${server.endpoint}/storage/v1/b?project=lakelogic-test`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name }),
      });
      if (!res.ok) throw new Error(`fake-gcs-server: creating bucket ${name}: HTTP ${res.status} ${await res.text()}`);
    },
  };
}

type Launch = (port: number) => [string, string[]];

/** Start a server on a free loopback port and wait (bounded) until `ready` says it answers. */
async function startServer(
  name: string,
  launch: Launch,
  ready: (endpoint: string) => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<Omit<ObjectStoreServer, "createBucket">> {
  const dir = await mkdtemp(join(tmpdir(), `lakelogic-${name.toLowerCase().replace(/\W+/g, "-")}-`));
  const logFile = join(dir, "server.log");
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const [bin, args] = launch(port);
    const log = await open(logFile, "w");
    let child: ChildProcess;
    try {
      child = spawn(bin, args, { cwd: dir, stdio: ["ignore", log.fd, log.fd] });
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", (err) => reject(new Error(`cannot run ${bin}: ${err.message}`, { cause: err })));
      });
    } finally {
      await log.close();
    }
    const endpoint = `http://127.0.0.1:${port}`;
    const state = await waitReady(child, () => ready(endpoint), Date.now() + timeoutMs);
    if (state !== "ready") {
      child.kill("SIGKILL");
      const text = await logTail(logFile);
      if (/address already in use|EADDRINUSE/i.test(text) && attempt < 3) continue;
      await rm(dir, { recursive: true, force: true });
      throw new Error(state === "timeout" ? `${name} did not answer on ${endpoint} within ${timeoutMs} ms: ${text}` : `${name} exited during start-up: ${text}`);
    }
    const watchdog = startWatchdog(child.pid, dir);
    const onExit = () => child.kill("SIGKILL");
    process.once("exit", onExit);
    let stopping: Promise<void> | undefined;
    return {
      endpoint,
      stop() {
        stopping ??= (async () => {
          process.removeListener("exit", onExit);
          await stopProcess(child);
          watchdog?.kill("SIGKILL");
          await rm(dir, { recursive: true, force: true });
        })();
        return stopping;
      },
      logTail: () => logTail(logFile),
    };
  }
}

async function waitReady(child: ChildProcess, probe: () => Promise<boolean>, deadline: number): Promise<"ready" | "exited" | "timeout"> {
  let exited = false;
  child.once("exit", () => (exited = true));
  while (Date.now() < deadline) {
    if (exited) return "exited";
    try {
      if (await probe()) return "ready";
    } catch {
      // not listening yet
    }
    await delay(150);
  }
  return "timeout";
}

