/**
 * A throwaway Pub/Sub server for tests and benchmarks: Google's own in-memory fake
 * (`cloud.google.com/go/pubsub/v2/pstest`, the gRPC API the client libraries speak) wrapped in the
 * few lines of scripts/pstest/main.go, built from the Go module proxy by
 * `scripts/provision-pubsub.sh` (CI runs it; if the build is missing, `startPubSub` runs it too).
 * It listens on 127.0.0.1 on a port it picks itself, so there is no port race.
 *
 * ```ts
 * const ps = await requireService("connectors/pubsub (pstest)", () => startPubSub());
 * afterAll(() => ps?.stop());
 * const { subscription } = await ps!.createSubscription("orders", { ordering: true });
 * ```
 *
 * `startPubSub` sets `PUBSUB_EMULATOR_HOST` in `process.env` (the client honours it: no TLS, no
 * credentials); `ps.env` has it for child processes. The fake reads its standard input and exits
 * when it closes, so it dies with the test process even on SIGKILL.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PubSub } from "@google-cloud/pubsub";

const PROVISION_HINT = "run `bash scripts/provision-pubsub.sh` (builds Google's pstest fake with Go from the Go module proxy)";
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

export const PUBSUB_PROJECT = "lakelogic-test";

export interface PubSubMessageInfo {
  id: string;
  deliveries: number;
  acks: number;
  orderingKey?: string;
  topic: string;
}

export interface PubSubServer {
  /** `127.0.0.1:<port>`, the value of PUBSUB_EMULATOR_HOST. */
  host: string;
  env: Record<string, string>;
  projectId: string;
  /** A client for the test itself (topics, subscriptions, publishing). */
  pubsub: PubSub;
  /** Create a topic and a subscription to it, both named after `name`. */
  createSubscription(
    name: string,
    options?: { ordering?: boolean; ackDeadlineSeconds?: number },
  ): Promise<{ topic: string; subscription: string }>;
  /** Every message ever published, with how often it was delivered and acknowledged. */
  messages(): Promise<PubSubMessageInfo[]>;
  stop(): Promise<void>;
}

export interface StartPubSubOptions {
  /** Lowest ack deadline the fake accepts (seconds, >= 1). Default 10, as the real service. */
  minAckDeadlineSeconds?: number;
  startTimeoutMs?: number;
}

export function findPstest(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LAKELOGIC_PSTEST) {
    if (existsSync(env.LAKELOGIC_PSTEST)) return env.LAKELOGIC_PSTEST;
    throw new Error(`LAKELOGIC_PSTEST=${env.LAKELOGIC_PSTEST} does not exist; ${PROVISION_HINT}`);
  }
  try {
    const out = execFileSync("bash", [join(repoRoot, "scripts", "provision-pubsub.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 10 * 60_000,
      env: { ...env, LAKELOGIC_CACHE: env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic") },
    });
    const bin = out.trim().split("\n").pop() ?? "";
    if (bin && existsSync(bin)) return bin;
    throw new Error(`provision-pubsub.sh printed ${JSON.stringify(out.trim())}`);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`the Pub/Sub fake could not be built${stderr ? `: ${stderr.slice(-1500)}` : ""}; ${PROVISION_HINT}`, { cause: err });
  }
}

export async function startPubSub(options: StartPubSubOptions = {}): Promise<PubSubServer> {
  const bin = findPstest();
  const args = ["-host", "127.0.0.1", "-port", "0", "-debug-port", "0", "-exit-on-stdin-close"];
  if (options.minAckDeadlineSeconds !== undefined) args.push("-min-ack-deadline", `${options.minAckDeadlineSeconds}s`);
  const child: ChildProcess = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  const { host, debug } = await new Promise<{ host: string; debug: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`pstest did not start within ${options.startTimeoutMs ?? 15_000} ms: ${output}`));
    }, options.startTimeoutMs ?? 15_000);
    const check = () => {
      const h = /pstest listening on (\S+)/.exec(output)?.[1];
      const d = /debug listening on (\S+)/.exec(output)?.[1];
      if (h && d) {
        clearTimeout(timer);
        resolve({ host: h.replace(/^\[::\]|^0\.0\.0\.0/, "127.0.0.1"), debug: d });
      }
    };
    child.stdout!.on("data", (c: Buffer) => {
      output += c.toString();
      check();
    });
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${bin}: ${err.message}`, { cause: err }));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`pstest exited with ${code} during start-up: ${output}`));
    });
  });
  child.removeAllListeners("exit");
  process.env.PUBSUB_EMULATOR_HOST = host;
  const pubsub = new PubSub({ projectId: PUBSUB_PROJECT });
  let stopping: Promise<void> | undefined;
  return {
    host,
    env: { PUBSUB_EMULATOR_HOST: host },
    projectId: PUBSUB_PROJECT,
    pubsub,
    async createSubscription(name, { ordering = false, ackDeadlineSeconds = 10 } = {}) {
      const [topic] = await pubsub.createTopic(name);
      await topic.createSubscription(name, { enableMessageOrdering: ordering, ackDeadlineSeconds });
      return { topic: name, subscription: name };
    },
    async messages() {
      const res = await fetch(`http://${debug}/messages`);
      return (await res.json()) as PubSubMessageInfo[];
    },
    stop() {
      stopping ??= (async () => {
        await pubsub.close().catch(() => undefined);
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
          child.stdin?.end();
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
          await exited;
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
}
