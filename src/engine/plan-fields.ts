/**
 * Which input keys become plan columns: the declared fields in contract order, then each
 * undeclared key a rule reads, numbered in the order rules first name them.
 */
import type { Contract, FieldSpec, RowRule } from "../contract/types.js";
import { analyzeRuleExpression } from "../contract/sql-guard.js";
import { ConfigError } from "../errors.js";
import { decimalPrecision, decimalScale } from "./canonical.js";
import { INTERNAL_PREFIX, type PlanField, type PlanOptions } from "./plan-types.js";

const NUMERIC_TYPES: ReadonlySet<string> = new Set(["integer", "double", "decimal"]);

export interface FieldTable {
  /** Declared fields, then undeclared keys that rules read. */
  fields: PlanField[];
  /** The declared fields alone, in contract order. */
  declared: PlanField[];
  /** The field a rule names, added as an undeclared key when there is none yet. */
  fieldFor(name: string, where: string): PlanField;
  /** The field a name refers to, if any (nothing is added). */
  find(name: string): PlanField | undefined;
}

export function declareFields(contract: Contract, options: PlanOptions): FieldTable {
  const fields: PlanField[] = [];
  const byName = new Map<string, PlanField>();
  const addField = (name: string, spec?: FieldSpec): PlanField => {
    const k = fields.length;
    const f: PlanField = {
      k,
      name,
      keys: spec ? [name, ...spec.aliases.filter((a) => a !== name)] : [name],
      type: spec ? spec.type : "untyped",
      json: spec?.type === "json",
      keepNested: !spec,
      stringText: options.allStringText === true || spec?.type !== "string",
      numberJson: options.numbersAsJson === true && spec !== undefined && NUMERIC_TYPES.has(spec.type),
      text: `__ll_x${k}`,
      tag: `__ll_t${k}`,
      val: `__ll_v${k}`,
    };
    if (spec) {
      f.spec = spec;
      f.err = `__ll_e${k}`;
    }
    fields.push(f);
    byName.set(name, f);
    return f;
  };

  for (const spec of contract.fields) {
    checkFieldSpec(spec, byName);
    addField(spec.name, spec);
  }
  const declared = fields.slice();
  const declaredLower = new Map(declared.map((f) => [f.name.toLowerCase(), f]));
  // Field names compare case-insensitively, as in the contract loader and in DuckDB.
  const find = (name: string): PlanField | undefined => byName.get(name) ?? declaredLower.get(name.toLowerCase());
  const fieldFor = (name: string, where: string): PlanField => {
    const f = find(name);
    if (f) return f;
    if (name.startsWith(INTERNAL_PREFIX)) throw new ConfigError(where, `"${name}" is a reserved name`);
    return addField(name);
  };
  return { fields, declared, fieldFor, find };
}

function checkFieldSpec(spec: FieldSpec, byName: ReadonlyMap<string, PlanField>): void {
  if (spec.name.startsWith(INTERNAL_PREFIX)) {
    throw new ConfigError(`fields.${spec.name}`, `field names starting with "${INTERNAL_PREFIX}" are reserved`);
  }
  if (byName.has(spec.name)) throw new ConfigError(`fields.${spec.name}`, "field declared twice");
  if (spec.type === "decimal") {
    const p = decimalPrecision(spec);
    const s = decimalScale(spec);
    if (!(Number.isInteger(p) && Number.isInteger(s) && p >= 1 && p <= 38 && s >= 0 && s <= p)) {
      throw new ConfigError(`fields.${spec.name}`, `decimal(${p},${s}) needs 1 <= precision <= 38 and 0 <= scale <= precision`);
    }
  }
}

/**
 * Add the fields every rule reads (SQL rules first, then row rules, then dataset rules) and
 * return the fields each SQL rule reads.
 */
export function resolveRuleFields(contract: Contract, table: FieldTable): Map<RowRule, PlanField[]> {
  // SQL rules: the guard (the same the contract loader runs) rejects statements and unsafe
  // functions even in hand-built contracts, and tells us the columns each rule reads.
  const sqlRefs = new Map<RowRule, PlanField[]>();
  const fieldNames = contract.fields.map((f) => f.name);
  for (const rule of contract.rowRules) {
    if (rule.kind !== "sql") continue;
    let columns: string[];
    try {
      columns = analyzeRuleExpression(rule.sql, { fields: fieldNames }).columns;
    } catch (err) {
      throw new ConfigError(`rule ${rule.id}`, (err as Error).message, { cause: err });
    }
    sqlRefs.set(rule, columns.map((name) => table.fieldFor(name, `rule ${rule.id}`)));
  }
  // Dataset sql rules read the typed fields by name, as sql row rules do.
  const datasetSqlRefs = contract.datasetRules.flatMap((rule) =>
    rule.kind === "sql" ? rule.query.columns.map((name) => table.fieldFor(name, `dataset rule ${rule.id}`)) : [],
  );
  for (const refs of [...sqlRefs.values(), datasetSqlRefs]) refs.forEach((f) => (f.stringText = true));
  for (const rule of contract.rowRules) {
    if (rule.kind !== "sql") table.fieldFor(rule.field, `rule ${rule.id}`);
  }
  for (const rule of contract.datasetRules) {
    if (rule.kind === "unique") rule.fields.forEach((n) => table.fieldFor(n, `dataset rule ${rule.id}`));
    if (rule.kind === "null_ratio") table.fieldFor(rule.field, `dataset rule ${rule.id}`);
  }
  return sqlRefs;
}
