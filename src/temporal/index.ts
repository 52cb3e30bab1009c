/**
 * `lakelogic/temporal`: the Temporal runtime (needs the optional @temporalio/* packages).
 *
 * The runtime is imported dynamically, after checking that its packages resolve: a static import
 * of a missing package fails while the module graph links, with a bare ERR_MODULE_NOT_FOUND,
 * before any code here could say what to install.
 */
import { createRequire } from "node:module";
import { MissingDependencyError } from "../errors.js";
import type * as Runtime from "./runtime.js";

/** What the runtime loads: the client, the worker, and the SDKs of the workflow bundle and the activities. */
const TEMPORAL_PACKAGES = ["@temporalio/client", "@temporalio/worker", "@temporalio/workflow", "@temporalio/activity"] as const;

function missingPackages(): string[] {
  const require = createRequire(import.meta.url);
  return TEMPORAL_PACKAGES.filter((name) => {
    try {
      require.resolve(name);
      return false;
    } catch (err) {
      if ((err as { code?: string }).code === "MODULE_NOT_FOUND") return true;
      throw err;
    }
  });
}

const missing = missingPackages();
if (missing.length > 0) throw new MissingDependencyError(missing.join(" "), "lakelogic/temporal (the Temporal runtime)");
const runtime: typeof Runtime = await import("./runtime.js");

export const {
  StreamClient,
  StreamAlreadyRunningError,
  streamWorkflowId,
  parseDuration,
  WORKFLOW_TYPE,
  createLakeLogicWorker,
  workflowsPath,
  DEFAULT_TASK_QUEUE,
  SEARCH_ATTRIBUTES,
} = runtime;
// The classes are types too.
export type StreamClient = Runtime.StreamClient;
export type StreamAlreadyRunningError = Runtime.StreamAlreadyRunningError;
export type { LakeLogicWorker, LakeLogicWorkerOptions } from "./worker.js";
export type * from "../../workflows/types.js";
