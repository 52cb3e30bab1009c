import { triggerOf } from "../facts.js";
import type { ContractRule } from "../types.js";

/**
 * A Delta target is what engine "spark" (SparkStreamSink) writes; Spark runs `foreachBatch`
 * only in micro-batch mode, so a continuous trigger cannot run there at all. StreamSink and the
 * Temporal runtime run it, and a contract does not say which runtime it is for: advice, not a warning.
 */
export const spark001: ContractRule = {
  id: "SPARK-001",
  severity: "info",
  name: "SparkContinuousTrigger",
  title: "Continuous trigger on a Spark (Delta) target",
  description:
    "`materialization.format: delta` is written by SparkStreamSink on Spark Structured Streaming, which " +
    "runs the contract in `foreachBatch`: micro-batches only. Spark's continuous processing mode has no " +
    "`foreachBatch` and no Delta sink, so `trigger: continuous` cannot run there; SparkStreamSink takes " +
    "`available_now` or a processing-time interval. StreamSink and the Temporal runtime run a continuous Delta " +
    "stream, so this is advice for contracts that Spark runs too.",
  fix: "Use `trigger: available_now` on a schedule, or a processing-time trigger (`lakelogic spark run --trigger processing_time=30s`).",
  tags: ["streaming", "spark"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
trigger: continuous
materialization:
  strategy: merge
  format: delta
  target_path: lake
`,
    good: `dataset: orders
primary_key: [order_id]
trigger: available_now
materialization:
  strategy: merge
  format: delta
  target_path: lake
`,
  },
  check(contract) {
    const trigger = triggerOf(contract);
    if (trigger?.token !== "continuous") return [];
    const format = contract.text(["materialization", "format"]);
    if (format?.trim().toLowerCase() !== "delta") return [];
    return [
      {
        message: `trigger "${trigger.value}" with materialization.format delta: StreamSink and Temporal run it, but Spark (SparkStreamSink) runs the contract in foreachBatch, which has no continuous mode.`,
        suggestion: "Use trigger: available_now (on a schedule) or a processing-time trigger with SparkStreamSink.",
        path: trigger.path,
      },
    ];
  },
};
