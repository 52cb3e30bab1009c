/**
 * Temporal activities: thin adapters from the workflow's JSON to the shared batch core
 * (src/batch via StreamRuntime). They add only what Temporal needs: heartbeats, cancellation,
 * and the worker-specific task queue that keeps one batch on one worker.
 */
import { Context } from "@temporalio/activity";
import type { StreamRuntime } from "../src/temporal/stream-runtime.js";
import type {
  AckBatchInput,
  FetchBatchInput,
  FetchBatchResult,
  OpenStreamResult,
  StreamSpec,
  ValidateBatchInput,
  ValidateBatchResult,
  WriteBatchInput,
  WriteBatchResult,
} from "../src/temporal/types.js";

const HEARTBEAT_EVERY_MS = 2_000;

/** Keep the activity visibly alive while `work` runs, and end it early if it is cancelled. */
async function withHeartbeat<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  // Local activities have no heartbeats: the workflow task they run in is kept alive instead.
  const timer = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work(ctx.cancellationSignal);
  } finally {
    if (timer) clearInterval(timer);
  }
}

export function createSharedActivities(runtime: StreamRuntime, workerQueue: string) {
  return {
    /**
     * This worker's own queue. Run as a local activity, it names the worker that is executing
     * the workflow task — the one whose local activities will validate and write the batch.
     */
    async getWorkerQueue(): Promise<string> {
      return workerQueue;
    },
    async openStream(spec: StreamSpec): Promise<OpenStreamResult> {
      return runtime.openStream(spec);
    },
  };
}

export function createBatchActivities(runtime: StreamRuntime) {
  return {
    async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
      return withHeartbeat((signal) => runtime.fetchBatch(input, signal));
    },
    async validateBatch(input: ValidateBatchInput): Promise<ValidateBatchResult> {
      return withHeartbeat(() => runtime.validateBatch(input));
    },
    async writeBatch(input: WriteBatchInput): Promise<WriteBatchResult> {
      return withHeartbeat(() => runtime.writeBatch(input));
    },
    async ackBatch(input: AckBatchInput): Promise<void> {
      return withHeartbeat(() => runtime.ackBatch(input));
    },
  };
}

export type SharedActivities = ReturnType<typeof createSharedActivities>;
export type BatchActivities = ReturnType<typeof createBatchActivities>;
