/**
 * A throwaway SQS-compatible server for tests and benchmarks: ElasticMQ (a real server speaking
 * the SQS JSON and query protocols) on 127.0.0.1, a free port, in-memory queues, a small heap.
 * The jars come from Maven Central only, via `scripts/provision-sqs.sh` (CI runs it; if the cache
 * is missing, `startSqs` runs it too).
 *
 * Lib dir lookup: `$LAKELOGIC_SQS_LIB`, else `${LAKELOGIC_CACHE:-~/.cache/lakelogic}/elasticmq-<ver>/lib`
 * (`<ver>` = `$ELASTICMQ_VERSION`, default 1.6.14).
 *
 * ```ts
 * const sqs = await requireService("connectors/sqs (ElasticMQ)", () => startSqs());
 * afterAll(() => sqs?.stop());
 * const url = await sqs!.createQueue("orders");
 * ```
 *
 * The connector takes its credentials from the AWS default chain, so `startSqs` puts dummy ones
 * (and a region) into `process.env` unless they are set; `sqs.env` has them for child processes.
 * Clean-up: `stop()` ends the JVM; an exit hook and a detached watchdog do it if the test process
 * dies first, so no server outlives its test run.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { delay, freePort, javaBinary, logTail, startWatchdog, stopProcess } from "./proc.js";

export const ELASTICMQ_VERSION = process.env.ELASTICMQ_VERSION ?? "1.6.14";
const PROVISION_HINT = "run `bash scripts/provision-sqs.sh` (fetches ElasticMQ from Maven Central; needs Java and Maven)";
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/** Dummy credentials for the AWS default chain (ElasticMQ does not check them). */
export const SQS_TEST_ENV = { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test", AWS_REGION: "us-east-1" } as const;

export interface SqsServer {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  port: number;
  /** Environment for child processes: credentials and region for the default chain. */
  env: Record<string, string>;
  /** An SDK client for the test itself (arranging queues, counting messages). */
  client: SQSClient;
  /** Create a queue (a name ending in `.fifo` makes a FIFO queue) and return its URL. */
  createQueue(name: string, attributes?: Record<string, string>): Promise<string>;
  /** Messages in the queue: visible, in flight (received, not deleted) and delayed. */
  depth(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number; total: number }>;
  stop(): Promise<void>;
  logTail(): Promise<string>;
}

export interface StartSqsOptions {
  startTimeoutMs?: number;
  heapMb?: number;
}

export function findElasticMqLib(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.LAKELOGIC_SQS_LIB;
  if (override) {
    if (existsSync(join(override, `elasticmq-server_2.13-${ELASTICMQ_VERSION}.jar`))) return override;
    throw new Error(`LAKELOGIC_SQS_LIB=${override} holds no ElasticMQ ${ELASTICMQ_VERSION} jars; ${PROVISION_HINT}`);
  }
  const cache = env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic");
  const lib = join(cache, `elasticmq-${ELASTICMQ_VERSION}`, "lib");
  if (existsSync(join(lib, ".complete"))) return lib;
  try {
    const out = execFileSync("bash", [join(repoRoot, "scripts", "provision-sqs.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 5 * 60_000,
      env: { ...env, ELASTICMQ_VERSION },
    });
    const dir = out.trim().split("\n").pop() ?? "";
    if (dir && existsSync(join(dir, ".complete"))) return dir;
    throw new Error(`provision-sqs.sh printed ${JSON.stringify(out.trim())}`);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`ElasticMQ jars not found in ${lib} and provisioning failed${stderr ? `: ${stderr}` : ""}; ${PROVISION_HINT}`, { cause: err });
  }
}

export async function startSqs(options: StartSqsOptions = {}): Promise<SqsServer> {
  const libDir = findElasticMqLib();
  for (const [k, v] of Object.entries(SQS_TEST_ENV)) process.env[k] ??= v;
  const baseDir = await mkdtemp(join(tmpdir(), "lakelogic-sqs-"));
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const logFile = join(baseDir, "elasticmq.log");
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const conf = join(baseDir, "elasticmq.conf");
    await writeFile(
      conf,
      [
        'include classpath("application.conf")',
        `node-address { protocol = http, host = 127.0.0.1, port = ${port}, context-path = "" }`,
        `rest-sqs { enabled = true, bind-port = ${port}, bind-hostname = "127.0.0.1", sqs-limits = strict }`,
        "rest-stats { enabled = false }",
        "",
      ].join("\n"),
    );
    const log = await open(logFile, "w");
    let child: ChildProcess;
    try {
      child = spawn(
        javaBinary(),
        [`-Xmx${options.heapMb ?? 256}m`, "-Xms32m", "-XX:+UseSerialGC", "-XX:-UsePerfData", `-Dconfig.file=${conf}`, "-cp", `${libDir}/*`, "org.elasticmq.server.Main"],
        { stdio: ["ignore", log.fd, log.fd] },
      );
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", (err) => reject(new Error(`cannot run java for ElasticMQ (set JAVA_HOME): ${err.message}`, { cause: err })));
      });
    } finally {
      await log.close();
    }
    const endpoint = `http://127.0.0.1:${port}`;
    const client = new SQSClient({ region: "us-east-1", endpoint, credentials: { accessKeyId: "test", secretAccessKey: "test" }, maxAttempts: 1 });
    const ready = await waitReady(client, child, Date.now() + timeoutMs);
    if (ready !== "ready") {
      child.kill("SIGKILL");
      client.destroy();
      const text = await logTail(logFile);
      if (/Address already in use|BindException/i.test(text) && attempt < 3) continue;
      await rm(baseDir, { recursive: true, force: true });
      throw new Error(ready === "timeout" ? `ElasticMQ did not answer on ${endpoint} within ${timeoutMs} ms: ${text}` : `ElasticMQ exited during start-up: ${text}`);
    }
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
      endpoint,
      port,
      env: { ...SQS_TEST_ENV },
      client,
      async createQueue(name, attributes = {}) {
        const fifo = name.endsWith(".fifo");
        const out = await client.send(
          new CreateQueueCommand({
            QueueName: name,
            Attributes: { ...(fifo ? { FifoQueue: "true", ContentBasedDeduplication: "true" } : {}), ...attributes },
          }),
        );
        return out.QueueUrl!;
      },
      async depth(queueUrl) {
        const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["All"] }));
        const n = (k: string) => Number(out.Attributes?.[k as keyof typeof out.Attributes] ?? 0);
        const visible = n("ApproximateNumberOfMessages");
        const inFlight = n("ApproximateNumberOfMessagesNotVisible");
        const delayed = n("ApproximateNumberOfMessagesDelayed");
        return { visible, inFlight, delayed, total: visible + inFlight + delayed };
      },
      stop() {
        stopping ??= (async () => {
          process.removeListener("exit", onExit);
          client.destroy();
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
}

async function waitReady(client: SQSClient, child: ChildProcess, deadline: number): Promise<"ready" | "exited" | "timeout"> {
  let exited = false;
  child.once("exit", () => (exited = true));
  while (Date.now() < deadline) {
    if (exited) return "exited";
    try {
      await client.send(new ListQueuesCommand({}));
      return "ready";
    } catch {
      await delay(150);
    }
  }
  return "timeout";
}

