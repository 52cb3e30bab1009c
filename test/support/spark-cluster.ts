/**
 * A Spark standalone cluster on loopback: one master and N workers, started with the provisioned
 * `pyspark` package's own `bin/spark-class` (its `sbin/` has no start scripts). Each worker runs
 * in its own process group with its own work directory, so a test can SIGKILL one worker with
 * its executor and Python workers, as a machine that dies, and start it again (a new machine in
 * its place) so that the next test has two live workers too.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SparkRuntime } from "../../src/engine/spark-home.js";
import { freePort, waitFor } from "./proc.js";

export interface SparkCluster {
  master: string;
  workers: ChildProcess[];
  /** The log of worker i's current process (it names the executors it launched). */
  workerLog(i: number): string;
  /** SIGKILL worker i's process group: the worker, its executor and that executor's Python workers. */
  killWorker(i: number): void;
  /** The workers killed and not started again. */
  killed(): number[];
  /** Starts killed worker i again, with a log of its own; resolves once it registered with the master. */
  restartWorker(i: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startSparkCluster(runtime: SparkRuntime, workers = 2): Promise<SparkCluster> {
  const sparkHome = execFileSync(runtime.python, ["-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"], { encoding: "utf8" }).trim();
  const dir = await mkdtemp(join(tmpdir(), "ll-spark-cluster-"));
  const env = { ...process.env, SPARK_HOME: sparkHome, SPARK_LOG_DIR: dir, PYSPARK_PYTHON: runtime.python };
  const procs: ChildProcess[] = [];
  const start = (name: string, args: string[]): ChildProcess => {
    const log = openSync(join(dir, `${name}.log`), "a");
    const child = spawn(join(sparkHome, "bin", "spark-class"), args, { env, detached: true, stdio: ["ignore", log, log] });
    procs.push(child);
    return child;
  };
  const port = await freePort();
  const master = `spark://127.0.0.1:${port}`;
  start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", String(port), "--webui-port", String(await freePort())]);
  const read = (name: string): string => {
    try {
      return readFileSync(join(dir, `${name}.log`), "utf8");
    } catch {
      return "";
    }
  };
  await waitFor("the Spark master", () => Promise.resolve(/Starting Spark master|I have been elected leader/.test(read("master"))), 120_000);
  // Each start of worker i logs to its own file: a restarted worker's registration is its own.
  const starts: number[] = [];
  const logName = (i: number): string => `worker-${i}.${starts[i]}`;
  const started: ChildProcess[] = [];
  const killedSet = new Set<number>();
  const startWorker = async (i: number): Promise<ChildProcess> => {
    starts[i] = (starts[i] ?? -1) + 1;
    const work = join(dir, `work-${i}`);
    mkdirSync(work, { recursive: true });
    return start(logName(i), ["org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", String(await freePort()), "--work-dir", work]);
  };
  const registered = (i: number): Promise<void> =>
    waitFor(`Spark worker ${i}`, () => Promise.resolve(/Successfully registered with master/.test(read(logName(i)))), 120_000);
  for (let i = 0; i < workers; i++) started.push(await startWorker(i));
  for (let i = 0; i < workers; i++) await registered(i);
  const kill = (c: ChildProcess): void => {
    try {
      if (c.pid !== undefined) process.kill(-c.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  return {
    master,
    workers: started,
    workerLog: (i) => read(logName(i)),
    killWorker(i) {
      kill(started[i]!);
      killedSet.add(i);
    },
    killed: () => [...killedSet].sort((a, b) => a - b),
    async restartWorker(i) {
      if (!killedSet.has(i)) throw new Error(`Spark worker ${i} is running`);
      started[i] = await startWorker(i);
      killedSet.delete(i);
      await registered(i);
    },
    async stop() {
      procs.forEach(kill);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
