import { LakeLogicError, NonRetriableError } from "../errors.js";

/**
 * A commit lost the compare-and-set: another writer advanced (or rewound) the stream since this
 * one loaded its checkpoint (invariant I3: one writer per checkpoint key).
 */
export class CheckpointConflictError extends NonRetriableError {
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
    );
  }
}

/**
 * The checkpoint store's file could not be opened, read or written. The message names the file,
 * what was being done and what to do; subclasses carry one stable code per kind of failure.
 */
export class CheckpointStoreError extends LakeLogicError {
  constructor(
    readonly path: string,
    message: string,
    options: { code?: string; cause?: unknown; retriable: boolean },
  ) {
    super(options.code ?? "CHECKPOINT_STORE", `checkpoint store ${path}: ${message}`, options);
  }
}

/** The file exists but is not a SQLite database (another file given by mistake, or a damaged store). */
export class CheckpointNotADatabaseError extends CheckpointStoreError {
  constructor(path: string, detail: string, options: { cause?: unknown } = {}) {
    super(
      path,
      `${detail}. Check that this is the checkpoints file you meant (the checkpoint option; by default ` +
        "<targetPath>/_lakelogic/checkpoints.sqlite); if it is something else, give another path. A damaged " +
        "store can be restored from a backup; moving it aside makes every stream start again from its beginning.",
      { ...options, code: "CHECKPOINT_NOT_A_DATABASE", retriable: false },
    );
  }
}

/** The path is a directory, or its directory cannot be created or opened. */
export class CheckpointCannotOpenError extends CheckpointStoreError {
  constructor(path: string, detail: string, options: { cause?: unknown } = {}) {
    super(path, detail, { ...options, code: "CHECKPOINT_CANNOT_OPEN", retriable: false });
  }
}

/** The file or its directory cannot be written (permissions, a read-only volume). */
export class CheckpointReadOnlyError extends CheckpointStoreError {
  constructor(path: string, detail: string, options: { cause?: unknown } = {}) {
    super(
      path,
      `${detail}. The checkpoint store must be writable, and so must its directory (SQLite keeps ` +
        "-wal and -shm files beside it): fix the permissions or give a writable path.",
      { ...options, code: "CHECKPOINT_READ_ONLY", retriable: false },
    );
  }
}

/** The volume holding the store is full; nothing was committed, and a retry succeeds once space is freed. */
export class CheckpointDiskFullError extends CheckpointStoreError {
  constructor(path: string, detail: string, options: { cause?: unknown } = {}) {
    super(
      path,
      `${detail}. Nothing was committed; free space on the volume that holds the file, then retry.`,
      { ...options, code: "CHECKPOINT_DISK_FULL", retriable: true },
    );
  }
}

/** Another connection held the store's lock for longer than the busy timeout. */
export class CheckpointBusyError extends CheckpointStoreError {
  constructor(path: string, detail: string, options: { cause?: unknown } = {}) {
    super(
      path,
      `${detail}. Another process holds the file's lock; a retry usually succeeds. If it persists, look ` +
        "for a process keeping a transaction open on this file.",
      { ...options, code: "CHECKPOINT_BUSY", retriable: true },
    );
  }
}

/**
 * A stored cursor is not typed JSON as `encodeCursor` writes it (a hand-edited or damaged row).
 * Not retriable: the row reads the same way every time.
 */
export class CheckpointCursorError extends NonRetriableError {
  constructor(
    readonly key: string,
    readonly location: string,
    detail: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      "CHECKPOINT_CURSOR",
      `checkpoint "${key}" in ${location}: the stored cursor cannot be read (${detail}); expected typed JSON ` +
        'as LakeLogic writes it, e.g. {"offset":10} or {"partitions":{"0":{"$bigint":"42"}}}. Restore the ' +
        "row from a backup, or set the cursor again (SQLiteCheckpointStore.overwrite for a SQLite store).",
      options,
    );
  }
}
