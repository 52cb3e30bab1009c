import { NonRetriableError } from "../errors.js";

/**
 * The checkpoint store is behind the lake: it has no record of a stream (or an older one) whose
 * batches the target already holds — the checkpoint file was deleted, truncated or restored from
 * an old copy. Starting from there would write those batches again (duplicates in an append
 * target), so the stream does not start; a retry finds the same state.
 */
export class CheckpointLostError extends NonRetriableError {
  constructor(
    readonly key: string,
    /** The newest batch of the stream the lake holds. */
    readonly lakeBatchId: number,
    /** The batch the checkpoint store says was committed last; undefined when it has no record. */
    readonly storedBatchId: number | undefined,
    where: string,
  ) {
    super(
      "CHECKPOINT_LOST",
      `checkpoint "${key}": ${where} ` +
        (storedBatchId === undefined ? "has no checkpoint for this stream" : `says batch ${storedBatchId} was committed last`) +
        `, but the lake already holds batch ${lakeBatchId} of it: the checkpoint was lost or replaced, and starting ` +
        `from there would write those batches again (duplicates in an append target). Restore the checkpoint; ` +
        `or, to start over on purpose from ${storedBatchId === undefined ? "the beginning" : `batch ${storedBatchId}`}, ` +
        `pass resetCheckpoint: true (lakelogic run --reset-checkpoint); or use a new checkpointKey.`,
    );
  }
}

/**
 * The checkpoint file holds this stream's checkpoint as the Python LakeLogic package wrote it, and
 * none of this runtime's: starting from the beginning beside it would read everything again.
 */
export class CheckpointForeignError extends NonRetriableError {
  constructor(
    readonly key: string,
    /** The batch the Python checkpoint says was committed last. */
    readonly pythonBatchId: number,
    where: string,
  ) {
    super(
      "CHECKPOINT_FOREIGN",
      `checkpoint "${key}": ${where} holds this stream's checkpoint as the Python LakeLogic package wrote it ` +
        `(batch ${pythonBatchId}), which is not read on its own: to continue where that stream stopped, run ` +
        `"lakelogic checkpoint import CONTRACT --from ${where}"; to start over from the source's beginning instead, ` +
        `pass resetCheckpoint: true (lakelogic run --reset-checkpoint).`,
    );
  }
}

/**
 * A Temporal worker's checkpoint store or lake holds less of the stream than the workflow
 * committed: the stream moved from another machine, and what it wrote there is on that
 * machine's disk. Writing on would split the stream's lake in two (or start it over), so the
 * workflow fails; a retry on the same worker finds the same state.
 */
export class LakeNotSharedError extends NonRetriableError {
  constructor(
    readonly key: string,
    /** The batch the workflow committed last. */
    readonly committedBatchId: number,
    /** The newest batch of the stream this worker finds. */
    readonly foundBatchId: number,
    what: string,
  ) {
    super(
      "LAKE_NOT_SHARED",
      `stream "${key}" committed batch ${committedBatchId}, but ${what} on this worker holds ${foundBatchId === 0 ? "none of its batches" : `only up to batch ${foundBatchId}`}: ` +
        "the stream ran on another machine, and its lake or checkpoint is on that machine's disk. Writing here would split the lake in two. " +
        "Give every worker the same storage: materialization.format delta on object storage (s3://, gs://, abfss://), or ducklake with a " +
        "PostgreSQL catalog, keeps the table and the stream's checkpoint where every worker reaches them; a duckdb or parquet lake, a DuckLake " +
        "catalog file and a SQLite checkpoint must be on a file system every worker mounts.",
    );
  }
}
