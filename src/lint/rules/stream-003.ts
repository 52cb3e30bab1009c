import { formatPath, type YamlPath } from "../../contract/yaml.js";
import { streamingSignal } from "../facts.js";
import type { RawContract } from "../raw.js";
import type { ContractRule } from "../types.js";

/**
 * Quarantine is on by default (with a default target), so only an explicit opt-out counts:
 * `quarantine: null | false` or `quarantine.enabled: false`.
 */
function quarantineOptOut(contract: RawContract): YamlPath | undefined {
  if (!contract.has(["quarantine"])) return undefined;
  const q = contract.get(["quarantine"]);
  if (q === null || q === false) return ["quarantine"];
  const enabled = contract.get(["quarantine", "enabled"]);
  if (enabled === false || (typeof enabled === "string" && enabled.trim().toLowerCase() === "false")) {
    return ["quarantine", "enabled"];
  }
  return undefined;
}

export const stream003: ContractRule = {
  id: "STREAM-003",
  severity: "warning",
  name: "StreamWithoutQuarantine",
  title: "Streaming contract with quarantine disabled",
  description:
    "A streaming or resumable contract (see STREAM-001 for what counts) that turns quarantine off " +
    "(`quarantine.enabled: false`, or `quarantine:` set to null or false). Rows that fail " +
    "validation are then dropped, and unlike a batch file a stream cannot be re-read later to " +
    "recover them. Quarantine is on by default, so leaving the section out is fine.",
  fix: "Remove the opt-out (quarantine is enabled by default) or set `quarantine.enabled: true` with a `target`.",
  tags: ["streaming", "quarantine", "data-loss"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
source:
  type: sqs
  queue_url: env:ORDERS_QUEUE_URL
materialization:
  strategy: merge
quarantine:
  enabled: false
`,
    good: `dataset: orders
primary_key: [order_id]
source:
  type: sqs
  queue_url: env:ORDERS_QUEUE_URL
materialization:
  strategy: merge
quarantine:
  enabled: true
  target: orders_quarantine
  include_error_reason: true
`,
  },
  check(contract) {
    const signal = streamingSignal(contract);
    if (!signal) return [];
    const optOut = quarantineOptOut(contract);
    if (!optOut) return [];
    return [
      {
        message:
          `${formatPath(optOut)}: ${String(contract.get(optOut))} turns quarantine off on a streaming contract (${signal.evidence}): ` +
          `rows that fail validation are dropped, and the stream cannot be re-read to recover them.`,
        suggestion:
          "Remove the opt-out (quarantine is on by default) or set quarantine.enabled: true with a target, " +
          "so bad rows are kept with the reason they failed.",
        path: optOut,
      },
    ];
  },
};
