/**
 * One maintenance run of a contract's lake tables, started by a Temporal Schedule
 * (`lakelogic schedule create NAME CONTRACT --every 1h --maintain`). Deterministic: the work is
 * one activity (src/lake/maintain.ts through activities/index.ts), which is safe to run again
 * after a failure and while a stream writes, so Temporal's retries are all the workflow needs.
 */
import { proxyActivities } from "@temporalio/workflow";
import type { MaintainReport } from "../src/lake/maintain.js";
import type { MaintainActivities, MaintainWorkflowInput } from "./types.js";

const activities = proxyActivities<MaintainActivities>({
  // Compacting a large table takes a while; the activity heartbeats meanwhile.
  startToCloseTimeout: "6 hours",
  heartbeatTimeout: "1 minute",
  // A bad contract or retention arrives non-retryable (activities/index.ts); the rest is retried.
  retry: { initialInterval: "10 seconds", backoffCoefficient: 2, maximumAttempts: 5 },
});

export async function maintainWorkflow(input: MaintainWorkflowInput): Promise<MaintainReport> {
  return activities.maintainLake(input);
}
