import { afterAll } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";
import type { Contract, FieldSpec, FieldType, LakeFormat, Strategy } from "../../src/contract/types.js";
import type { QuarantineRow } from "../../src/lake/index.js";

export interface ContractOptions {
  dataset?: string;
  fields?: Array<[string, FieldType] | [string, "decimal", number, number]>;
  primaryKey?: string[];
  strategy?: Strategy;
  format?: LakeFormat;
  quarantine?: Partial<Contract["quarantine"]>;
  unknownFields?: Contract["schemaPolicy"]["unknownFields"];
  /** schema_policy.evolution; the loader's default, allow, when not given. */
  evolution?: string;
  raw?: Record<string, unknown>;
}

/** A normalised contract built in code, as `loadContract` would return it. */
export function makeContract(o: ContractOptions = {}): Contract {
  const dataset = o.dataset ?? "orders";
  const fields: FieldSpec[] = (o.fields ?? [["id", "integer"], ["name", "string"]]).map((f) => ({
    name: f[0],
    type: f[1],
    declaredType: f[1] === "decimal" ? `decimal(${f[2]},${f[3]})` : f[1],
    ...(f[1] === "decimal" ? { precision: f[2], scale: f[3] } : {}),
    required: false,
    nullable: true,
    pii: false,
    aliases: [],
  }));
  return {
    info: {},
    dataset,
    primaryKey: o.primaryKey ?? [],
    fields,
    rowRules: [],
    datasetRules: [],
    materialization: {
      strategy: o.strategy ?? "append",
      strategyDeclared: o.strategy !== undefined,
      format: o.format ?? "duckdb",
      table: dataset,
      partitionBy: [],
    },
    quarantine: {
      enabled: true,
      target: `${dataset}_quarantine`,
      format: o.format ?? "duckdb",
      includeErrorReason: true,
      ...o.quarantine,
    },
    schemaPolicy: { evolution: o.evolution ?? "allow", unknownFields: o.unknownFields ?? "quarantine" },
    warnings: [],
    raw: o.raw ?? {},
  };
}

export function tempDir(label: string): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), `lakelogic-${label}-`));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * `lakeDir(label)`: a new temporary directory per call, all removed after the calling test
 * file's tests.
 */
export function tempDirs(): (label: string) => string {
  const cleanups: Array<() => void> = [];
  afterAll(() => cleanups.forEach((c) => c()));
  return (label) => {
    const d = tempDir(label);
    cleanups.push(d.cleanup);
    return d.path;
  };
}

export function byKey<T extends Record<string, unknown>>(rows: T[], key = "id"): T[] {
  return [...rows].sort((a, b) => Number(a[key]) - Number(b[key]));
}

/** A checkpoint of stream `key` at `batchId` (2 records a batch: 1 good, 1 bad), as a writer commits it. */
export function checkpointRecord(key: string, batchId: number, cursor: unknown, writerId = "run-a"): CheckpointRecord {
  return {
    key,
    cursor,
    batchId,
    committedAt: new Date(1_700_000_000_000 + batchId),
    batch: { sourceCount: 2, goodCount: 1, badCount: 1, supersededCount: 0 },
    totals: { sourceCount: 2 * batchId, goodCount: batchId, badCount: batchId, supersededCount: 0 },
    writerId,
  };
}

/** Quarantine row `i`: an id that is not an integer, at source position `i`. */
export const badRow = (i: number): QuarantineRow => ({ record: { id: `bad${i}` }, errors: [{ ruleId: "r1", message: "id must be an integer" }], position: i });
