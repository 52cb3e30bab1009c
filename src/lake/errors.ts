import { LakeLogicError } from "../errors.js";

/** A batch could not be written; nothing of it is visible (the transaction or manifest rolled back). */
export class LakeWriteError extends LakeLogicError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("LAKE_WRITE", message, options);
  }
}

/** Another live writer holds the dataset (one writer per table). */
export class LakeBusyError extends LakeLogicError {
  constructor(message: string) {
    super("LAKE_BUSY", message);
  }
}
