import { triggerIntervalOf, triggerOf } from "../facts.js";
import type { ContractRule } from "../types.js";

export const stream002: ContractRule = {
  id: "STREAM-002",
  severity: "info",
  name: "ContinuousTrigger",
  title: "Continuous trigger",
  description:
    "`trigger: continuous` keeps a worker polling around the clock, a cost paid every hour. Most " +
    "freshness targets are met by `available_now` run on a schedule, which drains to the end " +
    "snapshot taken at its start and exits; it resumes from the same checkpoint.",
  fix: "Keep `continuous` only when the freshness SLO needs sub-minute latency; otherwise use `available_now` on a schedule.",
  tags: ["streaming", "cost"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
source:
  type: kafka
  topic: orders
trigger: continuous
materialization:
  strategy: merge
service_levels:
  freshness: 1h
`,
    good: `dataset: orders
primary_key: [order_id]
source:
  type: kafka
  topic: orders
trigger: available_now
materialization:
  strategy: merge
service_levels:
  freshness: 1h
`,
  },
  check(contract) {
    const trigger = triggerOf(contract);
    if (trigger?.token !== "continuous") return [];
    const freshness = contract.text(["service_levels", "freshness"]);
    const slo = freshness === undefined ? "" : ` The declared freshness is ${freshness}.`;
    const interval = triggerIntervalOf(contract, trigger);
    const every = interval === undefined ? "" : ` (a batch every ${interval.value})`;
    return [
      {
        message: `trigger "${trigger.value}"${every} keeps a worker running around the clock.${slo}`,
        suggestion:
          "Unless the freshness SLO needs sub-minute latency, use trigger: available_now on a schedule " +
          "(same checkpoint, no idle cost).",
        path: trigger.path,
      },
    ];
  },
};
