/**
 * Temporal activities: thin adapters from the workflow's JSON to the worker's stream runtime
 * (src/temporal/stream-runtime.ts, over src/pipeline) and to lake maintenance
 * (src/lake/maintain.ts). They add only what Temporal needs:
 * heartbeats, cancellation, and errors that say whether a retry can help.
 */
import { ApplicationFailure, Context } from "@temporalio/activity";
import { loadContract } from "../src/contract/index.js";
import { LakeLogicError } from "../src/errors.js";
import { maintainLake } from "../src/lake/maintain.js";
import type { BatchActivities, BatchRuntime, MaintainActivities, SharedActivities } from "../workflows/types.js";

const HEARTBEAT_EVERY_MS = 2_000;

/**
 * Keep the activity visibly alive while `work` runs, end it early if it is cancelled, and turn an
 * error that a retry cannot fix (`retriable: false`: a bad contract, a rival writer …) into a
 * non-retryable failure, typed with the error's class name for the workflow to branch on.
 */
async function activity<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  // Local activities have no heartbeats: the workflow task they run in is kept alive instead.
  const timer = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work(ctx.cancellationSignal);
  } catch (err) {
    throw asFailure(err);
  } finally {
    if (timer) clearInterval(timer);
  }
}

function asFailure(err: unknown): unknown {
  if (!(err instanceof LakeLogicError) || err.retriable) return err;
  return ApplicationFailure.create({ type: err.name, message: err.message, nonRetryable: true, cause: err });
}

export function createSharedActivities(runtime: BatchRuntime, workerQueue: string): SharedActivities {
  return {
    async getWorkerQueue(): Promise<string> {
      return workerQueue;
    },
    async openStream(spec, committedBatchId) {
      return activity(() => runtime.openStream(spec, committedBatchId));
    },
  };
}

export function createBatchActivities(runtime: BatchRuntime): BatchActivities {
  return {
    async fetchBatch(input) {
      return activity((signal) => runtime.fetchBatch(input, signal));
    },
    async takeReadAhead(input) {
      return activity(() => runtime.takeReadAhead(input));
    },
    async writeBatches(input) {
      return activity(() => runtime.writeBatches(input));
    },
  };
}

/** Lake maintenance (workflows/maintain.ts): the contract loaded as the stream's workers load it. */
export function createMaintainActivities(): MaintainActivities {
  return {
    async maintainLake(input) {
      return activity(async () => {
        const contract = await loadContract(input.contract, {
          ...(input.vars ? { vars: input.vars } : {}),
          ...(input.environment ? { environment: input.environment } : {}),
        });
        return maintainLake(contract, {
          ...(input.targetPath !== undefined ? { targetPath: input.targetPath } : {}),
          ...(input.retainHours !== undefined ? { retainHours: input.retainHours } : {}),
          ...(input.allowShortRetention ? { allowShortRetention: true } : {}),
        });
      });
    },
  };
}
