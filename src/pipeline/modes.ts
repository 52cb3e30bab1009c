import { ConfigError } from "../errors.js";
import type { RunMode, Source } from "../sources/core/types.js";

export const RUN_MODES: readonly RunMode[] = ["available_now", "continuous"];

/** `mode` is one of RUN_MODES; a ConfigError naming it otherwise. */
export function checkRunMode(mode: unknown): RunMode {
  if (!RUN_MODES.includes(mode as RunMode)) {
    throw new ConfigError("mode", `expected one of ${RUN_MODES.join(", ")}; got ${JSON.stringify(mode)}`);
  }
  return mode as RunMode;
}

/**
 * Refuse a mode the source declares it cannot serve (`Source.modes`), before anything is opened:
 * a push endpoint in available_now would listen for a moment, call that a drain, and turn away
 * the deliveries that come after.
 */
export function assertSourceServes(source: Source, mode: RunMode): void {
  if (source.modes === undefined || source.modes.includes(mode)) return;
  const only = source.modes.join(", ");
  const why =
    mode === "available_now"
      ? "it receives only what is pushed to it while it runs, so there is no backlog to drain and no end to stop at. " +
        `Run it "continuous" (a signal, stop or maxBatches ends the run), or let the sender write to a queue or ` +
        "Kafka topic and drain that on a schedule"
      : `it serves only ${only}`;
  throw new ConfigError("mode", `${source.description} cannot run ${mode} (it runs ${only} only): ${why}`);
}
