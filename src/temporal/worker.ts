import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { NativeConnection, Worker, type WorkerOptions } from "@temporalio/worker";
import { createBatchActivities, createSharedActivities } from "../../activities/index.js";
import { StreamRuntime } from "./stream-runtime.js";

export const DEFAULT_TASK_QUEUE = "lakelogic";

export interface LakeLogicWorkerOptions {
  /** host:port of the Temporal frontend. Default `TEMPORAL_ADDRESS` or 127.0.0.1:7233. */
  address?: string;
  namespace?: string;
  /** The shared queue that runs workflows and hands out worker queues. Default `lakelogic`. */
  taskQueue?: string;
  /** How long in-flight activities get to finish on shutdown. Default 30 s. */
  shutdownGraceTimeMs?: number;
  /** A pre-built workflow bundle (tests build it once per file); default: bundle `workflows/`. */
  workflowBundle?: WorkerOptions["workflowBundle"];
  /** Concurrent batch activities on this worker. Default 4. */
  maxConcurrentActivities?: number;
  /** This worker's own queue; default `<taskQueue>@<host>-<pid>-<random>`. Must be unique per process. */
  workerQueue?: string;
  /** Worker identity shown in Temporal; default `<pid>@<host>`. */
  identity?: string;
}

export interface LakeLogicWorker {
  /** This worker's own queue: batch activities routed here stay on this process. */
  readonly workerQueue: string;
  /** What this worker holds between activities (open sources, the spool); for tests and diagnostics. */
  readonly runtime: StreamRuntime;
  run(): Promise<void>;
  shutdown(): void;
}

/** Path of the workflow entry point, whether running from TypeScript sources or a build. */
export function workflowsPath(): string {
  const ts = fileURLToPath(new URL("../../workflows/index.ts", import.meta.url));
  return existsSync(ts) ? ts : fileURLToPath(new URL("../../workflows/index.js", import.meta.url));
}

/**
 * One LakeLogic worker process = two Temporal workers on one connection: the shared queue
 * (workflows, `openStream`, and the local activities validate/write/ack) and this process's
 * own queue (fetchBatch), the worker-specific task queue pattern that keeps a batch's spool local
 * (the spool is this process's memory).
 */
export async function createLakeLogicWorker(options: LakeLogicWorkerOptions = {}): Promise<LakeLogicWorker> {
  const address = options.address ?? process.env.TEMPORAL_ADDRESS ?? "127.0.0.1:7233";
  const namespace = options.namespace ?? process.env.TEMPORAL_NAMESPACE ?? "default";
  const taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  const workerQueue = options.workerQueue ?? `${taskQueue}@${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const identity = options.identity ? { identity: options.identity } : {};
  const shutdownGraceTime = options.shutdownGraceTimeMs ?? 30_000;

  const connection = await NativeConnection.connect({ address });
  const runtime = new StreamRuntime();
  const sharedWorker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: workflowsPath() }),
    // Batch activities are registered here too: validate, write and ack run as local
    // activities in the process that executes the workflow task.
    activities: { ...createSharedActivities(runtime, workerQueue), ...createBatchActivities(runtime) },
    shutdownGraceTime,
    ...identity,
  });
  const batchWorker = await Worker.create({
    connection,
    namespace,
    taskQueue: workerQueue,
    activities: createBatchActivities(runtime),
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? 4,
    shutdownGraceTime,
    ...identity,
  });

  return {
    workerQueue,
    runtime,
    async run() {
      try {
        await Promise.all([sharedWorker.run(), batchWorker.run()]);
      } finally {
        await runtime.close();
        await connection.close();
      }
    },
    shutdown() {
      if (sharedWorker.getState() === "RUNNING") sharedWorker.shutdown();
      if (batchWorker.getState() === "RUNNING") batchWorker.shutdown();
    },
  };
}
