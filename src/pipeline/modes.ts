import { ConfigError } from "../errors.js";
import type { TriggerRunMode } from "../contract/normalise/trigger.js";
import type { RunMode, Source } from "../sources/core/types.js";

/**
 * How a run goes: `available_now` drains to the end snapshot and stops; `continuous` cuts the
 * next batch as soon as the one before is committed; `processing_time` starts a batch every
 * interval (Spark's Trigger.ProcessingTime). A source sees only how it is read (`RunMode`):
 * processing_time reads it as continuous (see `readModeOf`).
 */
export type StreamMode = TriggerRunMode;

export const RUN_MODES: readonly StreamMode[] = ["available_now", "continuous", "processing_time"];

/** `mode` is one of RUN_MODES; a ConfigError naming it otherwise. */
export function checkRunMode(mode: unknown): StreamMode {
  if (!RUN_MODES.includes(mode as StreamMode)) {
    throw new ConfigError("mode", `expected one of ${RUN_MODES.join(", ")}; got ${JSON.stringify(mode)}`);
  }
  return mode as StreamMode;
}

/** How the source is read in `mode`: a processing_time run keeps reading between its triggers. */
export function readModeOf(mode: StreamMode): RunMode {
  return mode === "available_now" ? "available_now" : "continuous";
}

/**
 * Refuse a mode the source declares it cannot serve (`Source.modes`), before anything is opened:
 * a push endpoint in available_now would listen for a moment, call that a drain, and turn away
 * the deliveries that come after.
 */
export function assertSourceServes(source: Source, mode: RunMode): void {
  const declared = source.modes === undefined && source.continuousOnly === true;
  const modes = declared ? ["continuous"] : source.modes;
  if (modes === undefined || modes.includes(mode)) return;
  const only = modes.join(", ");
  const how = `Run it "continuous" (a signal, stop or maxBatches ends the run)`;
  let why = `it serves only ${only}`;
  if (mode === "available_now") {
    why = declared
      ? `it declares continuousOnly: it follows a feed that has no end, so a drain would never finish. ${how}`
      : "it receives only what is pushed to it while it runs, so there is no backlog to drain and no end to stop at. " +
        `${how}, or let the sender write to a queue or Kafka topic and drain that on a schedule`;
  }
  throw new ConfigError("mode", `${source.description} cannot run ${mode} (it runs ${only} only): ${why}`);
}
