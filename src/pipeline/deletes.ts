import { isUtf8 } from "node:buffer";
import type { Contract } from "../contract/types.js";
import type { Engine, Row } from "../engine/types.js";
import { ConfigError } from "../errors.js";
import type { QuarantineRow } from "../lake/types.js";
import type { SourceRecord, Source } from "../sources/core/types.js";
import { parseJsonRecord } from "../util/exact-json.js";

/** Rule id of a delete whose key does not make the target's primary key. */
export const DELETE_KEY_RULE_ID = "delete_key";

/** The deletes of a batch: the keys to remove (typed, one per key), and those that do not make a key. */
export interface ValidatedDeletes {
  /** Primary-key values in the column types, the last delete per key. */
  keys: Row[];
  bad: QuarantineRow[];
  /** Deletes of a key that a later delete of the batch deletes again. */
  supersededCount: number;
}

/**
 * A delete record's key (`SourceRecord.delete.key`) as the primary-key fields: a JSON object
 * holding every primary-key field (others are ignored), or, for a one-field primary key, the key's
 * text as that field's value (a JSON string: its content). The values are then converted to the
 * fields' types like any value.
 */
export function deleteKeyOf(record: SourceRecord, primaryKey: readonly string[]): { key: Record<string, unknown> } | { error: string } {
  const bytes = record.delete?.key ?? null;
  if (bytes === null || bytes.length === 0) return { error: "a tombstone without a key deletes nothing" };
  if (!isUtf8(bytes)) return { error: "the key of a tombstone is not UTF-8 text, so it cannot name a primary key" };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  let parsed: unknown;
  try {
    parsed = parseJsonRecord(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
    const object = parsed as Record<string, unknown>;
    const missing = primaryKey.filter((f) => !Object.hasOwn(object, f));
    if (missing.length > 0) return { error: `the key ${clip(text)} of a tombstone lacks primary-key field(s) ${missing.join(", ")}` };
    return { key: Object.fromEntries(primaryKey.map((f) => [f, object[f]])) };
  }
  // A JSON string (what JSON key serializers write) is its content; other text is the value as written.
  if (primaryKey.length === 1) return { key: { [primaryKey[0]!]: typeof parsed === "string" ? parsed : text } };
  return {
    error: `the primary key has ${primaryKey.length} fields (${primaryKey.join(", ")}): a tombstone's key must be a JSON object holding them; got ${clip(text)}`,
  };
}

/**
 * The deletes of a batch as the keys to remove: each key decoded (`deleteKeyOf`) and converted by
 * the engine against the contract's primary-key fields alone, so it is compared and stored the
 * way the rows' keys are. A delete whose key does not decode or convert is quarantined, with
 * what the source knows of the message.
 */
export async function validateDeletes(engine: Engine, contract: Contract, records: readonly SourceRecord[]): Promise<ValidatedDeletes> {
  const bad: QuarantineRow[] = [];
  const keys: Array<Record<string, unknown>> = [];
  const origin: SourceRecord[] = [];
  const quarantined = (r: SourceRecord, errors: QuarantineRow["errors"]): QuarantineRow => ({
    record: undefined,
    raw: r.raw,
    errors,
    position: r.position,
    ...(r.envelope !== undefined ? { envelope: r.envelope } : {}),
  });
  for (const r of records) {
    const key = deleteKeyOf(r, contract.primaryKey);
    if ("error" in key) {
      bad.push(quarantined(r, [{ ruleId: DELETE_KEY_RULE_ID, message: key.error }]));
    } else {
      keys.push(key.key);
      origin.push(r);
    }
  }
  if (keys.length === 0) return { keys: [], bad, supersededCount: 0 };
  const result = await engine.validate(keys, keyContract(contract));
  // As a decode failure: the envelope (key, headers) is the record.
  for (const b of result.bad) bad.push(quarantined(origin[b.index]!, b.errors));
  return { keys: result.good, bad, supersededCount: result.supersededCount };
}

const keyContracts = new WeakMap<Contract, Contract>();

/**
 * The contract's primary-key fields alone, each required, with no rules: what a delete's key is
 * checked and converted against. Made once per contract (engines compile per contract object).
 */
function keyContract(contract: Contract): Contract {
  let k = keyContracts.get(contract);
  if (!k) {
    const fields = contract.primaryKey.map((name) => {
      const field = contract.fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
      if (!field) throw new Error(`primary key field ${name} is not a field of contract ${contract.dataset}`);
      return { ...field, required: true, nullable: false, aliases: [] };
    });
    k = { ...contract, fields, rowRules: [], datasetRules: [], schemaPolicy: { ...contract.schemaPolicy, unknownFields: "drop" } };
    keyContracts.set(contract, k);
  }
  return k;
}

function clip(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/**
 * Refuse, before anything is read, a source that deletes keys (`CursorSource.deletes`: a Kafka
 * topic with `tombstones: delete`) writing into a target that cannot apply deletes: only a merge
 * target has one row per primary key to delete.
 */
export function assertTargetTakesDeletes(source: Source, contract: Contract): void {
  if (source.kind !== "cursor" || !source.deletes) return;
  const strategy = contract.materialization.strategy;
  const problem =
    strategy !== "merge"
      ? `its materialization.strategy is ${strategy}, which keeps every row it is given: a delete there would remove history`
      : contract.primaryKey.length === 0
        ? "it has no primary_key, so a delete names no row"
        : undefined;
  if (problem === undefined) return;
  throw new ConfigError(
    "tombstones",
    `${source.description} deletes rows (tombstones: delete), which needs a merge target with a primary key, but contract "${contract.dataset}" ` +
      `cannot take them: ${problem}. Use tombstones: quarantine (the default) to keep tombstones in quarantine instead`,
  );
}
