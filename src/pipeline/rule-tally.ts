/**
 * Per-rule results of a batch and their sums over a run: what a batch report, a run summary, the
 * Temporal status query and the metrics say about data quality. Pure and workflow-safe (type
 * imports only): the stream workflow sums its batches' results with the same functions.
 */
import type { Severity } from "../contract/types.js";
import type { DatasetRuleResult, RuleCount } from "../engine/types.js";

/** A row rule over a batch: the rows that failed it, and those it was checked on and passed. */
export interface RuleCheck extends RuleCount {
  passed: number;
}

/** A batch's rule results. */
export interface BatchRules {
  ruleCounts: RuleCheck[];
  datasetRules: DatasetRuleResult[];
}

/** A dataset rule over the batches of a run: how many it passed and failed, and its last result. */
export interface DatasetRuleTotal {
  ruleId: string;
  kind: string;
  severity: Severity;
  passedBatches: number;
  failedBatches: number;
  /** The last batch's measured value; null when it could not be measured. */
  lastObserved: number | null;
  lastMessage: string;
}

/** Rule results summed over the batches of a run, in the order the rules first appeared. */
export interface RuleTotals {
  rows: RuleCheck[];
  dataset: DatasetRuleTotal[];
}

export function noRules(): RuleTotals {
  return { rows: [], dataset: [] };
}

/** One batch's results as totals. */
export function totalsOf(batch: Partial<BatchRules> | undefined): RuleTotals {
  return {
    rows: (batch?.ruleCounts ?? []).map((c) => ({ ruleId: c.ruleId, severity: c.severity, failed: c.failed, passed: c.passed })),
    dataset: (batch?.datasetRules ?? []).map((d) => ({
      ruleId: d.ruleId,
      kind: d.kind,
      severity: d.severity,
      passedBatches: d.passed ? 1 : 0,
      failedBatches: d.passed ? 0 : 1,
      // NaN (not measured) does not survive JSON: null says the same.
      lastObserved: typeof d.observed === "number" && Number.isFinite(d.observed) ? d.observed : null,
      lastMessage: d.error ?? d.message,
    })),
  };
}

/** `a` and then `b` (later batches): counts added, each dataset rule's last result from `b`. New values; neither is changed. */
export function sumRules(a: RuleTotals, b: RuleTotals): RuleTotals {
  const rows = a.rows.map((r) => ({ ...r }));
  for (const c of b.rows) {
    const r = rows.find((x) => x.ruleId === c.ruleId);
    if (r) {
      r.failed += c.failed;
      r.passed += c.passed;
    } else rows.push({ ...c });
  }
  const dataset = a.dataset.map((d) => ({ ...d }));
  for (const d of b.dataset) {
    const t = dataset.find((x) => x.ruleId === d.ruleId);
    if (t) {
      t.passedBatches += d.passedBatches;
      t.failedBatches += d.failedBatches;
      t.lastObserved = d.lastObserved;
      t.lastMessage = d.lastMessage;
    } else dataset.push({ ...d });
  }
  return { rows, dataset };
}

/** `totals` with one more batch's results added. */
export function addRules(totals: RuleTotals, batch: Partial<BatchRules> | undefined): RuleTotals {
  return batch ? sumRules(totals, totalsOf(batch)) : totals;
}

/** The dataset rules a batch failed, as one warning's fields each (both runtimes log them). */
export function failedDatasetRules(batch: Partial<BatchRules> | undefined): Array<Record<string, string | number | null>> {
  return (batch?.datasetRules ?? [])
    .filter((d) => !d.passed)
    .map((d) => ({
      rule: d.ruleId,
      kind: d.kind,
      severity: d.severity,
      observed: Number.isFinite(d.observed) ? d.observed : null,
      reason: d.error ?? d.message,
    }));
}
