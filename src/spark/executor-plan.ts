/**
 * What SparkStreamSink's executors run for each micro-batch: the contract's validation plan
 * (the one every engine runs) with everything the executors need to apply it without this
 * process — how to encode a record (spark/jsvalues.py mirrors src/engine/encode.ts from these
 * field specs), the compiled Spark SQL statement, the good rows' typed columns, and each
 * check's message as a template around the value it shows (assemble.ts's wording).
 *
 * Built once per run and handed to the driver at start: no record comes back here.
 */
import type { Contract, FieldSpec } from "../contract/types.js";
import { messageTemplate, type MessageTemplate } from "../engine/assemble.js";
import { decimalPrecision, decimalScale } from "../engine/canonical.js";
import { compilePlan } from "../engine/plan.js";
import { BAD_COL, FAIL_COL, SUPERSEDED_COL, UNKNOWN_COL, type Plan } from "../engine/plan-types.js";
import { buildSparkStatement, sparkIdent } from "../engine/spark-sql.js";

/** The columns the executors add to each micro-batch row before the statement reads it. */
export const RAW_COL = "__ll_raw";
export const POSITION_COL = "__ll_pos";
/** Per json field: the lake's text of its value where it differs from the engine's (lone surrogates). */
const lakeJsonCol = (k: number): string => `__ll_jw${k}`;

/** A declared field's Delta column type, as Spark SQL spells it. */
const SPARK_TYPES: Record<FieldSpec["type"], (f: FieldSpec) => string> = {
  string: () => "STRING",
  integer: () => "BIGINT",
  double: () => "DOUBLE",
  boolean: () => "BOOLEAN",
  date: () => "DATE",
  timestamp: () => "TIMESTAMP",
  json: () => "STRING",
  decimal: (f) => `DECIMAL(${decimalPrecision(f)},${decimalScale(f)})`,
};

export interface ExecutorField {
  keys: string[];
  /** How encode.ts encodes it: encodeJson, encodeTimestamp or encodeText. */
  mode: "json" | "timestamp" | "text";
  keepNested: boolean;
  stringText: boolean;
  /** The column of its text, and of the lake's JSON text (json fields only). */
  text: string;
  lakeJson?: string;
}

export interface ExecutorCheck extends MessageTemplate {
  ruleId: string;
  flag: string;
  /** Index into `fields` of the field whose value the message shows. */
  field: number;
}

export interface ExecutorPlan {
  fields: ExecutorField[];
  /** Keys that are not unknown (declared names and aliases). */
  known: string[];
  tracksUnknown: boolean;
  /** The packed tag columns (17 fields each). */
  tagWords: string[];
  unknownCol: string;
  /** The statement over the batch view (`__ll_batch`), unordered. */
  sql: string;
  checks: ExecutorCheck[];
  badCol: string;
  failCol: string;
  supersededCol?: string;
  /** The Delta table's columns, in the contract's order, as SQL over the statement's rows. */
  good: string[];
}

/** The executor plan of a contract with declared fields; ConfigError where Spark has no exact meaning. */
export function executorPlan(contract: Contract): { plan: Plan; executor: ExecutorPlan } {
  // Every string's text goes to the engine: good rows are made there, not from the records.
  const plan = compilePlan(contract, { allStringText: true });
  const fields: ExecutorField[] = plan.fields.map((f) => ({
    keys: f.keys,
    mode: f.json ? "json" : f.type === "timestamp" ? "timestamp" : "text",
    keepNested: f.keepNested,
    stringText: f.stringText,
    text: f.text,
    ...(f.json ? { lakeJson: lakeJsonCol(f.k) } : {}),
  }));
  const declared = plan.fields.filter((f) => f.spec);
  const stmt = buildSparkStatement(plan, contract, {
    carry: [
      { name: RAW_COL, type: "STRING" },
      { name: POSITION_COL, type: "STRING" },
      ...fields.flatMap((f) => (f.lakeJson ? [{ name: f.lakeJson, type: "STRING" as const }] : [])),
    ],
    keep: [UNKNOWN_COL, FAIL_COL, ...declared.map((f) => f.name)],
    ordered: false,
  });
  const byName = new Map(declared.map((f) => [f.name, f]));
  const good = contract.fields.map((spec) => {
    const f = byName.get(spec.name)!;
    // The typed value the statement made (plan-coerce.ts names it after the field).
    const value = f.json ? `coalesce(${sparkIdent(lakeJsonCol(f.k))}, ${sparkIdent(f.name)})` : sparkIdent(f.name);
    return `CAST(${value} AS ${SPARK_TYPES[spec.type](spec)}) AS ${sparkIdent(spec.name)}`;
  });
  const executor: ExecutorPlan = {
    fields,
    known: [...plan.knownKeys],
    tracksUnknown: plan.tracksUnknown,
    tagWords: plan.tagWords,
    unknownCol: UNKNOWN_COL,
    sql: stmt.sql,
    checks: plan.checks.map((c) => ({ ruleId: c.ruleId, flag: c.flag, field: c.field?.k ?? -1, ...messageTemplate(c) })),
    badCol: BAD_COL,
    failCol: FAIL_COL,
    ...(plan.supersedeBy ? { supersededCol: SUPERSEDED_COL } : {}),
    good,
  };
  return { plan, executor };
}
