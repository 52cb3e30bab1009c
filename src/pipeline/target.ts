import type { CheckpointStore } from "../checkpoint/types.js";
import type { Contract } from "../contract/types.js";
import type { LakeWriter } from "../lake/types.js";
import { openCheckpoint, type CheckpointOption } from "./checkpoint-option.js";
import { openLakeFor } from "./lake-option.js";

/** Where a stream's batches go: the lake writer and the checkpoint store that closes each batch. */
export interface StreamTarget {
  lake: LakeWriter;
  store: CheckpointStore;
  /** The store lives in the lake's own database: data and cursor commit in one transaction. */
  inTarget: boolean;
  close(): Promise<void>;
}

/** Open a contract's lake and its checkpoint store, as both runtimes do. */
export async function openTarget(
  contract: Contract,
  options: { targetPath?: string; checkpoint?: CheckpointOption },
): Promise<StreamTarget> {
  const lake = await openLakeFor(contract, options.targetPath);
  try {
    const { store, inTarget } = await openCheckpoint(options.checkpoint, lake, contract, options.targetPath);
    return {
      lake,
      store,
      inTarget,
      async close() {
        if (!inTarget) await store.close().catch(() => undefined);
        await lake.close().catch(() => undefined);
      },
    };
  } catch (err) {
    await lake.close().catch(() => undefined);
    throw err;
  }
}
