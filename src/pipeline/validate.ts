import type { Contract } from "../contract/types.js";
import type { DatasetRuleResult, Engine, GoodColumns, Row } from "../engine/types.js";
import type { QuarantineRow } from "../lake/types.js";
import type { SourceRecord } from "../sources/core/types.js";
import { defineLazy } from "../util/lazy.js";
import { validateDeletes } from "./deletes.js";
import { DEFAULT_RECORD_LIMITS, LIMIT_RULE_ID, limitBreach, limitQuarantineRow, type RecordLimits } from "./limits.js";
import type { RuleCheck } from "./rule-tally.js";

export interface ValidatedBatch {
  sourceCount: number;
  /** Good rows; read `goodCount` for the number (the rows may be built on first access). */
  good: Row[];
  goodCount: number;
  /**
   * Good rows a later good row of the batch with the same primary key replaces (merge, keyed
   * overwrite): not written. sourceCount = goodCount + bad.length + supersededCount.
   */
  supersededCount: number;
  /** The good rows column by column, when the engine made them (see GoodColumns). */
  goodColumns?: GoodColumns;
  bad: QuarantineRow[];
  /**
   * Primary keys whose rows the batch deletes (records with `SourceRecord.delete`), after its
   * other rows are written. An applied delete counts as good (in goodCount, not in `good`).
   */
  deletes?: Row[];
  /** Every declared row rule (and a built-in one that failed rows), with the rows it failed and passed. */
  ruleCounts: RuleCheck[];
  datasetRules: DatasetRuleResult[];
}

/** Rule id given to records the source could not decode. */
export const DECODE_RULE_ID = "decode";

/**
 * Decode failures and records beyond the record limits (too deep, cyclic, too large) become bad
 * rows straight away (I6), so neither the engine nor the lake ever walks them; everything else
 * goes through the engine in one columnar call. Bad rows keep the raw payload and source
 * position for quarantine.
 */
export async function validateRecords(
  engine: Engine,
  contract: Contract,
  records: readonly SourceRecord[],
  limits: RecordLimits = DEFAULT_RECORD_LIMITS,
): Promise<ValidatedBatch> {
  const values: unknown[] = [];
  const origin: SourceRecord[] = [];
  const bad: QuarantineRow[] = [];
  const deleting: SourceRecord[] = [];
  let decodeFailed = 0;
  let limitFailed = 0;
  for (const r of records) {
    if (r.delete !== undefined) {
      deleting.push(r);
      continue;
    }
    if (r.decodeError !== undefined) {
      decodeFailed++;
      bad.push({
        record: r.value,
        raw: r.raw,
        errors: [{ ruleId: DECODE_RULE_ID, message: r.decodeError }],
        position: r.position,
        ...(r.envelope !== undefined ? { envelope: r.envelope } : {}),
      });
      continue;
    }
    const breach = limitBreach(r, limits);
    if (breach !== undefined) {
      limitFailed++;
      bad.push(limitQuarantineRow(r, breach));
    } else {
      values.push(r.value);
      origin.push(r);
    }
  }
  // A batch's deletes all come after its other records (the collector cuts it so).
  const deletes = deleting.length > 0 ? await validateDeletes(engine, contract, deleting) : undefined;
  // Checks made before the engine: decoding every record, then the limits on the decoded ones.
  const checked = records.length - deleting.length;
  const early: RuleCheck[] = [];
  if (decodeFailed > 0) early.push({ ruleId: DECODE_RULE_ID, severity: "error", failed: decodeFailed, passed: checked - decodeFailed });
  if (limitFailed > 0) early.push({ ruleId: LIMIT_RULE_ID, severity: "error", failed: limitFailed, passed: checked - decodeFailed - limitFailed });
  if (values.length === 0) {
    const batch: ValidatedBatch = {
      sourceCount: records.length,
      good: [],
      goodCount: deletes?.keys.length ?? 0,
      supersededCount: deletes?.supersededCount ?? 0,
      bad: deletes ? [...bad, ...deletes.bad] : bad,
      ruleCounts: early,
      datasetRules: [],
    };
    if (deletes && deletes.keys.length > 0) batch.deletes = deletes.keys;
    return batch;
  }
  const result = await engine.validate(values, contract);
  for (const b of result.bad) {
    const src = origin[b.index];
    bad.push({ record: b.record, raw: src?.raw, errors: b.errors, position: src?.position });
  }
  if (deletes) bad.push(...deletes.bad);
  const batch = {
    sourceCount: records.length,
    goodCount: result.goodCount + (deletes?.keys.length ?? 0),
    supersededCount: result.supersededCount + (deletes?.supersededCount ?? 0),
    bad,
    ruleCounts: [...early, ...result.ruleCounts.map((c) => ({ ...c, passed: values.length - c.failed }))],
    datasetRules: result.datasetRules,
  } as ValidatedBatch;
  if (deletes && deletes.keys.length > 0) batch.deletes = deletes.keys;
  if (result.goodColumns) batch.goodColumns = result.goodColumns;
  // Forwarded, not read: the engine may build the rows only when they are asked for.
  return defineLazy(batch, "good", () => result.good);
}
