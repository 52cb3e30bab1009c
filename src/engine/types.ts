import type { Contract, FieldType, Severity } from "../contract/types.js";

/** A validated row: contract fields only (plus unknown fields under `allow`), values coerced. */
export type Row = Record<string, unknown>;

export interface RuleFailure {
  /** Rule id (`RowRule.id`), or a built-in id: `type:<field>` (coercion), `schema:unknown_fields`, `record:not_object`. */
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
  /** The measured value (duplicate count, null ratio, row count). */
  observed: number;
  message: string;
}

/**
 * The good rows column by column, each column one JSON array text in arrival order: what a
 * writer can pass to its database as it is, without building row objects (the DuckDB engine
 * makes them inside DuckDB). Values are the canonical row values (docs/contracts.md), spelt:
 * integer as JSON numbers with every digit (beyond 2^53 too: do not read them with JSON.parse),
 * json as its JSON text in a string, decimal, date and timestamp as their canonical text, the
 * rest as JSON strings, numbers and booleans.
 */
export interface GoodColumns {
  count: number;
  /** One per contract field, in contract order. */
  fields: Array<{ name: string; type: FieldType; json: string }>;
  /**
   * Over the contract's primary key (`fields`), when it has one: no two rows share a key (NULL
   * parts matching each other), and some row has a NULL key part.
   */
  keys?: { fields: string[]; unique: boolean; someNull: boolean };
}

export interface ValidationResult {
  /**
   * Good rows in arrival order, values canonical (see docs/contracts.md "Canonical values").
   * An engine that returns `goodColumns` builds these on first access.
   */
  good: Row[];
  /** good.length, without building the rows. */
  goodCount: number;
  /** Present when the good rows hold exactly the contract's fields (no passthrough keys). */
  goodColumns?: GoodColumns;
  bad: BadRow[];
  /** Per-rule failure counts, including warning/info rules that do not quarantine. */
  ruleCounts: RuleCount[];
  /** Dataset rules evaluated over this batch's good rows. They report; they never quarantine. */
  datasetRules: DatasetRuleResult[];
}

export type EngineName = "duckdb" | "polars";

export interface Engine {
  readonly name: EngineName;
  validate(records: readonly unknown[], contract: Contract): Promise<ValidationResult>;
  close(): Promise<void>;
}
