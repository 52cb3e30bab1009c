/**
 * The stream workflow's decisions as pure functions: how state advances after a commit, when to
 * continue-as-new, what the status query says. Replay tests catch changed commands; these unit
 * tests catch changed arithmetic, which replay cannot see. Workflow-safe: no I/O, no Node APIs.
 */
import { noRules, sumRules, type RuleTotals } from "../src/pipeline/rule-tally.js";
import type {
  Counts,
  OpenStreamResult,
  StreamCarry,
  StreamLag,
  RunMode,
  StreamState,
  StreamStatus,
  StreamWorkflowInput,
  StreamWorkflowResult,
  WriteBatchResult,
} from "./types.js";

export const DEFAULT_CONTINUE_AS_NEW_EVERY = 200;
/** Fetches in a row served locally from the worker's read-ahead; see StreamWorkflowInput.localFetchesPerRoundTrip. */
export const DEFAULT_LOCAL_FETCHES_PER_ROUND_TRIP = 3;
/** Batches one fetch may hand over (the first plus those read ahead); see FetchBatchInput.maxBatches. */
export const DEFAULT_BATCHES_PER_FETCH = 4;

function plus<T extends Counts>(a: T, b: Counts): T {
  return {
    ...a,
    sourceCount: a.sourceCount + b.sourceCount,
    goodCount: a.goodCount + b.goodCount,
    badCount: a.badCount + b.badCount,
    supersededCount: a.supersededCount + b.supersededCount,
  };
}

export function initialCarry(open: OpenStreamResult, nowIso: string): StreamCarry {
  return {
    key: open.key,
    dataset: open.dataset,
    cursor: open.cursor,
    batchId: open.batchId,
    totals: open.totals,
    run: { batches: 0, sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 },
    paused: false,
    lastCommitAt: null,
    startedAt: nowIso,
    resumedFrom: open.cursor,
  };
}

/** The cursor advances only here, after writeBatches returned the batch's commit (the checkpoint store has it too). */
export function afterCommit(carry: StreamCarry, cursor: string | null, write: WriteBatchResult): StreamCarry {
  return {
    ...carry,
    cursor,
    batchId: write.batchId,
    totals: write.totals,
    run: plus({ ...carry.run, batches: carry.run.batches + 1 }, write.batch),
    lastCommitAt: write.committedAt,
  };
}

/** The rule results of batches just committed, added to the workflow's (its status and result report them). */
export function withRules(carry: StreamCarry, rules: RuleTotals | undefined): StreamCarry {
  return rules ? { ...carry, rules: sumRules(carry.rules ?? noRules(), rules) } : carry;
}

/**
 * After a worker was lost the checkpoint store is the truth: the lost worker may have committed
 * the batch before it died, so the workflow takes the store's position and fetches from there.
 */
export function resync(carry: StreamCarry, open: OpenStreamResult): StreamCarry {
  if (open.batchId === carry.batchId) return carry;
  const now = open.totals;
  const before = carry.totals;
  const gained: Counts = {
    sourceCount: now.sourceCount - before.sourceCount,
    goodCount: now.goodCount - before.goodCount,
    badCount: now.badCount - before.badCount,
    supersededCount: now.supersededCount - before.supersededCount,
  };
  return {
    ...carry,
    cursor: open.cursor,
    batchId: open.batchId,
    totals: now,
    run: plus({ ...carry.run, batches: carry.run.batches + (open.batchId - carry.batchId) }, gained),
  };
}

export function shouldContinueAsNew(
  input: Pick<StreamWorkflowInput, "continueAsNewEvery">,
  batchesThisRun: number,
  suggested: boolean,
): boolean {
  if (batchesThisRun === 0) return false;
  return suggested || batchesThisRun >= (input.continueAsNewEvery ?? DEFAULT_CONTINUE_AS_NEW_EVERY);
}

export function reachedMaxBatches(input: Pick<StreamWorkflowInput, "maxBatches">, carry: StreamCarry): boolean {
  return input.maxBatches !== undefined && carry.run.batches >= input.maxBatches;
}

/**
 * How many batches the next fetch may hand over: `batchesPerFetch`, but never past maxBatches
 * or the batch count that makes continue-as-new due (the workflow writes every batch it is handed).
 */
export function fetchSize(
  input: Pick<StreamWorkflowInput, "maxBatches" | "batchesPerFetch" | "continueAsNewEvery">,
  carry: StreamCarry,
  batchesThisRun: number,
): number {
  let size = Math.max(1, Math.floor(input.batchesPerFetch ?? DEFAULT_BATCHES_PER_FETCH));
  if (input.maxBatches !== undefined) size = Math.min(size, input.maxBatches - carry.run.batches);
  size = Math.min(size, (input.continueAsNewEvery ?? DEFAULT_CONTINUE_AS_NEW_EVERY) - batchesThisRun);
  return Math.max(1, size);
}

/**
 * Whether the loop, as far as it knows when it fetches, will fetch again after committing what
 * this fetch hands over (`size` batches at most) — the condition for letting the worker read
 * ahead. Not when a stop or pause is requested, when these batches reach maxBatches, or when
 * continue-as-new will be due. (A signal that arrives later only leaves an unused read-ahead on
 * the worker, which the next fetch from another cursor, or the worker's idle-source sweep, drops.)
 */
export function wantsReadAhead(
  input: Pick<StreamWorkflowInput, "maxBatches" | "continueAsNewEvery">,
  carry: StreamCarry,
  control: Control,
  batchesThisRun: number,
  continueAsNewSuggested: boolean,
  size = 1,
): boolean {
  if (control.stopRequested || control.paused) return false;
  const afterThis = { ...carry, run: { ...carry.run, batches: carry.run.batches + size } };
  if (reachedMaxBatches(input, afterThis)) return false;
  return !shouldContinueAsNew(input, batchesThisRun + size, continueAsNewSuggested);
}

/**
 * Whether the next fetch is first tried locally (takeReadAhead): the last fetch left the worker
 * reading ahead, and fewer than `localFetchesPerRoundTrip` fetches in a row were served so.
 */
export function fetchLocally(
  input: Pick<StreamWorkflowInput, "localFetchesPerRoundTrip">,
  readingAhead: boolean,
  localFetchesInARow: number,
): boolean {
  const most = Math.max(0, Math.floor(input.localFetchesPerRoundTrip ?? DEFAULT_LOCAL_FETCHES_PER_ROUND_TRIP));
  return readingAhead && localFetchesInARow < most;
}

/** Pause and stop requests; stop wins over pause, and is graceful (after the in-flight batch). */
export interface Control {
  paused: boolean;
  stopRequested: boolean;
}

/** Where the workflow's loop is: working on batches, parked at the pause, or done. */
export type Phase = "working" | "parked" | "finished";

/**
 * "paused" only once the loop is parked (the in-flight batch has committed); until then a pause
 * request shows as "pausing", so a caller that waits for "paused" knows nothing more is written.
 */
export function stateOf(control: Control, phase: Phase): StreamState {
  if (phase === "finished") return "completed";
  if (control.stopRequested) return "stopping";
  if (phase === "parked") return "paused";
  return control.paused ? "pausing" : "running";
}

export function statusOf(
  carry: StreamCarry,
  state: StreamState,
  mode: RunMode,
  lag: StreamLag | null,
  decode: (cursor: string) => unknown,
): StreamStatus {
  return {
    state,
    checkpointKey: carry.key,
    dataset: carry.dataset,
    mode,
    cursor: carry.cursor === null ? null : decode(carry.cursor),
    batchId: carry.batchId,
    ...carry.totals,
    lastCommitAt: carry.lastCommitAt,
    lag,
    rules: carry.rules ?? noRules(),
  };
}

export function resultOf(
  carry: StreamCarry,
  stoppedBy: StreamWorkflowResult["stoppedBy"],
  nowIso: string,
  decode: (cursor: string) => unknown,
): StreamWorkflowResult {
  return {
    checkpointKey: carry.key,
    batches: carry.run.batches,
    sourceCount: carry.run.sourceCount,
    goodCount: carry.run.goodCount,
    badCount: carry.run.badCount,
    supersededCount: carry.run.supersededCount,
    cursor: carry.cursor === null ? null : decode(carry.cursor),
    resumedFrom: carry.resumedFrom === null ? null : decode(carry.resumedFrom),
    startedAt: carry.startedAt,
    finishedAt: nowIso,
    stoppedBy,
    totals: carry.totals,
    rules: carry.rules ?? noRules(),
  };
}
