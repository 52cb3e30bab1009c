/**
 * A throwaway Apache Kafka broker for tests: KRaft single node (broker + controller in one JVM)
 * on 127.0.0.1, two free ports, a temp data dir, a small heap. Nothing is downloaded from
 * anywhere but Maven Central: the jars come from `scripts/provision-kafka.sh` (CI runs it; if
 * the cache is missing, `startKafka` runs it too).
 *
 * Lib dir lookup: `$LAKELOGIC_KAFKA_LIB`, else `${LAKELOGIC_CACHE:-~/.cache/lakelogic}/kafka-<ver>/lib`
 * (`<ver>` = `$KAFKA_VERSION`, default 4.1.1).
 *
 * Pair it with `requireService` (./services.ts) so CI fails and local runs skip loudly:
 *
 * ```ts
 * const kafka = await requireService("connectors/kafka", () => startKafka());
 * afterAll(() => kafka?.stop());
 * ```
 *
 * Clean-up: `stop()` shuts the JVM down and deletes the data dir. If the test process dies
 * without calling it, an exit hook kills the JVM, and a detached watchdog does the same even
 * when the test process itself was SIGKILLed — no broker outlives its test run.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { createConnection } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { delay, freePort, javaBinary, logTail, startWatchdog, timedOut, withTimeout } from "./proc.js";

const { Kafka, logLevel } = kafkajs;

export const KAFKA_VERSION = process.env.KAFKA_VERSION ?? "4.1.1";

export interface KafkaBroker {
  /** `["127.0.0.1:<port>"]` — pass straight to `brokers`. */
  brokers: string[];
  port: number;
  /**
   * A second listener on the same broker that requires SASL/PLAIN (no TLS), for tests that the
   * credentials are passed through: `{ brokers, mechanism: "plain", username, password }`.
   */
  sasl: { brokers: string[]; mechanism: "plain"; username: string; password: string };
  libDir: string;
  /** Temp dir holding the data dir, server.properties and broker.log. */
  baseDir: string;
  /** Stop (SIGTERM = controlled shutdown; SIGKILL after 20 s) and delete the data dir. Idempotent. */
  stop(): Promise<void>;
  /**
   * Stop the JVM and start it again on the same ports with the same data dir (topics, records
   * and committed group offsets survive). `hard: true` SIGKILLs instead of a controlled shutdown.
   */
  restart(options?: { hard?: boolean; downMs?: number }): Promise<void>;
  /** Create a topic (3 partitions unless told otherwise) and wait for its leaders. */
  createTopic(topic: string, partitions?: number): Promise<void>;
  /** The last lines of the broker's log, for failure messages. */
  logTail(): Promise<string>;
}

export interface StartKafkaOptions {
  /** Upper bound for format + start-up; default 90 s (a cold JVM on two shared cores). */
  startTimeoutMs?: number;
  /** JVM max heap; default 512 MiB. */
  heapMb?: number;
  /** Extra server.properties entries. */
  properties?: Record<string, string>;
  /**
   * More users of the SASL_PLAINTEXT + PLAIN listener, `{ name: password }` — e.g.
   * `{ alice: "…", $ConnectionString: "Endpoint=sb://…" }` for an Event Hubs-style login.
   */
  saslUsers?: Record<string, string>;
}

const PROVISION_HINT = "run `bash scripts/provision-kafka.sh` (fetches the broker from Maven Central; needs Java 17+ and Maven)";
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/** The broker's jar directory; provisions it (Maven Central only) when it is missing. */
export function findKafkaLib(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.LAKELOGIC_KAFKA_LIB;
  if (override) {
    if (existsSync(join(override, `kafka_2.13-${KAFKA_VERSION}.jar`)) || existsSync(join(override, ".complete"))) return override;
    throw new Error(`LAKELOGIC_KAFKA_LIB=${override} holds no Kafka jars; ${PROVISION_HINT}`);
  }
  const cache = env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic");
  const lib = join(cache, `kafka-${KAFKA_VERSION}`, "lib");
  if (existsSync(join(lib, ".complete"))) return lib;
  try {
    const out = execFileSync("bash", [join(repoRoot, "scripts", "provision-kafka.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 5 * 60_000,
      env: { ...env, KAFKA_VERSION },
    });
    const dir = out.trim().split("\n").pop() ?? "";
    if (dir && existsSync(join(dir, ".complete"))) return dir;
    throw new Error(`provision-kafka.sh printed ${JSON.stringify(out.trim())}`);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`Kafka broker jars not found in ${lib} and provisioning failed${stderr ? `: ${stderr}` : ""}; ${PROVISION_HINT}`, {
      cause: err,
    });
  }
}

/** Start a throwaway broker. Rejects (never hangs) if it cannot be up within the time limit. */
export async function startKafka(options: StartKafkaOptions = {}): Promise<KafkaBroker> {
  const libDir = findKafkaLib();
  const java = javaBinary();
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const heapMb = options.heapMb ?? 512;
  const baseDir = await mkdtemp(join(tmpdir(), "lakelogic-kafka-"));
  let started = false;
  try {
    const dataDir = join(baseDir, "data");
    await mkdir(dataDir);
    await writeFile(join(baseDir, "log4j2.yaml"), LOG4J2_YAML);
    const jvm = (main: string, args: string[], heap: number) => [
      `-Xmx${heap}m`,
      "-Xms64m",
      "-XX:+UseG1GC",
      "-XX:-UsePerfData",
      "-Djava.awt.headless=true",
      `-Dlog4j2.configurationFile=${join(baseDir, "log4j2.yaml")}`,
      "-cp",
      `${libDir}/*`,
      main,
      ...args,
    ];

    // Ports are probed free, then bound by the JVM: another process can slip in between, so
    // a bind failure is retried with new ports.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const controllerPort = await freePort();
      const saslPort = await freePort();
      const props = serverProperties(port, controllerPort, saslPort, dataDir, options.properties, options.saslUsers);
      const propsFile = join(baseDir, "server.properties");
      await writeFile(propsFile, props);
      if (attempt === 1) {
        // KRaft storage must be formatted once, with a cluster id (22-char base64url of 16 bytes).
        const clusterId = randomBytes(16).toString("base64url");
        const format = await runJava(
          java,
          // `--cluster-id=…` in one argument: an id that starts with "-" (1 in 64) would read as an option.
          jvm("kafka.tools.StorageTool", ["format", `--cluster-id=${clusterId}`, "-c", propsFile, "--ignore-formatted"], 256),
          join(baseDir, "format.log"),
          Math.min(timeoutMs, 60_000),
        );
        if (format !== 0) throw new Error(`kafka StorageTool format exited with ${format}: ${await logTail(join(baseDir, "format.log"))}`);
      }
      const deadline = Date.now() + timeoutMs;
      const logFile = join(baseDir, "broker.log");
      const startJvm = () => spawnJava(java, jvm("kafka.Kafka", [propsFile], heapMb), logFile);
      let child = await startJvm();
      const up = await waitUntilReady(port, child, deadline);
      if (up !== "ready") {
        await stopChild(child, 5_000, "SIGKILL");
        const text = await logTail(logFile);
        if (/Address already in use|BindException/i.test(text) && attempt < 3) continue;
        throw new Error(
          up === "timeout"
            ? `Kafka did not answer on 127.0.0.1:${port} within ${timeoutMs} ms: ${text}`
            : `Kafka exited during start-up: ${text}`,
        );
      }

      let watchdog = startWatchdog(child.pid, baseDir);
      const onExit = () => {
        try {
          child.kill("SIGKILL");
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
      child.unref();
      let stopping: Promise<void> | undefined;
      const brokers = [`127.0.0.1:${port}`];
      const broker: KafkaBroker = {
        brokers,
        port,
        sasl: { brokers: [`127.0.0.1:${saslPort}`], mechanism: "plain", username: SASL_USER, password: SASL_PASSWORD },
        libDir,
        baseDir,
        stop() {
          stopping ??= (async () => {
            process.removeListener("exit", onExit);
            await stopChild(child, 20_000, "SIGTERM");
            watchdog?.kill("SIGKILL");
            await rm(baseDir, { recursive: true, force: true });
          })();
          return stopping;
        },
        async restart({ hard = false, downMs = 0 } = {}) {
          if (stopping) throw new Error("restart() after stop()");
          await stopChild(child, 20_000, hard ? "SIGKILL" : "SIGTERM");
          watchdog?.kill("SIGKILL");
          if (downMs > 0) await delay(downMs);
          child = await startJvm();
          const again = await waitUntilReady(port, child, Date.now() + timeoutMs);
          if (again !== "ready") {
            await stopChild(child, 5_000, "SIGKILL");
            throw new Error(`Kafka did not come back after a restart (${again}): ${await logTail(logFile)}`);
          }
          child.unref();
          watchdog = startWatchdog(child.pid, baseDir);
        },
        async createTopic(topic, partitions = 3) {
          const admin = new Kafka({ brokers, clientId: "lakelogic-test-admin", logLevel: logLevel.NOTHING }).admin();
          await admin.connect();
          try {
            // Right after start-up, topics created at once can fail their wait for leaders: ask again.
            for (let attempt = 1; ; attempt++) {
              try {
                await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
                break;
              } catch (e) {
                if (attempt >= 10 || !/does not host this topic-partition|leader/i.test((e as Error).message)) throw e;
                await delay(200);
              }
            }
            // Leaders are elected; make sure the metadata every new client sees has them too.
            for (let i = 0; i < 50; i++) {
              // A broker that just started may not know the topic yet ("does not host this topic-partition").
              const meta = await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => undefined);
              const parts = meta?.topics[0]?.partitions ?? [];
              if (parts.length === partitions && parts.every((p) => p.leader >= 0)) break;
              await delay(100);
            }
          } finally {
            await admin.disconnect();
          }
        },
        logTail: () => logTail(logFile),
      };
      started = true;
      return broker;
    }
  } finally {
    if (!started) await rm(baseDir, { recursive: true, force: true });
  }
}

const SASL_USER = "lakelogic";
const SASL_PASSWORD = "lakelogic-test-secret";

/**
 * The listener's JAAS line: one `user_<name>="<password>"` per user. JAAS quotes and Java
 * properties escapes are avoided rather than handled: a test picks names and passwords without them.
 */
function plainJaas(users: Record<string, string>): string {
  const entries = Object.entries(users).map(([name, password]) => {
    if (/["\\\n]/.test(name + password) || !/^[A-Za-z0-9_$.-]+$/.test(name)) {
      throw new Error(`SASL test user ${JSON.stringify(name)}: names are [A-Za-z0-9_$.-]; passwords hold no quote, backslash or newline`);
    }
    return `user_${name}="${password}"`;
  });
  return `org.apache.kafka.common.security.plain.PlainLoginModule required ${entries.join(" ")};`;
}

function serverProperties(
  port: number,
  controllerPort: number,
  saslPort: number,
  dataDir: string,
  extra: Record<string, string> = {},
  saslUsers: Record<string, string> = {},
): string {
  const props: Record<string, string> = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort},SASL_PLAINTEXT://127.0.0.1:${saslPort}`,
    "advertised.listeners": `PLAINTEXT://127.0.0.1:${port},SASL_PLAINTEXT://127.0.0.1:${saslPort}`,
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    // SASL/PLAIN on its own listener (JAAS config scoped to it): proves credentials reach the broker.
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJaas({ [SASL_USER]: SASL_PASSWORD, ...saslUsers }),
    "log.dirs": dataDir,
    "num.partitions": "3",
    "auto.create.topics.enable": "false",
    // Single node: every internal topic has one replica, and one partition keeps start-up fast.
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    // Tests join groups constantly; the default 3 s wait for more members is pure delay here.
    "group.initial.rebalance.delay.ms": "0",
    // Two shared cores.
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.recovery.threads.per.data.dir": "1",
    // After a hard kill the restarted broker waits for its old registration to expire
    // (default 9 s); shorter keeps the broker-restart test quick without making it flaky.
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "1000",
    ...extra,
  };
  return Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n") + "\n";
}

/** WARN and above, plus the "started" line; to broker.log in the temp dir (stdout is redirected there). */
const LOG4J2_YAML = `Configuration:
  Appenders:
    Console:
      name: STDOUT
      target: SYSTEM_OUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
`;

async function spawnJava(java: string, args: string[], logPath: string): Promise<ChildProcess> {
  const log = await open(logPath, "a");
  try {
    const child = spawn(java, args, { stdio: ["ignore", log.fd, log.fd] });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err) =>
        reject(new Error(`cannot run ${java} (Kafka needs Java 17+; set JAVA_HOME): ${err.message}`, { cause: err })),
      );
    });
    return child;
  } finally {
    await log.close();
  }
}

async function runJava(java: string, args: string[], logPath: string, timeoutMs: number): Promise<number | string> {
  const child = await spawnJava(java, args, logPath);
  const result = await withTimeout(exitOf(child), timeoutMs);
  if (result === timedOut) {
    child.kill("SIGKILL");
    throw new Error(`java ${args.find((a) => a.startsWith("kafka.")) ?? ""} did not finish within ${timeoutMs} ms`);
  }
  return result;
}

async function waitUntilReady(port: number, child: ChildProcess, deadline: number): Promise<"ready" | "exited" | "timeout"> {
  let exited = child.exitCode !== null || child.signalCode !== null;
  void exitOf(child).then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) return "exited";
    if (await portOpen(port)) {
      const admin = new Kafka({
        brokers: [`127.0.0.1:${port}`],
        clientId: "lakelogic-test-probe",
        logLevel: logLevel.NOTHING,
        connectionTimeout: 2_000,
        retry: { retries: 0 },
      }).admin();
      try {
        await admin.connect();
        const cluster = await admin.describeCluster();
        // The controller is elected and the broker registered: it can create topics now.
        if (cluster.brokers.length > 0 && cluster.controller !== null && cluster.controller >= 0) return "ready";
      } catch {
        // not ready yet
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    }
    await delay(200);
  }
  return exited ? "exited" : "timeout";
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.setTimeout(1_000, () => done(false));
  });
}

function exitOf(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
}

async function stopChild(child: ChildProcess, graceMs: number, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  // The handle was unref'd so an idle test process can exit; while we wait for the exit it must
  // keep the process alive (or a script with nothing else pending would end mid-await).
  child.ref();
  const exited = exitOf(child);
  child.kill(signal);
  if (signal !== "SIGKILL" && (await withTimeout(exited, graceMs)) === timedOut) child.kill("SIGKILL");
  await exited;
}




