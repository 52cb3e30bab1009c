import type { CheckpointRecord, CommitOutcome } from "./types.js";
import { encodeCursor } from "./codec.js";
import { CheckpointConflictError } from "./errors.js";

/**
 * The compare-and-set decision shared by every store (SQLite, memory, DuckDB target), so that
 * all of them agree on what a retry is and what a rival writer is.
 */
export function decideCommit(stored: CheckpointRecord | undefined, next: CheckpointRecord): CommitOutcome {
  const storedId = stored?.batchId ?? 0;
  if (storedId === next.batchId - 1) return "committed";
  if (
    stored &&
    stored.batchId === next.batchId &&
    stored.writerId === next.writerId &&
    encodeCursor(stored.cursor) === encodeCursor(next.cursor)
  ) {
    return "already-committed";
  }
  throw new CheckpointConflictError(next.key, storedId, next.batchId, stored?.writerId);
}
