import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { NativeConnection, Runtime, Worker, type WorkerOptions } from "@temporalio/worker";
import { createBatchActivities, createMaintainActivities, createSharedActivities } from "../../activities/index.js";
import type { BatchActivities } from "../../workflows/types.js";
import { ConfigError } from "../errors.js";
import { collapseRepeats, type Logger } from "../observe/logger.js";
import { failedDatasetRules } from "../pipeline/rule-tally.js";
import { startFields, type StreamStart } from "../pipeline/start.js";
import type { StreamLabels, StreamMetrics } from "../observe/metrics.js";
import { StreamRuntime, type StreamRuntimeOptions } from "./stream-runtime.js";

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
  /** Where the worker's lines go (info: each stream it opens, each batch it commits); default none. */
  logger?: Logger;
  /** Record the batches this process writes (and the lag its fetches see) into these metrics. */
  metrics?: StreamMetrics;
  /**
   * host:port where the Temporal SDK serves its own worker metrics (Prometheus, /metrics): task
   * slots, poll and schedule latencies. Installs the SDK runtime, so it must come before any other
   * Temporal connection in this process.
   */
  sdkMetricsAddress?: string;
}

export interface LakeLogicWorker {
  /** The Temporal frontend it polls, its namespace and the shared queue, as resolved from the options. */
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
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

  const logger = options.logger;
  if (options.sdkMetricsAddress !== undefined || logger) installRuntime(logger, options.sdkMetricsAddress);
  const connection = await NativeConnection.connect({ address });
  const onCommitted = committedListener(logger, options.metrics);
  const runtime = new StreamRuntime({
    ...(onCommitted ? { onCommitted } : {}),
    ...(logger ? { onOpened: (start: StreamStart) => logger.info("stream started", startFields(start)) } : {}),
  });
  const batchActivities = observed(createBatchActivities(runtime), options.metrics);
  const sharedWorker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: workflowsPath() }),
    // Batch activities are registered here too: validate, write and ack run as local
    // activities in the process that executes the workflow task. Lake maintenance runs here too.
    activities: { ...createSharedActivities(runtime, workerQueue), ...batchActivities, ...createMaintainActivities() },
    shutdownGraceTime,
    ...identity,
  });
  const batchWorker = await Worker.create({
    connection,
    namespace,
    taskQueue: workerQueue,
    activities: batchActivities,
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? 4,
    shutdownGraceTime,
    ...identity,
  });

  return {
    address,
    namespace,
    taskQueue,
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

/**
 * The SDK runtime, installed once per process: its logs (and the native core's, forwarded) through
 * `logger`, its Prometheus exporter on its own address. Without metrics asked for, a runtime that
 * is already installed is kept.
 */
function installRuntime(logger: Logger | undefined, bindAddress: string | undefined): void {
  try {
    Runtime.install({
      ...(logger ? { logger: sdkLogger(logger) } : {}),
      telemetryOptions: {
        ...(logger ? { logging: { forward: {}, filter: { core: "WARN", other: "ERROR" } } } : {}),
        ...(bindAddress !== undefined ? { metrics: { prometheus: { bindAddress } } } : {}),
      },
    });
  } catch (err) {
    if (bindAddress === undefined) return;
    throw new ConfigError(
      "sdkMetricsAddress",
      `cannot serve the Temporal SDK's metrics at ${bindAddress}: ${(err as Error).message} (the SDK runtime is installed once per process, before its first connection)`,
    );
  }
}

type SdkLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR";

/**
 * The Temporal SDK's Logger interface over ours (scalar metadata only; an error by its message).
 * Its info lines (worker states, bundling) are its own workings, at debug here: the worker says
 * when it polls and when it stopped. Its warnings and errors say each condition once (a server
 * that is gone fails every poll).
 */
function sdkLogger(target: Logger) {
  const logger = collapseRepeats(target);
  const log = (level: SdkLevel, message: string, meta?: Record<string | symbol, unknown>) => {
    const fields: Record<string, string | number | boolean> = { sdk: "temporal" };
    for (const [k, v] of Object.entries(meta ?? {})) {
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") fields[k] = v;
      else if (v instanceof Error) fields[k] = v.message;
    }
    if (level === "ERROR") logger.error(message, fields);
    else if (level === "WARN") logger.warn(message, fields);
    else logger.debug(message, fields);
  };
  return {
    log,
    trace: (m: string, meta?: Record<string | symbol, unknown>) => log("TRACE", m, meta),
    debug: (m: string, meta?: Record<string | symbol, unknown>) => log("DEBUG", m, meta),
    info: (m: string, meta?: Record<string | symbol, unknown>) => log("INFO", m, meta),
    warn: (m: string, meta?: Record<string | symbol, unknown>) => log("WARN", m, meta),
    error: (m: string, meta?: Record<string | symbol, unknown>) => log("ERROR", m, meta),
  };
}

/** The labels of a stream as the worker knows it: its checkpoint key (`stream::<dataset>` by default). */
function labelsOf(key: string): StreamLabels {
  return { stream: key.startsWith("stream::") ? key.slice("stream::".length) : key, checkpointKey: key };
}

/** Log each batch this worker committed, and record it into the metrics. */
function committedListener(logger: Logger | undefined, metrics: StreamMetrics | undefined): StreamRuntimeOptions["onCommitted"] {
  if (!logger && !metrics) return undefined;
  return (key, result, durationMs, rules) => {
    metrics?.recordBatch(labelsOf(key), { ...result.batch, durationMs, ...rules });
    logger?.info("batch committed", {
      key,
      batch: result.batchId,
      records: result.batch.sourceCount,
      good: result.batch.goodCount,
      bad: result.batch.badCount,
      superseded: result.batch.supersededCount,
      durationMs,
    });
    for (const failed of failedDatasetRules(rules)) logger?.warn("dataset rule failed", { key, batch: result.batchId, ...failed });
  };
}

/** Batch activities that record the source's lag into the metrics. */
function observed(activities: BatchActivities, metrics: StreamMetrics | undefined): BatchActivities {
  return {
    ...activities,
    async fetchBatch(input) {
      const result = await activities.fetchBatch(input);
      if (result.lag) metrics?.recordLag(labelsOf(input.key), result.lag);
      // Nothing new at the source: a quiet stream, not a stuck one (its checkpoint age restarts).
      if (result.count === 0 && !result.cursorMoved && !result.more?.length) metrics?.recordCaughtUp(labelsOf(input.key));
      return result;
    },
    async takeReadAhead(input) {
      const result = await activities.takeReadAhead(input);
      if (result?.lag) metrics?.recordLag(labelsOf(input.key), result.lag);
      return result;
    },
  };
}
