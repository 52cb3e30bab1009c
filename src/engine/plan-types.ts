/**
 * The validation plan's shape (what `compilePlan` produces and both engines execute) and the
 * engine column names it reserves. The encoder reads it too, so it depends on nothing but the
 * contract types and the IR.
 */
import type { Contract, DatasetRule, FieldSpec, FieldType, RowRule, Severity } from "../contract/types.js";
import type { Layer } from "./ir.js";

export const INTERNAL_PREFIX = "__ll_";
export const UNKNOWN_COL = "__ll_u";
export const BAD_COL = "__ll_bad";
export const FAIL_COL = "__ll_fail";
/** True on a good row that a later good row of the batch with the same primary key replaces. */
export const SUPERSEDED_COL = "__ll_sup";

/** One input column produced by the JS pass: a declared field, or an undeclared key a rule reads. */
export interface PlanField {
  k: number;
  name: string;
  /** Input keys tried in order: the field's own name, then its aliases. */
  keys: string[];
  /** Absent for an undeclared key a rule refers to: its value is used as text, never a type error. */
  spec?: FieldSpec;
  type: FieldType | "untyped";
  /** Encode the value as JSON text (json fields). */
  json: boolean;
  /** Keep the JSON text of nested values (untyped columns, so rules can see it). */
  keepNested: boolean;
  /**
   * Send the text of string values. A `string` field no rule reads needs only the tag (its
   * good value is the record's own string), so the engine gets text only for the numbers
   * and booleans it has to spell.
   */
  stringText: boolean;
  /**
   * Numbers may travel as JSON numbers (PlanOptions.numbersAsJson), for a field whose type
   * only reads them as numbers (integer, double, decimal).
   */
  numberJson: boolean;
  /** Engine columns: the value's text, its tag (TAG in encode.ts), the coerced value. */
  text: string;
  tag: string;
  val: string;
  err?: string;
}

export type CheckKind = "unknown" | "type" | "primary_key" | RowRule["kind"];

export interface Check {
  code: number;
  ruleId: string;
  severity: Severity;
  kind: CheckKind;
  builtin: boolean;
  field?: PlanField;
  rule?: RowRule;
  flag: string;
}

/**
 * How a good row's value is made from engine columns:
 * - `string`: `col` holds text only where the input was not a string (a number or boolean
 *   written as text); otherwise the value is the input string itself, taken from the record
 *   rather than copied out of the engine and back;
 * - `int`: `col` a double for |v| <= 2^53-1, `bigCol` the decimal text beyond (→ bigint);
 * - `text` / `float` / `bool`: `col` as is; `json`: `col` is JSON text.
 */
export type OutputKind = "string" | "text" | "int" | "float" | "bool" | "json";

export interface Output {
  name: string;
  kind: OutputKind;
  col: string;
  bigCol?: string;
  field: PlanField;
}

export interface DatasetPlan {
  rule: DatasetRule;
  /** unique: key columns; null_ratio: a boolean column, true where the value is null. */
  cols: string[];
}

export interface Plan {
  /** Declared fields in contract order, then undeclared keys that rules read. */
  fields: PlanField[];
  passthrough: boolean;
  unknownPolicy: Contract["schemaPolicy"]["unknownFields"];
  /** Keys that are not "unknown": declared names and their aliases. */
  knownKeys: Set<string>;
  checks: Check[];
  /** Layers before the SQL rules; `sqlRules` are evaluated on their result; then `postLayers`. */
  layers: Layer[];
  sqlRules: Array<[col: string, sql: string]>;
  postLayers: Layer[];
  outputs: Output[];
  /** Engine columns the good rows are built from, in a fixed order. */
  outputColumns: string[];
  dataset: DatasetPlan[];
  /**
   * Key columns of the contract's primary key, when every part is a declared field: the DuckDB
   * engine reports whether the good rows repeat a key, so the lake need not look.
   */
  primaryKeyCols?: string[];
  /** The declared names of those fields. */
  primaryKeyFields?: string[];
  /**
   * For targets that replace rows by key (see keyed.ts): the key columns over which only the
   * last good row per key is kept; the others are flagged `SUPERSEDED_COL` (a post layer).
   */
  supersedeBy?: string[];
  /** Does any check need the unknown-keys column filled in. */
  tracksUnknown: boolean;
  /**
   * Under `unknown_fields: allow` (and declared fields): good rows keep undeclared keys in one
   * more column, so the JavaScript pass marks the records that have any.
   */
  keepsExtraKeys: boolean;
  /** Engine columns holding the packed tags, one per 17 fields (at least one). */
  tagWords: string[];
}

export interface PlanOptions {
  /**
   * Send the text of every string value, so the engine can return whole good columns
   * (GoodColumns) instead of leaving strings to be taken from the records.
   */
  allStringText?: boolean;
  /**
   * Let numeric fields' numbers go as JSON numbers where JSON.stringify and DuckDB's reading
   * of them spell the same text as `numberText` (see encodeNumber in encode.ts): the batch
   * document then spells them instead of the JavaScript pass.
   */
  numbersAsJson?: boolean;
}
