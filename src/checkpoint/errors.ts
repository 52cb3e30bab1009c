import { LakeLogicError } from "../errors.js";

/**
 * A commit lost the compare-and-set: another writer advanced (or rewound) the stream since this
 * one loaded its checkpoint (invariant I3: one writer per checkpoint key).
 */
export class CheckpointConflictError extends LakeLogicError {
  constructor(
    readonly key: string,
    readonly storedBatchId: number,
    readonly attemptedBatchId: number,
    readonly storedWriterId?: string,
  ) {
    super(
      "CHECKPOINT_CONFLICT",
      `checkpoint "${key}": expected stored batch ${attemptedBatchId - 1} before committing batch ` +
        `${attemptedBatchId}, found batch ${storedBatchId}` +
        (storedWriterId ? ` committed by writer ${storedWriterId}` : "") +
        `. Another writer owns this stream; run one writer per checkpoint key, or use a different checkpointKey.`,
      { retriable: false },
    );
  }
}
