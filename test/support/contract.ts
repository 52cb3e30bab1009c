/**
 * Build normalised Contract objects in tests without YAML. Only what a test states
 * differs from the defaults; rules need only their distinctive parts (`id` and
 * `severity` default). Use `parseContract` from src/contract for YAML-shaped tests.
 */
import type { Contract, DatasetRule, FieldSpec, FieldType, RowRule, Severity } from "../../src/contract/types.js";

export type FieldInput = Partial<FieldSpec> & { name: string; type: FieldType };

type Loose<T> = T extends unknown ? Omit<T, "id" | "severity"> & { id?: string; severity?: Severity } : never;
export type RowRuleInput = Loose<RowRule>;
export type DatasetRuleInput = Loose<DatasetRule>;

export interface ContractInput {
  dataset?: string;
  fields?: FieldInput[];
  rowRules?: RowRuleInput[];
  datasetRules?: DatasetRuleInput[];
  unknownFields?: Contract["schemaPolicy"]["unknownFields"];
  primaryKey?: string[];
}

export function field(name: string, type: FieldType, extra: Partial<FieldSpec> = {}): FieldInput {
  return { name, type, ...extra };
}

function ruleId(r: RowRuleInput | DatasetRuleInput): string {
  if ("field" in r && typeof r.field === "string") return `${r.kind}:${r.field}`;
  if ("fields" in r) return `${r.kind}:${r.fields.join(",")}`;
  return r.kind;
}

export function makeContract(input: ContractInput = {}): Contract {
  const dataset = input.dataset ?? "test";
  const fields: FieldSpec[] = (input.fields ?? []).map((f) => ({
    declaredType: f.type === "decimal" ? `decimal(${f.precision ?? 38},${f.scale ?? 9})` : f.type,
    required: false,
    nullable: true,
    pii: false,
    aliases: [],
    ...f,
  }));
  const seen = new Map<string, number>();
  const uniqueId = (id: string): string => {
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    return n === 1 ? id : `${id}#${n}`;
  };
  const rowRules = (input.rowRules ?? []).map(
    (r) => ({ ...r, id: r.id ?? uniqueId(ruleId(r)), severity: r.severity ?? "error" }),
  );
  const datasetRules = (input.datasetRules ?? []).map(
    (r) => ({ ...r, id: r.id ?? uniqueId(ruleId(r)), severity: r.severity ?? "error" }),
  );
  return {
    info: {},
    dataset,
    primaryKey: input.primaryKey ?? [],
    fields,
    rowRules,
    datasetRules,
    materialization: { strategy: "append", strategyDeclared: false, format: "duckdb", table: dataset, partitionBy: [] },
    quarantine: { enabled: true, target: `${dataset}_quarantine`, format: "duckdb", includeErrorReason: true },
    schemaPolicy: { evolution: "compatible", unknownFields: input.unknownFields ?? "allow" },
    warnings: [],
    raw: {},
  };
}
