import type { CollectedBatch } from "../pipeline/collect.js";
import type { Counts, Cursor } from "../checkpoint/types.js";
import type { DatasetRuleResult } from "../engine/types.js";
import type { RuleCheck, RuleTotals } from "../pipeline/rule-tally.js";
import type { SourceLag } from "../sources/core/types.js";

/** What StreamSink reports: per batch (`onBatch`) and per run (the summary). */

export interface RunOptions {
  /** Stop after this many committed batches. */
  maxBatches?: number;
}

/** Counts of a batch and of a run: sourceCount = goodCount + badCount + supersededCount. */
export interface BatchReport {
  batchId: number;
  sourceCount: number;
  /** The batch's records' bytes, as `maxBatchBytes` counts them (raw payloads, or an estimate). */
  bytes: number;
  /** Rows written to the target. */
  goodCount: number;
  /** Rows quarantined. */
  badCount: number;
  /** Good records a later record of the batch with the same primary key replaced (merge, keyed overwrite): not written. */
  supersededCount: number;
  /** Quarantine rows that were already there (a replayed batch). */
  badAlreadyPresent: number;
  cursor: Cursor;
  cut: CollectedBatch["cut"];
  /** Each row rule's failed and passed rows in this batch (declared rules always; built-in ones that failed). */
  ruleCounts: RuleCheck[];
  /** Each dataset rule's result on this batch. */
  datasetRules: DatasetRuleResult[];
  totals: Counts;
  lag?: SourceLag;
  /** The end snapshot of an available_now run, when the source has one. */
  endCursor?: Cursor;
  /** Fraction (0..1) of the way to the end snapshot, when the source can tell. */
  progress?: number;
  durationMs: number;
}

/** Why a run stopped; `error`: it failed (the summary of a StreamRunError). */
export type StopReason = "end" | "signal" | "max-batches" | "error";

export interface StreamRunSummary extends Counts {
  batches: number;
  cursor: Cursor;
  resumedFrom: Cursor;
  startedAt: Date;
  finishedAt: Date;
  stoppedBy: StopReason;
  checkpointKey: string;
  /** Totals since the stream began (across runs). */
  totals: Counts;
  /** The run's rule results: rows failed and passed per row rule, batches passed and failed per dataset rule. */
  rules: RuleTotals;
  /** The source's lag after the last committed batch, when it can tell (queues: backlog, oldest age). */
  lag?: SourceLag;
}
