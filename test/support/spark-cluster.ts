/**
 * A Spark standalone cluster on loopback: one master and N workers, started with the provisioned
 * `pyspark` package's own `bin/spark-class` (its `sbin/` has no start scripts). Each worker runs
 * in its own process group with its own work directory, so a test can SIGKILL one worker with
 * its executor and Python workers, as a machine that dies.
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
  /** Worker i's log (it names the executors it launched). */
  workerLog(i: number): string;
  /** SIGKILL worker i's process group: the worker, its executor and that executor's Python workers. */
  killWorker(i: number): void;
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
  const started: ChildProcess[] = [];
  for (let i = 0; i < workers; i++) {
    const work = join(dir, `work-${i}`);
    mkdirSync(work);
    started.push(
      start(`worker-${i}`, ["org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", String(await freePort()), "--work-dir", work]),
    );
  }
  for (let i = 0; i < workers; i++) {
    await waitFor(`Spark worker ${i}`, () => Promise.resolve(/Successfully registered with master/.test(read(`worker-${i}`))), 120_000);
  }
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
    workerLog: (i) => read(`worker-${i}`),
    killWorker: (i) => kill(started[i]!),
    async stop() {
      procs.forEach(kill);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
