/**
 * Turn what an engine computed into a ValidationResult. Shared by both engines so that
 * row shapes, error order and messages cannot drift apart.
 */
import type { DatasetRule, RowRule } from "../contract/types.js";
import { typeLabel } from "./canonical.js";
import { defineLazy } from "../util/lazy.js";
import { lookupField, type EncodedBatch } from "./encode.js";
import { parseJsonRecord } from "../util/exact-json.js";
import type { Check, Plan, PlanField } from "./plan-types.js";
import type { BadRow, DatasetRuleResult, GoodColumns, Row, RuleCount, RuleFailure, ValidationResult } from "./types.js";

/** What each engine hands back for one batch. Positions are engine rows (0..n-1). */
export interface EngineOutput {
  /**
   * Per `plan.outputColumns` entry: that column's values over the good rows, in order; or a
   * function that makes them, called when the rows are first asked for.
   */
  goodColumns: unknown[][] | (() => unknown[][]);
  /** The good rows as GoodColumns, when the engine made them. */
  typed?: GoodColumns;
  /** Engine positions of bad rows, ascending, with the check codes each failed (all severities). */
  bad: Array<{ pos: number; codes: number[] }>;
  /** Engine positions of superseded good rows (Plan.supersedeBy), ascending; absent: none. */
  superseded?: number[];
  /** Failures per check, indexed by check code. */
  counts: number[];
  goodCount: number;
  /**
   * Per dataset rule over the rows written (not superseded): unique → distinct key count,
   * null_ratio → null count, row_count → unused, sql → the query's value (null when it gave NULL).
   */
  dataset: Array<number | null>;
  /** Per dataset rule, the engine's message when measuring it threw (its `dataset` entry is then unused). */
  datasetErrors?: ReadonlyArray<string | undefined>;
}

const MAX_SHOWN = 120;

/** A value as it appears in a message: JSON-ish, shortened. */
export function showValue(v: unknown): string {
  let s: string;
  try {
    if (typeof v === "bigint") s = v.toString();
    else if (typeof v === "number" && !Number.isFinite(v)) s = String(v);
    else if (v instanceof Date) s = Number.isNaN(v.getTime()) ? "Invalid Date" : JSON.stringify(v.toISOString());
    else s = JSON.stringify(v) ?? String(v);
  } catch {
    s = Object.prototype.toString.call(v);
  }
  return s.length > MAX_SHOWN ? s.slice(0, MAX_SHOWN - 1) + "…" : s;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return v.constructor?.name ?? "object";
  return typeof v;
}

function message(check: Check, rec: Record<string, unknown>, unknown: string | null): string {
  const f = check.field;
  return messageWith(check, f ? showValue(lookupField(rec, f)) : "", unknown);
}

function messageWith(check: Check, shown: string, unknown: string | null): string {
  const f = check.field;
  switch (check.kind) {
    case "unknown":
      return `unknown fields: ${unknown ?? ""}`;
    case "type":
      return `${f!.name}: cannot convert ${shown} to ${typeLabel(f!.spec!)}`;
    case "primary_key":
      return `${f!.name} is null or missing: it is part of the primary key, by which the target identifies rows`;
    default:
      return ruleMessage(check.rule!, f?.name ?? "", shown);
  }
}

function ruleMessage(rule: RowRule, field: string, shown: string): string {
  switch (rule.kind) {
    case "not_null":
      return `${field} is null`;
    case "accepted_values":
      return `${field}: ${shown} is not one of ${rule.values.map((v) => showValue(v)).join(", ")}`;
    case "regex_match":
      return `${field}: ${shown} does not match /${rule.pattern}/`;
    case "range": {
      const lo = rule.min === undefined ? "" : `${rule.inclusive ? ">=" : ">"} ${rule.min}`;
      const hi = rule.max === undefined ? "" : `${rule.inclusive ? "<=" : "<"} ${rule.max}`;
      return `${field}: ${shown} is out of range (${[lo, hi].filter(Boolean).join(" and ")})`;
    }
    case "sql":
      return `${rule.id}: not true: ${rule.sql}`;
  }
}

/**
 * A check's message as fixed text around the one varying part: the field's value as showValue
 * spells it (`value`), the record's unknown keys (`unknown`), or nothing. For engines that build
 * messages away from this process (SparkStreamSink's executors) from the same wording.
 */
export interface MessageTemplate {
  before: string;
  after: string;
  show: "value" | "unknown" | "none";
}

const SLOT = "\u0000\u0001slot\u0001\u0000";

export function messageTemplate(check: Check): MessageTemplate {
  const show = check.kind === "unknown" ? "unknown" : check.field ? "value" : "none";
  const parts = messageWith(check, show === "value" ? SLOT : "", show === "unknown" ? SLOT : null).split(SLOT);
  if (parts.length === 1) return { before: parts[0]!, after: "", show: "none" };
  if (parts.length !== 2) throw new Error(`internal error: the message of ${check.ruleId} shows its value twice`);
  return { before: parts[0]!, after: parts[1]!, show };
}

/** The batch's rule counts: records that were not objects first, then each check's failures. */
export function ruleCountsOf(plan: Plan, counts: readonly number[], notObject: number): RuleCount[] {
  const ruleCounts: RuleCount[] = [];
  if (notObject > 0) ruleCounts.push({ ruleId: "record:not_object", severity: "error", failed: notObject });
  for (const c of plan.checks) {
    const failed = counts[c.code] ?? 0;
    if (!c.builtin || failed > 0) ruleCounts.push({ ruleId: c.ruleId, severity: c.severity, failed });
  }
  return ruleCounts;
}

function datasetResult(rule: DatasetRule, value: number | null | undefined, goodCount: number, error?: string): DatasetRuleResult {
  const base = { ruleId: rule.id, kind: rule.kind, severity: rule.severity };
  // A rule that cannot be measured has not passed.
  if (error !== undefined) return { ...base, passed: false, observed: Number.NaN, message: `${rule.id}: cannot be evaluated: ${error}`, error };
  if (rule.kind === "sql") return sqlDatasetResult(rule, value, goodCount);
  const measured = value ?? 0;
  switch (rule.kind) {
    case "unique": {
      const dup = goodCount - measured;
      const on = rule.fields.join(", ");
      return {
        ...base,
        passed: dup === 0,
        observed: dup,
        message: dup === 0 ? `(${on}) is unique over ${goodCount} rows` : `${dup} duplicate rows on (${on})`,
      };
    }
    case "null_ratio": {
      const ratio = goodCount === 0 ? 0 : measured / goodCount;
      return {
        ...base,
        passed: ratio <= rule.max,
        observed: ratio,
        message: `${rule.field}: null ratio ${ratio} (${measured} of ${goodCount} rows), max ${rule.max}`,
      };
    }
    case "row_count_between": {
      const passed = (rule.min === undefined || goodCount >= rule.min) && (rule.max === undefined || goodCount <= rule.max);
      const range = `${rule.min ?? "-∞"}..${rule.max ?? "∞"}`;
      return { ...base, passed, observed: goodCount, message: `${goodCount} rows, expected ${range}` };
    }
  }
}

/**
 * A dataset `sql` rule's value against its bounds. Over a batch without good rows the query is
 * not run (engines skip empty batches), so it passes there on every engine alike; a NULL value
 * fails, as in the Python package.
 */
function sqlDatasetResult(rule: Extract<DatasetRule, { kind: "sql" }>, value: number | null | undefined, goodCount: number): DatasetRuleResult {
  const base = { ruleId: rule.id, kind: rule.kind, severity: rule.severity };
  if (goodCount === 0) return { ...base, passed: true, observed: Number.NaN, message: `${rule.id}: not evaluated: no good rows in the batch` };
  const { between, lessThan, greaterThan } = rule.bounds;
  const expected =
    between !== undefined ? `between ${between[0]} and ${between[1]}` : lessThan !== undefined ? `< ${lessThan}` : greaterThan !== undefined ? `> ${greaterThan}` : "a value";
  if (value === null || value === undefined || Number.isNaN(value)) {
    return { ...base, passed: false, observed: Number.NaN, message: `${rule.id}: the query gave NULL, expected ${expected}` };
  }
  const passed =
    between !== undefined ? value >= between[0] && value <= between[1] : lessThan !== undefined ? value < lessThan : greaterThan !== undefined ? value > greaterThan : true;
  return { ...base, passed, observed: value, message: `${rule.id}: ${value}, expected ${expected}` };
}

export function emptyOutput(plan: Plan): EngineOutput {
  return {
    goodColumns: plan.outputColumns.map(() => []),
    bad: [],
    counts: plan.checks.map(() => 0),
    goodCount: 0,
    dataset: plan.dataset.map((d) => (d.rule.kind === "sql" ? null : 0)),
  };
}

type RowFactory = (cols: unknown[][], g: number, rec: Record<string, unknown>) => Row;

const factories = new WeakMap<Plan, RowFactory>();

const asString = (v: unknown, rec: Record<string, unknown>, f: PlanField): unknown => {
  if (v !== null && v !== undefined) return v;
  // The engine leaves out values that were strings: they are their own canonical form.
  const raw = lookupField(rec, f);
  return typeof raw === "string" ? raw : raw instanceof Date ? raw.toISOString() : null;
};
const asInt = (v: unknown, big: unknown): unknown => (typeof big === "string" ? BigInt(big) : (v ?? null));
const asJson = (v: unknown): unknown => (typeof v === "string" ? parseJsonRecord(v) : null);

/**
 * A function that makes one good row as an object literal with the contract's keys: V8 then
 * creates every row with its final shape at once (measured 4× faster than adding keys one by
 * one). Keys are embedded with JSON.stringify; a field called `__proto__` takes the slow path,
 * since in a literal that key would set the prototype.
 */
function rowFactory(plan: Plan): RowFactory {
  let f = factories.get(plan);
  if (f) return f;
  const colIndex = new Map(plan.outputColumns.map((c, i) => [c, i]));
  const fields = plan.outputs.map((o) => o.field);
  if (plan.outputs.some((o) => o.name === "__proto__")) {
    f = (cols, g, rec) => {
      const row: Row = {};
      plan.outputs.forEach((o, i) => setKey(row, o.name, valueOf(o, cols, colIndex, g, rec, fields[i]!)));
      return row;
    };
  } else {
    const members = plan.outputs.map((o, i) => {
      const v = `c[${colIndex.get(o.col)!}][g]`;
      const key = JSON.stringify(o.name);
      switch (o.kind) {
        case "string":
          return `${key}: S(${v}, rec, F[${i}])`;
        case "int":
          return `${key}: I(${v}, c[${colIndex.get(o.bigCol!)!}][g])`;
        case "json":
          return `${key}: J(${v})`;
        default:
          return `${key}: ${v} ?? null`;
      }
    });
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated row factory, for speed
    const make = new Function("S", "I", "J", "F", `return (c, g, rec) => ({ ${members.join(", ")} });`) as (
      ...helpers: unknown[]
    ) => RowFactory;
    f = make(asString, asInt, asJson, fields);
  }
  factories.set(plan, f);
  return f;
}

function valueOf(
  o: Plan["outputs"][number],
  cols: unknown[][],
  colIndex: Map<string, number>,
  g: number,
  rec: Record<string, unknown>,
  field: PlanField,
): unknown {
  const v = cols[colIndex.get(o.col)!]![g];
  switch (o.kind) {
    case "string":
      return asString(v, rec, field);
    case "int":
      return asInt(v, cols[colIndex.get(o.bigCol!)!]![g]);
    case "json":
      return asJson(v);
    default:
      return v ?? null;
  }
}

function buildRows(
  records: readonly unknown[],
  plan: Plan,
  enc: EncodedBatch,
  out: EngineOutput,
  engineBad: EngineOutput["bad"],
): Row[] {
  const make = rowFactory(plan);
  const cols = typeof out.goodColumns === "function" ? out.goodColumns() : out.goodColumns;
  // Engines hand back columns by position: a mismatch would shift values between rows.
  // (`assemble` has checked the counts: goodCount + bad = n.)
  const skip = skipped(engineBad, out.superseded);
  const consistent = cols.every((c) => c.length === out.goodCount) && skip !== undefined;
  if (!consistent) throw new Error("internal error: engine output does not line up with the batch");
  const keepExtra = plan.passthrough || plan.unknownPolicy === "allow";
  const extra = enc.extra;
  const known = plan.knownKeys;
  const rows: Row[] = new Array<Row>(out.goodCount);
  let si = 0;
  let g = 0;
  for (let pos = 0; pos < enc.n; pos++) {
    if (si < skip.length && skip[si] === pos) {
      si++;
      continue;
    }
    const rec = records[enc.index[pos]!] as Record<string, unknown>;
    const row = make(cols, g, rec);
    if (keepExtra && (extra === undefined || extra[pos] === 1)) {
      for (const key in rec) {
        if (Object.hasOwn(rec, key) && !known.has(key)) setKey(row, key, rec[key]);
      }
    }
    rows[g++] = row;
  }
  return rows;
}

/**
 * The positions that are not good rows (bad, then superseded, merged), ascending; undefined when
 * either list is out of order or they share a position.
 */
function skipped(bad: EngineOutput["bad"], superseded: readonly number[] | undefined): number[] | undefined {
  const out: number[] = [];
  let b = 0;
  let s = 0;
  const sup = superseded ?? [];
  while (b < bad.length || s < sup.length) {
    const next = s >= sup.length || (b < bad.length && bad[b]!.pos < sup[s]!) ? bad[b++]!.pos : sup[s++]!;
    if (out.length > 0 && next <= out[out.length - 1]!) return undefined;
    out.push(next);
  }
  return out;
}

export function setKey(row: Row, key: string, value: unknown): void {
  // `__proto__` must become a data property, not the row's prototype.
  if (key === "__proto__") Object.defineProperty(row, key, { value, enumerable: true, writable: true, configurable: true });
  else row[key] = value;
}

export function assemble(
  records: readonly unknown[],
  plan: Plan,
  enc: EncodedBatch,
  out: EngineOutput | undefined,
): ValidationResult {
  const checks = plan.checks;
  // ── bad rows, merged in arrival order ──
  const bad: BadRow[] = [];
  const engineBad = out?.bad ?? [];
  let a = 0;
  let b = 0;
  const notObj = enc.notObject;
  while (a < notObj.length || b < engineBad.length) {
    const ia = a < notObj.length ? notObj[a]! : Infinity;
    const eb = b < engineBad.length ? engineBad[b]! : undefined;
    const ib = eb ? enc.index[eb.pos]! : Infinity;
    if (ia < ib) {
      const rec = records[ia];
      bad.push({
        index: ia,
        record: rec,
        errors: [{ ruleId: "record:not_object", message: `record is not an object (got ${kindOf(rec)})` }],
      });
      a++;
    } else {
      const rec = records[ib] as Record<string, unknown>;
      const unknown = enc.unknown[eb!.pos] ?? null;
      const errors: RuleFailure[] = eb!.codes.map((code) => {
        const c = checks[code]!;
        return { ruleId: c.ruleId, message: message(c, rec, unknown) };
      });
      bad.push({ index: ib, record: rec, errors });
      b++;
    }
  }

  const supersededCount = out?.superseded?.length ?? 0;
  if (out && out.goodCount + engineBad.length + supersededCount !== enc.n) {
    throw new Error("internal error: engine output does not line up with the batch");
  }

  // ── counts ──
  const ruleCounts = ruleCountsOf(plan, out?.counts ?? [], notObj.length);
  const goodCount = out?.goodCount ?? 0;
  const datasetRules = plan.dataset.map((d, i) => datasetResult(d.rule, out?.dataset[i], goodCount, out?.datasetErrors?.[i]));
  const result = { goodCount, supersededCount, bad, ruleCounts, datasetRules } as ValidationResult;
  if (out && typeof out.goodColumns === "function") {
    // Built on first access (and kept): a stream's writer may never need row objects.
    let rows: Row[] | undefined;
    defineLazy(result, "good", () => (rows ??= buildRows(records, plan, enc, out, engineBad)));
  } else {
    result.good = out ? buildRows(records, plan, enc, out, engineBad) : [];
  }
  // GoodColumns stand for the rows only when the rows are exactly the contract's fields.
  if (out?.typed && !plan.passthrough && (plan.unknownPolicy !== "allow" || (enc.extra && !enc.extra.includes(1)))) {
    result.goodColumns = out.typed;
  }
  return result;
}
