/** The Temporal runtime's exports; `index.ts` loads this module once the @temporalio/* packages are known to be installed. */
export { StreamClient, StreamAlreadyRunningError, streamWorkflowId, parseDuration, WORKFLOW_TYPE } from "./client.js";
export { createLakeLogicWorker, workflowsPath, DEFAULT_TASK_QUEUE } from "./worker.js";
export { SEARCH_ATTRIBUTES } from "./search-attributes.js";
