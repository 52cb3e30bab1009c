/**
 * The normalised contract: what `loadContract` returns and what every other layer reads.
 * YAML spellings (snake_case keys, shorthand rules, type aliases) are resolved here once,
 * so engines, writers, the sink and lint never re-interpret raw YAML.
 */
import type { DatasetQuery } from "./sql-dataset-query.js";

export type { DatasetQuery };

/** Canonical field types. YAML aliases (int, long, float, str, datetime, …) map onto these. */
export type FieldType =
  | "string"
  | "integer" // 64-bit signed
  | "double"
  | "decimal"
  | "boolean"
  | "date"
  | "timestamp"
  | "json"; // nested value (object / array), kept as JSON

export type Severity = "error" | "warning" | "info";

export interface FieldSpec {
  name: string;
  type: FieldType;
  /** The type as written in the contract, e.g. `long` or `decimal(12,2)`. */
  declaredType: string;
  /** Only for `decimal`. Defaults 38 / 9. */
  precision?: number;
  scale?: number;
  required: boolean;
  nullable: boolean;
  pii: boolean;
  description?: string;
  /** Other input keys that fill this field when its own name is absent. */
  aliases: string[];
  /** Where the field was declared (for messages). */
  loc?: SourceLoc;
  /** Field-level constraints as written; each also became a row rule (see `RowRule.origin`). */
  acceptedValues?: Array<string | number | boolean>;
  min?: number | string;
  max?: number | string;
  maxLength?: number;
}

export interface SourceLoc {
  file?: string;
  line: number;
  column: number;
  /** Key path, e.g. `quality.row_rules[2].regex_match.pattern`. */
  path: string;
}

interface RuleBase {
  /** Stable id: the rule's `name`, or a derived one such as `not_null:order_id`. */
  id: string;
  severity: Severity;
  description?: string;
  category?: string;
  loc?: SourceLoc;
  /**
   * Where the rule came from: written under `quality` (`declared`), implied by `required: true`
   * (`required`), or by a field's own `accepted_values` / `min` / `max` / `max_length` / `rules` (`field`).
   */
  origin?: "declared" | "required" | "field";
}

export type RowRule =
  | (RuleBase & { kind: "sql"; sql: string })
  | (RuleBase & { kind: "not_null"; field: string })
  | (RuleBase & { kind: "accepted_values"; field: string; values: Array<string | number | boolean> })
  | (RuleBase & { kind: "regex_match"; field: string; pattern: string })
  | (RuleBase & { kind: "range"; field: string; min?: number; max?: number; inclusive: boolean });

export type DatasetRule =
  | (RuleBase & { kind: "unique"; fields: string[] })
  | (RuleBase & { kind: "null_ratio"; field: string; max: number })
  | (RuleBase & { kind: "row_count_between"; min?: number; max?: number })
  | (RuleBase & { kind: "sql"; sql: string; query: DatasetQuery; bounds: DatasetBounds });

/**
 * What a dataset `sql` rule's value must be (`must_be_between`, `must_be_less_than`,
 * `must_be_greater_than`; bounds of between are inclusive, the others strict). With none, the
 * rule passes whenever its query gives a value, as in the Python package.
 */
export interface DatasetBounds {
  between?: [number, number];
  lessThan?: number;
  greaterThan?: number;
}

export type Strategy = "append" | "merge" | "overwrite" | "scd2";
export type LakeFormat = "duckdb" | "parquet" | "delta" | "ducklake";
export type UnknownFieldsPolicy = "allow" | "drop" | "quarantine";
export type Trigger = "available_now" | "continuous" | "micro_batch" | "processing_time" | "once" | string;

export interface Materialization {
  /** Absent in YAML counts as `append` (and lint says so). */
  strategy: Strategy;
  strategyDeclared: boolean;
  format: LakeFormat;
  /** Directory holding the lake (duckdb file or parquet dataset directories). */
  targetPath?: string;
  /** Table name inside the target; defaults to the dataset name. */
  table: string;
  partitionBy: string[];
  /** The format as written when it is not one this runtime writes (e.g. `delta`); `format` then holds the fallback. */
  declaredFormat?: string;
}

export interface QuarantineSpec {
  enabled: boolean;
  /** Table (duckdb) or directory (parquet); defaults to `<table>_quarantine`. */
  target: string;
  format: LakeFormat;
  includeErrorReason: boolean;
  /** The format as written when it is not one this runtime writes; `format` then holds the fallback. */
  declaredFormat?: string;
}

export interface SchemaPolicy {
  evolution: string;
  unknownFields: UnknownFieldsPolicy;
}

export interface Contract {
  version?: string;
  info: {
    title?: string;
    owner?: string;
    domain?: string;
    system?: string;
    targetLayer?: string;
    [key: string]: unknown;
  };
  /** Dataset name; the default table name and the default checkpoint key (`stream::<dataset>`). */
  dataset: string;
  primaryKey: string[];
  fields: FieldSpec[];
  rowRules: RowRule[];
  datasetRules: DatasetRule[];
  materialization: Materialization;
  quarantine: QuarantineSpec;
  schemaPolicy: SchemaPolicy;
  /** Kept as written: connectors validate their own options against their config spec. */
  source?: { type: string; [key: string]: unknown };
  trigger?: Trigger;
  serviceLevels?: { freshness?: string; [key: string]: unknown };
  /** File the contract came from, when it came from a file. */
  file?: string;
  /** Non-fatal findings from loading (unknown keys, …). */
  warnings: ContractWarning[];
  /** The raw parsed document, for tools (lint) that need to look at what was written. */
  raw: Record<string, unknown>;
}

export interface ContractWarning {
  message: string;
  loc?: SourceLoc;
  /**
   * Kind of finding, for tools: `unknown-key`, `unsupported` (written for the original but not
   * enforced or written here), `derived` (a default taken from elsewhere), `suspicious`.
   */
  code?: "unknown-key" | "unsupported" | "derived" | "suspicious";
}
