import { join } from "node:path";
import { openCheckpointLocation } from "../checkpoint/location.js";
import { MemoryCheckpointStore } from "../checkpoint/memory.js";
import { SQLiteCheckpointStore } from "../checkpoint/sqlite.js";
import type { CheckpointStore } from "../checkpoint/types.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import type { LakeWriter } from "../lake/types.js";
import { resolveTargetPath } from "./lake-option.js";

export type CheckpointOption = CheckpointStore | "target" | "memory" | string;

/** A lake writer that can keep checkpoints in its own database (duckdb format). */
interface CheckpointingWriter extends LakeWriter {
  checkpointStore(): CheckpointStore;
}

function canCheckpoint(lake: LakeWriter): lake is CheckpointingWriter {
  return typeof (lake as Partial<CheckpointingWriter>).checkpointStore === "function";
}

export async function openCheckpoint(
  option: CheckpointOption | undefined,
  lake: LakeWriter,
  contract: Contract,
  targetPath: string | undefined,
): Promise<{ store: CheckpointStore; inTarget: boolean }> {
  if (option === undefined) {
    const path = join(resolveTargetPath(contract, targetPath), "_lakelogic", "checkpoints.sqlite");
    return { store: new SQLiteCheckpointStore(path), inTarget: false };
  }
  if (option === "memory") return { store: new MemoryCheckpointStore(), inTarget: false };
  if (option === "target") {
    if (contract.materialization.format !== "duckdb" || !canCheckpoint(lake)) {
      throw new ConfigError(
        "checkpoint",
        `"target" keeps the cursor in the lake's DuckDB database, so it needs materialization.format duckdb; ` +
          `this contract writes ${contract.materialization.format}. Use a SQLite path or a CheckpointStore instead.`,
      );
    }
    return { store: lake.checkpointStore(), inTarget: true };
  }
  if (typeof option === "string") {
    // An object-store URI (s3://, abfss://, gs://, an Azure Blob URL) or a local SQLite path;
    // any other URI is refused, never taken for a file name.
    return { store: await openCheckpointLocation(option), inTarget: false };
  }
  if (typeof option.load !== "function" || typeof option.commit !== "function") {
    throw new ConfigError("checkpoint", 'expected a CheckpointStore (load/commit/close), "target", "memory", an object-store URI (s3://, abfss://, gs://) or a SQLite file path');
  }
  return { store: option, inTarget: false };
}
