import { join } from "node:path";
import type { Contract } from "../contract/types.js";
import { openLake } from "../lake/index.js";
import type { LakeWriter } from "../lake/types.js";

export const DEFAULT_TARGET_PATH = "./lake";

/** The caller's targetPath wins over the contract's `materialization.target_path`. */
export function resolveTargetPath(contract: Contract, targetPath: string | undefined): string {
  return targetPath ?? contract.materialization.targetPath ?? DEFAULT_TARGET_PATH;
}

/** Where a stream keeps its checkpoints when no checkpoint option says otherwise. */
export function defaultCheckpointPath(contract: Contract, targetPath: string | undefined): string {
  return join(resolveTargetPath(contract, targetPath), "_lakelogic", "checkpoints.sqlite");
}

export function openLakeFor(contract: Contract, targetPath: string | undefined): Promise<LakeWriter> {
  return openLake(contract, { targetPath: resolveTargetPath(contract, targetPath) });
}
