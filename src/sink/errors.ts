import { LakeLogicError, isRetriable } from "../errors.js";
import type { StreamRunSummary } from "./types.js";

/** A run failed; `summary` says what was committed before it did. */
export class StreamRunError extends LakeLogicError {
  constructor(
    readonly summary: StreamRunSummary,
    cause: unknown,
  ) {
    super(
      "STREAM_RUN_FAILED",
      `stream "${summary.checkpointKey}" failed after ${summary.batches} committed batches ` +
        `(cursor ${JSON.stringify(summary.cursor ?? null)}): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, retriable: isRetriable(cause) },
    );
  }
}
