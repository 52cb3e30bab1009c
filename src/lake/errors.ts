import { LakeLogicError } from "../errors.js";

// Raised by the JSON writer in src/util, which the lake uses; kept importable from here.
export { JsonValueError } from "../errors.js";

/**
 * A batch could not be written; nothing of it is visible (the transaction or manifest rolled back).
 * Not retriable unless said: writing the same rows again fails the same way.
 */
export class LakeWriteError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super("LAKE_WRITE", message, { ...options, retriable: options.retriable ?? false });
  }
}

/** Another live writer holds the dataset (one writer per table); it may let go. */
export class LakeBusyError extends LakeLogicError {
  constructor(message: string) {
    super("LAKE_BUSY", message, { retriable: true });
  }
}
