/**
 * The quarantine's replay log: one row per quarantine row a replay re-validated, saying what came
 * of it (written to the table, or still quarantined with the reasons it failed this time), under
 * which contract, by which replay batch and when. The quarantine itself is never rewritten — no
 * format here rewrites rows in place — so the log is what marks a quarantine row replayed, and its
 * newest reasons supersede the stored ones (docs/lake.md, "Quarantine: list, show, replay").
 *
 * The log is an ordinary lake table beside the contract's table (`<table>_quarantine_replays`,
 * merged on `quarantine_id`, same format and location), written and read through `openLake` and
 * `readTable`: every format keeps it the way it keeps any table, and a replay written twice
 * leaves one row per quarantine row.
 */
import type { Contract, FieldSpec } from "../contract/types.js";
import { openLake, type OpenLakeOptions } from "./index.js";
import { readQuarantine, readTable, type ReadOptions } from "./read.js";
import { resolveLakeConfig } from "./config.js";
import type { LakeWriter, StoredQuarantineRow } from "./types.js";

/** What a replay did with one quarantine row. */
export interface ReplayEntry {
  quarantineId: string;
  /** `replayed`: it passed and was written to the table; `quarantined`: it failed again. */
  status: "replayed" | "quarantined";
  /** The rule messages and ids it failed this time (empty when replayed). */
  reasons: string[];
  ruleIds: string[];
  /** Fingerprint of the contract it was validated with. */
  contractHash: string;
  /** The replay stream's checkpoint key and batch. */
  replayKey: string;
  replayBatch: number;
  replayedAt: string;
}

/** A quarantine row with what replays made of it. */
export interface QuarantineEntry extends StoredQuarantineRow {
  /** `pending` until a replay wrote it to the table; then `replayed`. */
  status: "pending" | "replayed";
  /** The newest replay of the row, if any (its reasons supersede `reasons` while pending). */
  replay?: ReplayEntry;
}

function field(name: string, type: FieldSpec["type"], required: boolean): FieldSpec {
  return { name, type, declaredType: type, required, nullable: !required, pii: false, aliases: [] };
}

const FIELDS: FieldSpec[] = [
  field("quarantine_id", "string", true),
  field("status", "string", true),
  field("reasons", "json", false),
  field("rule_ids", "json", false),
  field("contract_hash", "string", true),
  field("replay_key", "string", true),
  field("replay_batch", "integer", true),
  field("replayed_at", "timestamp", true),
];

/** The log's table name for a contract's table. */
export function replayLogTable(contract: Contract, options: ReadOptions = {}): string {
  return `${resolveLakeConfig(contract, options).table}_quarantine_replays`;
}

/** The contract of the replay log: the lake's format and location, a merge on quarantine_id, no quarantine. */
export function replayLogContract(contract: Contract, options: ReadOptions = {}): Contract {
  const table = replayLogTable(contract, options);
  const m = contract.materialization;
  const targetPath = logTarget(m.targetPath, table);
  return {
    ...contract,
    dataset: table,
    primaryKey: ["quarantine_id"],
    fields: FIELDS,
    rowRules: [],
    datasetRules: [],
    materialization: { ...m, strategy: "merge", strategyDeclared: true, table, partitionBy: [], ...(targetPath !== undefined ? { targetPath } : {}) },
    quarantine: { ...contract.quarantine, enabled: false, target: `${table}_quarantine` },
    schemaPolicy: { evolution: "allow", unknownFields: "drop" },
    warnings: [],
  };
}

/** A DuckLake `table:<catalog>.<schema>.<table>` target names the table in the path: the log's is beside it. */
function logTarget(given: string | undefined, table: string): string | undefined {
  return given?.startsWith("table:") ? given.replace(/[^.]+$/, table) : given;
}

function logOptions(contract: Contract, options: ReadOptions): OpenLakeOptions {
  const targetPath = logTarget(options.targetPath, replayLogTable(contract, options));
  return targetPath === undefined ? {} : { targetPath };
}

/** Open the replay log for writing (its rows: `replayLogRow`). */
export function openReplayLog(contract: Contract, options: ReadOptions = {}): Promise<LakeWriter> {
  return openLake(replayLogContract(contract, options), logOptions(contract, options));
}

/** An entry as the log's row. */
export function replayLogRow(e: ReplayEntry): Record<string, unknown> {
  return {
    quarantine_id: e.quarantineId,
    status: e.status,
    reasons: e.reasons,
    rule_ids: e.ruleIds,
    contract_hash: e.contractHash,
    replay_key: e.replayKey,
    replay_batch: e.replayBatch,
    replayed_at: e.replayedAt,
  };
}

/** Every entry of the replay log, by quarantine id (empty before the first replay). */
export async function readReplayLog(contract: Contract, options: ReadOptions = {}): Promise<Map<string, ReplayEntry>> {
  const rows = await readTable(replayLogContract(contract, options), logOptions(contract, options));
  const log = new Map<string, ReplayEntry>();
  for (const r of rows) {
    const id = String(r["quarantine_id"]);
    log.set(id, {
      quarantineId: id,
      status: r["status"] === "replayed" ? "replayed" : "quarantined",
      reasons: strings(r["reasons"]),
      ruleIds: strings(r["rule_ids"]),
      contractHash: String(r["contract_hash"]),
      replayKey: String(r["replay_key"]),
      replayBatch: Number(r["replay_batch"]),
      replayedAt: String(r["replayed_at"]),
    });
  }
  return log;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

/** The quarantine rows with their replay status, in stored order. */
export async function readQuarantineEntries(contract: Contract, options: ReadOptions = {}): Promise<QuarantineEntry[]> {
  const [rows, log] = await Promise.all([readQuarantine(contract, options), readReplayLog(contract, options)]);
  return rows.map((row) => {
    const replay = log.get(row.quarantineId);
    return { ...row, status: replay?.status === "replayed" ? "replayed" : "pending", ...(replay ? { replay } : {}) };
  });
}
