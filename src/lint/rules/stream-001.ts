import { hasPrimaryKey, strategyOf, streamingSignal } from "../facts.js";
import type { ContractRule } from "../types.js";

export const stream001: ContractRule = {
  id: "STREAM-001",
  severity: "warning",
  name: "AppendOnResumableStream",
  title: "Append on a streaming or resumable source",
  description:
    "A contract that reads a stream (source type kafka, sse, websocket, sqs, pubsub, servicebus, " +
    "eventgrid, webhook, eventhubs or kinesis) or runs under a resumable trigger (available_now, " +
    "continuous, micro_batch, processing_time, once) and writes with `materialization.strategy: append`. " +
    "A missing strategy means append. Delivery is at-least-once: after a crash the batch in flight " +
    "is read again and written again, and append stores it twice.",
  fix:
    "Use `materialization.strategy: merge` with a `primary_key`, so a replayed batch updates rows " +
    "in place (effectively-once), or `overwrite` for full snapshots.",
  tags: ["streaming", "materialization", "duplicates"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
source:
  type: kafka
  brokers: [localhost:9092]
  topic: orders
trigger: available_now
materialization:
  strategy: append
`,
    good: `dataset: orders
primary_key: [order_id]
source:
  type: kafka
  brokers: [localhost:9092]
  topic: orders
trigger: available_now
materialization:
  strategy: merge
`,
  },
  check(contract) {
    const signal = streamingSignal(contract);
    if (!signal) return [];
    const strategy = strategyOf(contract);
    if (strategy.value !== "append") return [];
    const what = strategy.declared
      ? `materialization.strategy is "append"`
      : `No materialization.strategy is declared, so rows are appended`;
    return [
      {
        message:
          `${what}, but this is a streaming contract (${signal.evidence}): delivery is at-least-once, ` +
          `so a batch replayed after a restart is written again as duplicate rows.`,
        suggestion: hasPrimaryKey(contract)
          ? "Set materialization.strategy: merge (primary_key is already declared) so replayed rows update in place."
          : "Set materialization.strategy: merge and declare primary_key (the event's id) so replayed rows update in place.",
        path: strategy.path ?? signal.path,
      },
    ];
  },
};
