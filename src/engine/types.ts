import type { Contract, FieldType, Severity } from "../contract/types.js";
import type { DuckDBDataChunk } from "../util/duckdb.js";

/** A validated row: contract fields only (plus unknown fields under `allow`), values coerced. */
export type Row = Record<string, unknown>;

export interface RuleFailure {
  /** Rule id (`RowRule.id`), or a built-in id: `type:<field>` (coercion), `schema:unknown_fields`, `record:not_object`, `primary_key_not_null:<field>`. */
  ruleId: string;
  message: string;
}

export interface BadRow {
  /** Index of the record in the input array (arrival order). */
  index: number;
  /** The record exactly as it was given to `validate`. */
  record: unknown;
  errors: RuleFailure[];
}

export interface RuleCount {
  ruleId: string;
  severity: Severity;
  /** Rows that failed the rule. For warning/info rules the rows still count as good. */
  failed: number;
}

export interface DatasetRuleResult {
  ruleId: string;
  kind: string;
  severity: Severity;
  passed: boolean;
  /** The measured value (duplicate count, null ratio, row count); NaN when the rule could not be measured. */
  observed: number;
  message: string;
  /** The engine's message when measuring the rule threw; `passed` is then false. */
  error?: string;
}

/**
 * The good rows column by column, in a form a DuckDB takes without building row objects or
 * spelling values as text: DuckDB data chunks in arrival order (the DuckDB engine makes them
 * inside DuckDB, and the DuckDB lake writer appends them as they are), or a Parquet file (the
 * Polars engine writes one from its frame, and the DuckDB lake writer reads it with
 * `read_parquet`). Values are the canonical row values (docs/contracts.md) in the column types
 * the lake stores them in: VARCHAR, BIGINT, DOUBLE, BOOLEAN, DECIMAL(p,s), DATE, TIMESTAMP
 * (microseconds, UTC, no zone), and json fields as VARCHAR holding their JSON text.
 */
export type GoodColumns = GoodChunks | GoodParquet;

interface GoodColumnsCommon {
  count: number;
  /** The contract's fields, in contract order: one column each. */
  fields: Array<{ name: string; type: FieldType }>;
  /**
   * Under `unknown_fields: allow`, one more column after the fields, for the undeclared keys a
   * row keeps: NULL on every row (GoodColumns are only given when no good row has such keys).
   */
  extraColumn: boolean;
  /**
   * Over the contract's primary key (`fields`), when it has one: no two rows share a key (NULL
   * parts matching each other), and some row has a NULL key part. For targets that replace rows
   * by key the engine has already kept the last row per key and quarantined NULL key parts.
   */
  keys?: {
    fields: string[];
    unique: boolean;
    someNull: boolean;
    /**
     * GoodChunks, for targets that replace rows by key (merge, keyed overwrite): the good rows'
     * keys as `{"k0":[…],"k1":[…]}`, one list per key field, each value DuckDB's text for it
     * (`CAST(… AS VARCHAR)`, which casts back to the same value), NULL as null. (A Parquet
     * file's reader takes the keys from the file.)
     */
    doc?: string;
    /**
     * With `doc`: the first key field's smallest and largest value among the good rows, as
     * DuckDB's text for them (absent when every row's first key part is NULL). A merge whose
     * range holds no stored key has nothing to delete.
     */
    range?: { low: string; high: string };
  };
}

/** GoodColumns as DuckDB data chunks (the DuckDB engine). */
export interface GoodChunks extends GoodColumnsCommon {
  /**
   * Chunks of at most DuckDB's vector size; their row counts add up to `count`. After the fields
   * (and the extra column) each has one more: a flat, non-NULL BIGINT vector, the row's position
   * in the batch. It is a slot for the reader to overwrite: the lake writes each row's sequence
   * number there and appends the chunks to its table as they are (src/lake/row-seq.ts).
   */
  chunks: readonly DuckDBDataChunk[];
  writeParquet?: undefined;
}

/** GoodColumns as a Parquet file (the Polars engine). */
export interface GoodParquet extends GoodColumnsCommon {
  /**
   * Write the file at `path` (a writer that stores rows never asks): one column per field, then
   * the extra column, named `c0`, `c1`, … in that order, `count` rows in arrival order. A reader
   * numbers the rows by their place in the file (`file_row_number`).
   */
  writeParquet: (path: string) => Promise<void>;
  chunks?: undefined;
}

export interface ValidationResult {
  /**
   * Good rows in arrival order, values canonical (see docs/contracts.md "Canonical values").
   * An engine that returns `goodColumns` builds these on first access.
   */
  good: Row[];
  /** good.length, without building the rows. */
  goodCount: number;
  /**
   * Good rows left out because a later good row of the batch has the same primary key (targets
   * that replace rows by key: merge, overwrite with a key; see engine/keyed.ts). Every record is
   * counted once: records = goodCount + bad.length + supersededCount.
   */
  supersededCount: number;
  /** Present when the good rows hold exactly the contract's fields (no passthrough keys). */
  goodColumns?: GoodColumns;
  bad: BadRow[];
  /** Per-rule failure counts, including warning/info rules that do not quarantine. */
  ruleCounts: RuleCount[];
  /** Dataset rules evaluated over this batch's good rows. They report; they never quarantine. */
  datasetRules: DatasetRuleResult[];
}

export type EngineName = "duckdb" | "polars" | "spark";

export interface Engine {
  readonly name: EngineName;
  /**
   * May be called again before an earlier call has settled (StreamSink validates ahead); each
   * call resolves to its own batch's result.
   */
  validate(records: readonly unknown[], contract: Contract): Promise<ValidationResult>;
  close(): Promise<void>;
}
