import { hasNoReplayableCursor, sourceOf, triggerOf } from "../facts.js";
import type { ContractRule } from "../types.js";

export const stream004: ContractRule = {
  id: "STREAM-004",
  severity: "warning",
  name: "AvailableNowWithoutReplayableCursor",
  title: "available_now on a source without a replayable cursor",
  description:
    "`trigger: available_now` drains a source up to an end snapshot taken at the start, then " +
    "exits, and the next run resumes from the committed cursor. A websocket or webhook source has " +
    "neither: there is no position to seek back to and no end to drain to, so events sent while " +
    "no run is listening are lost and a run has no defined end.",
  fix:
    "Run push sources with `trigger: continuous` as an always-on stream, or land their events in a " +
    "replayable source (Kafka, a queue) and drain that with `available_now`.",
  tags: ["streaming", "trigger", "data-loss"],
  scope: "contract",
  examples: {
    bad: `dataset: ticks
primary_key: [trade_id]
source:
  type: websocket
  url: wss://feed.example.com/ticker
trigger: available_now
materialization:
  strategy: merge
`,
    good: `dataset: ticks
primary_key: [trade_id]
source:
  type: websocket
  url: wss://feed.example.com/ticker
trigger: continuous
materialization:
  strategy: merge
`,
  },
  check(contract) {
    const source = sourceOf(contract);
    if (!hasNoReplayableCursor(source)) return [];
    const trigger = triggerOf(contract);
    if (trigger?.token !== "availablenow") return [];
    const kind = source?.transport ?? "push";
    return [
      {
        message:
          `trigger "${trigger.value}" on a ${kind} source: a ${kind} has no cursor to resume from and no ` +
          `end to drain to, so events sent while no run is listening are lost.`,
        suggestion:
          "Use trigger: continuous for an always-on stream, or land the events in Kafka or a queue and " +
          "drain that with available_now.",
        path: trigger.path,
      },
    ];
  },
};
