import { LakeLogicError } from "../errors.js";

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

/**
 * A value cannot be written as JSON: it refers to itself, or it is nested deeper than the writer
 * goes (which keeps the writer's recursion far from the stack's limit). Writing it again fails
 * the same way.
 */
export class JsonValueError extends LakeLogicError {
  constructor(message: string) {
    super("JSON_VALUE", message, { retriable: false });
  }
}
