/** `lakelogic/temporal`: the Temporal runtime (needs the optional @temporalio/* packages). */
export { StreamClient, StreamAlreadyRunningError, streamWorkflowId, parseDuration, WORKFLOW_TYPE } from "./client.js";
export { createLakeLogicWorker, workflowsPath, DEFAULT_TASK_QUEUE, type LakeLogicWorker, type LakeLogicWorkerOptions } from "./worker.js";
export { SEARCH_ATTRIBUTES } from "./search-attributes.js";
export type * from "../../workflows/types.js";
