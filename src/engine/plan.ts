/**
 * Compile a Contract into a validation plan: which input keys become columns, the
 * coercion and rule expressions (engine-neutral IR), the checks a row can fail, and
 * what goes out. Both engines execute the same plan.
 */
import type { Contract } from "../contract/types.js";
import { TAG, TAGS_PER_WORD } from "./encode.js";
import { and, col, eq, int, not, type Expr, type Layer } from "./ir.js";
import { keyedTarget, keyIdentifiesRows } from "./keyed.js";
import { compileChecks, finalLayer } from "./plan-checks.js";
import { compileCoercion } from "./plan-coerce.js";
import { declareFields, resolveRuleFields, type FieldTable } from "./plan-fields.js";
import { BAD_COL, SUPERSEDED_COL, type DatasetPlan, type Plan, type PlanField, type PlanOptions } from "./plan-types.js";

export function compilePlan(contract: Contract, options: PlanOptions = {}): Plan {
  const table = declareFields(contract, options);
  const sqlRefs = resolveRuleFields(contract, table);
  // A target that identifies rows by key needs each key part's value, compared in its type (an
  // undeclared key of a schemaless contract as its tag and text: 1 and "1" differ, as in the lake).
  const keyFields = keyIdentifiesRows(contract) ? contract.primaryKey.map((n) => table.fieldFor(n, "primary_key")) : [];
  for (const f of keyFields) f.stringText = true;
  const { fields, declared } = table;
  const { layers, outputs, keyCol, textOf } = compileCoercion(fields);

  const passthrough = contract.fields.length === 0;
  const unknownPolicy = contract.schemaPolicy.unknownFields;
  const tracksUnknown = !passthrough && unknownPolicy === "quarantine";
  const { checks, flags, sqlRules } = compileChecks(contract, table, sqlRefs, textOf, tracksUnknown, keyFields);
  const final = finalLayer(checks);
  const supersedeBy = keyedTarget(contract) ? keyFields.map((f) => keyCol.get(f)!) : undefined;
  const { dataset, nullFlags } = datasetPlans(contract, table, keyCol);

  const knownKeys = new Set<string>();
  for (const f of declared) f.keys.forEach((key) => knownKeys.add(key));

  const pkFields = contract.primaryKey.map((n) => table.find(n));
  const primaryKeyCols =
    pkFields.length > 0 && pkFields.every((f) => f?.spec !== undefined) ? pkFields.map((f) => keyCol.get(f!)!) : undefined;

  return {
    fields,
    passthrough,
    ...(primaryKeyCols ? { primaryKeyCols, primaryKeyFields: pkFields.map((f) => f!.name) } : {}),
    ...(supersedeBy ? { supersedeBy } : {}),
    unknownPolicy,
    knownKeys,
    checks,
    layers,
    sqlRules,
    postLayers: [{ columns: [...flags, ...nullFlags.columns] }, final, ...(supersedeBy ? [supersedeLayer(supersedeBy)] : [])].filter(
      (l) => l.columns.length > 0,
    ),
    outputs,
    outputColumns: outputs.flatMap((o) => (o.bigCol ? [o.col, o.bigCol] : [o.col])),
    dataset,
    tracksUnknown,
    keepsExtraKeys: !passthrough && unknownPolicy === "allow",
    tagWords: Array.from({ length: Math.max(1, Math.ceil(fields.length / TAGS_PER_WORD)) }, (_, w) => `__ll_w${w}`),
  };
}

/**
 * `SUPERSEDED_COL`: a good row with a later good row of the same key (`__ll_i` is the arrival
 * position). Bad rows are a partition of their own, so a later bad row supersedes nothing.
 */
function supersedeLayer(keys: readonly string[]): Layer {
  const last: Expr = { op: "lastInGroup", keys: [col(BAD_COL), ...keys.map(col)], order: col("__ll_i") };
  return { columns: [[SUPERSEDED_COL, and(not(col(BAD_COL)), not(last))]] };
}

/** What each dataset rule reads, and the null flags `null_ratio` rules count. */
function datasetPlans(
  contract: Contract,
  table: FieldTable,
  keyCol: ReadonlyMap<PlanField, string>,
): { dataset: DatasetPlan[]; nullFlags: Layer } {
  const nullFlags: Layer = { columns: [] };
  const dataset: DatasetPlan[] = contract.datasetRules.map((rule) => {
    switch (rule.kind) {
      case "unique":
        return {
          rule,
          cols: rule.fields.map((n) => {
            const f = table.fieldFor(n, `dataset rule ${rule.id}`);
            f.stringText = true;
            return keyCol.get(f)!;
          }),
        };
      case "null_ratio": {
        const f = table.fieldFor(rule.field, `dataset rule ${rule.id}`);
        nullFlags.columns.push([`__ll_z${f.k}`, eq(col(f.tag), int(TAG.none))]);
        return { rule, cols: [`__ll_z${f.k}`] };
      }
      case "row_count_between":
        return { rule, cols: [] };
      case "sql":
        // The query reads the typed fields by name (resolveRuleFields added them).
        return { rule, cols: [] };
    }
  });
  return { dataset, nullFlags };
}
