import { writeAndCommit, type CommitHooks, type CommittedBatch, type StreamPosition } from "../batch/commit.js";
import { SPANS, inStage, startStage, type StageSpan } from "../observe/trace.js";
import type { Cursor } from "../checkpoint/types.js";
import type { PipelineBatch } from "./batch.js";
import type { StreamTarget } from "./target.js";

/** Where a stream's batches are committed, and by whom. */
export interface StreamDestination {
  target: StreamTarget;
  /** Checkpoint key of the stream. */
  key: string;
  /** Identifies this writer in checkpoint records (a sink run, a Temporal workflow). */
  writerId: string;
  /** @internal crash tests pause between write and commit. */
  hooks?: CommitHooks;
}

/**
 * Write a batch's good and bad rows, then commit its cursor with compare-and-set (I1, I3). A batch
 * that fails hands a queue's messages back at once, so a retry need not wait for their leases.
 * After the commit the caller tells the source (`batch.committed`) and acknowledges the queue
 * (`batch.acknowledge`): StreamSink at once, the Temporal runtime in the same writeBatches call.
 */
export async function commitBatch(
  dest: StreamDestination,
  previous: StreamPosition,
  batch: PipelineBatch,
  options: {
    /** The cursor to commit; default the batch's own (a queue's batch keeps the previous one). */
    cursor?: Cursor;
  } = {},
): Promise<CommittedBatch> {
  const { target, key, writerId, hooks } = dest;
  // Spans: validate (awaited inside), then write until the rows are durable, then commit.
  let write: StageSpan | undefined;
  let commit: StageSpan | undefined;
  const traced = async () => {
    const validated = await inStage(SPANS.validate, { "lakelogic.records": batch.records.length }, () => batch.validated());
    write = startStage(SPANS.write, { "lakelogic.records.good": validated.goodCount, "lakelogic.records.bad": validated.bad.length });
    return validated;
  };
  const tracedHooks: CommitHooks = {
    afterWrite: async (batchId) => {
      write?.end();
      write = undefined;
      commit = startStage(SPANS.commit, { "lakelogic.batch.id": batchId });
      await hooks?.afterWrite?.(batchId);
    },
  };
  try {
    const done = await writeAndCommit(
      {
        lake: target.lake,
        store: target.store,
        storeInTarget: target.inTarget,
        key,
        writerId,
        replay: batch.replay,
        logsCursor: batch.fromCursorSource,
      },
      previous,
      "cursor" in options ? options.cursor : batch.cursor,
      traced,
      tracedHooks,
    );
    // A store inside the target commits in the write's transaction (and a batch already committed
    // writes nothing): its commit span is that instant.
    write?.end();
    (commit ?? startStage(SPANS.commit, { "lakelogic.batch.id": done.record.batchId, "lakelogic.commit.in_target": target.inTarget })).end();
    return done;
  } catch (err) {
    write?.end(err);
    commit?.end(err);
    await batch.release();
    throw err;
  }
}
