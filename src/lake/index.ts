/**
 * Lake targets and quarantine. `openLake` checks the contract's materialization and quarantine
 * settings up front (ConfigError naming the option) and returns a writer for its format:
 *
 * - duckdb (default): tables in `<targetPath>/lakelogic.duckdb`; one transaction per batch covers
 *   good rows, quarantine rows and, when asked, the checkpoint. A quarantine.target that is a
 *   path gets Parquet files there, listed in that transaction.
 * - delta: Delta Lake tables through delta-rs, on a local path or object storage; each batch's
 *   commit carries the stream's transaction identifier and checkpoint.
 * - ducklake: DuckDB's DuckLake, catalog in PostgreSQL or a DuckDB file, data files in a
 *   directory or on object storage; each batch is one catalog transaction with the stream's row.
 * - parquet: a directory per table, new immutable files per batch, made visible by an atomically
 *   replaced manifest.
 *
 * Layout, strategies and guarantees: docs/lake.md.
 */
import type { Contract } from "../contract/types.js";
import { resolveLakeConfig } from "./config.js";
import { DuckDBLakeWriter } from "./duckdb-writer.js";
import { DeltaLakeWriter } from "./delta-writer.js";
import { DuckLakeWriter } from "./ducklake-writer.js";
import { ParquetLakeWriter } from "./parquet-writer.js";
import type { LakeWriter } from "./types.js";

export interface OpenLakeOptions {
  /** Lake directory; overrides `materialization.target_path`. Default `./lake`. */
  targetPath?: string;
}

export async function openLake(contract: Contract, options: OpenLakeOptions = {}): Promise<LakeWriter> {
  const config = resolveLakeConfig(contract, options);
  if (config.format === "delta") return DeltaLakeWriter.open(config);
  if (config.format === "ducklake") return DuckLakeWriter.open(config);
  return config.format === "duckdb" ? DuckDBLakeWriter.open(config) : ParquetLakeWriter.open(config);
}

export { DuckDBLakeWriter, type DuckDBWriterHooks } from "./duckdb-writer.js";
export { ParquetLakeWriter } from "./parquet-writer.js";
export { DeltaLakeWriter } from "./delta-writer.js";
export { DuckLakeWriter } from "./ducklake-writer.js";
export { DuckDBTargetCheckpointStore } from "./duckdb-checkpoint.js";
export { readQuarantine, readQuarantineFiles, readTable, type ReadOptions } from "./read.js";
export {
  inspectLake,
  readTargetCheckpoint,
  type InspectOptions,
  type InspectedColumn,
  type InspectedCommit,
  type InspectedTable,
  type LakeInspection,
  type QuarantineGroup,
} from "./inspect.js";
export { checkLakeLocation, describeTarget, isUri, joinLocation, resolveLakeConfig, LAKE_FORMATS, SHARED_FORMATS, type LakeConfig, DEFAULT_TARGET_PATH, DUCKDB_FILE, CHECKPOINT_TABLE } from "./config.js";
export { LakeBusyError, LakeWriteError, TableContractError, type LakeHolder, type TableChange } from "./errors.js";
export { quarantineIds } from "./quarantine.js";
export type { LakeCommit, LakeWriter, QuarantineRow, StoredQuarantineRow, WriteRequest, WriteResult, WriteStream } from "./types.js";
