import type { Contract } from "../contract/types.js";
import type { DatasetRuleResult, Engine, GoodColumns, Row, RuleCount } from "../engine/types.js";
import type { QuarantineRow } from "../lake/types.js";
import type { SourceRecord } from "../sources/core/types.js";
import { defineLazy } from "../util/lazy.js";
import { DEFAULT_RECORD_LIMITS, limitBreach, limitQuarantineRow, type RecordLimits } from "./limits.js";

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
  ruleCounts: RuleCount[];
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
  for (const r of records) {
    if (r.decodeError !== undefined) {
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
      bad.push(limitQuarantineRow(r, breach));
    } else {
      values.push(r.value);
      origin.push(r);
    }
  }
  if (values.length === 0) {
    return { sourceCount: records.length, good: [], goodCount: 0, supersededCount: 0, bad, ruleCounts: [], datasetRules: [] };
  }
  const result = await engine.validate(values, contract);
  for (const b of result.bad) {
    const src = origin[b.index];
    bad.push({ record: b.record, raw: src?.raw, errors: b.errors, position: src?.position });
  }
  const batch = {
    sourceCount: records.length,
    goodCount: result.goodCount,
    supersededCount: result.supersededCount,
    bad,
    ruleCounts: result.ruleCounts,
    datasetRules: result.datasetRules,
  } as ValidatedBatch;
  if (result.goodColumns) batch.goodColumns = result.goodColumns;
  // Forwarded, not read: the engine may build the rows only when they are asked for.
  return defineLazy(batch, "good", () => result.good);
}
