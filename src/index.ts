/**
 * lakelogic — contract-driven, crash-safe streaming ingestion.
 *
 * The in-process runtime and everything it stands on. Connectors are in `lakelogic/connectors`,
 * the Temporal runtime in `lakelogic/temporal` (both load their SDKs only when used).
 */
export { LakeLogicError, ConfigError, MissingDependencyError } from "./errors.js";

// Contracts
export {
  loadContract,
  parseContract,
  contractFromObject,
  defaultCheckpointKey,
  ContractError,
  checkRuleExpression,
  parseYaml,
} from "./contract/index.js";
export type * from "./contract/types.js";
export type { LoadContractOptions, ContractProblem } from "./contract/index.js";

// Validation engines
export { createEngine } from "./engine/index.js";
export type { BadRow, DatasetRuleResult, Engine, EngineName, Row, RuleCount, RuleFailure, ValidationResult } from "./engine/types.js";

// Lake targets and quarantine
export { openLake, readTable, readQuarantine, readQuarantineFiles, DuckDBTargetCheckpointStore, LakeBusyError, LakeWriteError, TableContractError, type TableChange } from "./lake/index.js";
export type { LakeWriter, QuarantineRow, StoredQuarantineRow, WriteRequest, WriteResult } from "./lake/index.js";
export { maintainLake, DEFAULT_RETAIN_HOURS, type MaintainOptions, type MaintainReport, type MaintenanceStep, type TableMaintenance, type FileStats } from "./lake/maintain.js";

// Checkpoints
export { SQLiteCheckpointStore } from "./checkpoint/sqlite.js";
export { MemoryCheckpointStore } from "./checkpoint/memory.js";
export { ObjectStoreCheckpointStore } from "./checkpoint/object-store.js";
export { openCheckpointLocation, checkpointLocationProblem, SUPPORTED_LOCATIONS } from "./checkpoint/location.js";
export { CheckpointConflictError } from "./checkpoint/errors.js";
export { CheckpointLostError } from "./pipeline/errors.js";
export { encodeCursor, decodeCursor } from "./checkpoint/codec.js";
export type { CheckpointRecord, CheckpointStore, CommitOutcome, Counts, Cursor } from "./checkpoint/types.js";

// Sources (the cursor- and ack-bearing protocol, and the sources that need no SDK)
export * from "./sources/index.js";

// The Python package's connector names (their SDKs still load only when used); the rest is in `lakelogic/connectors`.
export {
  AWSSQSConnector,
  AzureEventGridConnector,
  AzureServiceBusConnector,
  GCPPubSubConnector,
  WebhookConnector,
} from "./python/names.js";

// The in-process runtime
export { StreamSink, StreamRunError, RUN_MODES } from "./sink/index.js";
export { SparkEngine, SparkStreamSink, SparkRunError, SparkStartError, DeltaReader, SparkDriverError } from "./spark/index.js";
export type { SparkSource, SparkTrigger, SparkStreamSinkOptions, SparkBatchReport, SparkRunSummary } from "./spark/index.js";
export type { StreamSinkOptions, RunOptions, SinkRunOptions, BatchReport, StreamRunSummary, StopReason, StreamStart, CheckpointOption } from "./sink/index.js";

// Logs, metrics and traces (docs/observability.md)
export * from "./observe/index.js";

// Lint
export { lintFiles, lintPaths, lintText, RULES as LINT_RULES } from "./lint/index.js";
export type { Finding } from "./lint/types.js";
