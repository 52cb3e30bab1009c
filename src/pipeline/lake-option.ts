import type { Contract } from "../contract/types.js";
import { openLake } from "../lake/index.js";
import type { LakeWriter } from "../lake/types.js";

export const DEFAULT_TARGET_PATH = "./lake";

/** The caller's targetPath wins over the contract's `materialization.target_path`. */
export function resolveTargetPath(contract: Contract, targetPath: string | undefined): string {
  return targetPath ?? contract.materialization.targetPath ?? DEFAULT_TARGET_PATH;
}

export function openLakeFor(contract: Contract, targetPath: string | undefined): Promise<LakeWriter> {
  return openLake(contract, { targetPath: resolveTargetPath(contract, targetPath) });
}
