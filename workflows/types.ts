/**
 * Plain-JSON shapes exchanged between the stream workflow, its activities and the clients.
 * This file is imported by workflow code, so it must stay free of Node built-ins and I/O.
 * Cursors cross history as encoded strings (typed JSON): the workflow never interprets them.
 */

import type { Counts } from "../src/checkpoint/types.js";
import type { RuleTotals } from "../src/pipeline/rule-tally.js";
import type { StreamMode } from "../src/pipeline/settings.js";
import type { MaintainReport } from "../src/lake/maintain.js";

/** available_now, continuous or processing_time (a batch every `intervalMs`). */
export type RunMode = StreamMode;
export type { Counts };

/** How a stream is read, validated and written: everything an activity needs, as JSON. */
export interface StreamSpec {
  /** Path of the contract file on the workers. */
  contract: string;
  /** JSON source config, e.g. `{ "type": "kafka", "brokers": [...], "topic": "orders" }`. */
  source: { type: string; [option: string]: unknown };
  mode: RunMode;
  /** Default `stream::<dataset>`. */
  checkpointKey?: string;
  batchSize?: number;
  maxBatchBytes?: number;
  /** Largest record in bytes; larger ones are quarantined (rule `limit`). Default 16 MiB. */
  maxRecordBytes?: number;
  /**
   * Start from the checkpoint store's position even though the lake holds later batches of this
   * stream (its checkpoint was lost): those batches are written again. Default false.
   */
  resetCheckpoint?: boolean;
  maxWaitMs?: number;
  targetPath?: string;
  engine?: "duckdb" | "polars";
  /** A SQLite path or "target"; default `<targetPath>/_lakelogic/checkpoints.sqlite`. */
  checkpoint?: string;
  /**
   * Values for the contract's `{placeholders}` (`--var name=value`), used wherever a worker loads
   * the contract. Not secrets: they are part of the workflow's history.
   */
  vars?: Record<string, string>;
  /** The registry environment (`environments.<name>` of `_system.yaml`) that binds placeholders; default `dev`. */
  environment?: string;
}

export interface StreamWorkflowInput extends StreamSpec {
  /**
   * processing_time: a batch starts every this many ms; the workflow waits for the next trigger
   * on a durable timer. Default 0 (each batch right after the last).
   */
  intervalMs?: number;
  /** continuous: continue-as-new after this many batches at the latest. Default 200. */
  continueAsNewEvery?: number;
  /** Stop after this many committed batches (across continue-as-new). */
  maxBatches?: number;
  /**
   * Most batches one fetch hands over (the first and those the worker read ahead meanwhile); each
   * is written and committed on its own. Default 4. Stop and pause take effect after them.
   */
  batchesPerFetch?: number;
  /**
   * Fetches in a row the worker may serve from what it read ahead, as local activities, before
   * one goes through the server again. Signals reach the workflow only between workflow tasks,
   * which a fetch through the server ends: stop and pause take effect after at most
   * `batchesPerFetch × (1 + localFetchesPerRoundTrip)` batches. Default 3; 0 fetches every batch
   * through the server.
   */
  localFetchesPerRoundTrip?: number;
  /** Activity timeouts in ms (tests shorten them to notice a dead worker sooner). */
  timeouts?: { scheduleToStartMs?: number; startToCloseMs?: number; heartbeatMs?: number; idleFetchMs?: number };
  /** Set by continue-as-new: the state carried into the next run. Never set it by hand. */
  carry?: StreamCarry;
}

export interface StreamCarry {
  key: string;
  dataset: string;
  cursor: string | null;
  batchId: number;
  totals: Counts;
  run: Counts & { batches: number };
  paused: boolean;
  lastCommitAt: string | null;
  startedAt: string;
  resumedFrom: string | null;
  /** available_now: the end snapshot captured by the first fetch of the drain. */
  endCursor?: string | null;
  /** The rule results of this workflow's batches (since it first started; carried over continue-as-new). */
  rules?: RuleTotals;
}

export type StreamState = "running" | "pausing" | "paused" | "stopping" | "completed";

export interface StreamLag {
  records?: number;
  bytes?: number;
  oldestAgeMs?: number;
}

export interface StreamStatus {
  state: StreamState;
  checkpointKey: string;
  dataset: string;
  mode: RunMode;
  /** The committed cursor, decoded for display. */
  cursor: unknown;
  batchId: number;
  sourceCount: number;
  goodCount: number;
  badCount: number;
  /** Records a later record of their batch with the same key replaced (see Counts). */
  supersededCount: number;
  lastCommitAt: string | null;
  lag: StreamLag | null;
  /** The rule results of the batches this workflow committed. */
  rules: RuleTotals;
}

export interface StreamWorkflowResult extends Counts {
  checkpointKey: string;
  batches: number;
  cursor: unknown;
  resumedFrom: unknown;
  startedAt: string;
  finishedAt: string;
  stoppedBy: "end" | "stop" | "max-batches";
  totals: Counts;
  /** The rule results of the batches this workflow committed. */
  rules: RuleTotals;
}

/* ---- activity inputs and outputs ---- */

export interface OpenStreamResult {
  key: string;
  dataset: string;
  cursor: string | null;
  batchId: number;
  totals: Counts;
}

export interface FetchBatchInput {
  spec: StreamSpec;
  key: string;
  /** Committed (or, when pipelining, fetched-so-far) cursor to read after. */
  cursor: string | null;
  batchId: number;
  /** available_now: the end snapshot, once captured; undefined on the first fetch of a drain. */
  endCursor?: string | null;
  /** A fetch that finds nothing returns empty after this long (default 30 s). */
  idleMs?: number;
  /**
   * The workflow means to fetch the next batch after this one: a cursor source may start
   * collecting it on this worker right away (it is used only by a fetch that asks for this
   * batch's cursor). False when the workflow will stop, park, continue-as-new or hit maxBatches.
   */
  readAhead?: boolean;
  /**
   * Most batches this fetch may hand over: the first, plus batches the worker already read ahead
   * (it never waits for those). Default 1. A cursor source only; the read-ahead holds as many.
   */
  maxBatches?: number;
}

/** A further batch handed over by the same fetch; it starts where the one before it ends. */
export interface FetchedMore {
  spool: string;
  count: number;
  bytes: number;
  cursor: string | null;
  exhausted: boolean;
}

export interface FetchBatchResult {
  /** Claim check: where the records wait on this worker. Null when nothing was fetched. */
  spool: string | null;
  count: number;
  bytes: number;
  cursor: string | null;
  /** The cursor moved without records (e.g. an iterable reached its end). */
  cursorMoved: boolean;
  exhausted: boolean;
  /** available_now: the snapshot captured by this fetch (first fetch of a drain only). */
  endCursor?: string | null;
  /**
   * The batches after the first (see FetchBatchInput.maxBatches), in order. The fields above
   * describe the first batch; `exhausted` of the last one here says whether the source ended.
   */
  more?: FetchedMore[];
  lag: StreamLag | null;
  ackSource: boolean;
}

export interface WriteBatchResult {
  batchId: number;
  totals: Counts;
  batch: Counts;
  committedAt: string;
  outcome: "committed" | "already-committed";
}

/** The batches of one fetch, written and committed one after another by one local activity. */
export interface WriteBatchesInput {
  spec: StreamSpec;
  key: string;
  writerId: string;
  /** The committed position the first batch follows. */
  previous: { cursor: string | null; batchId: number; totals: Counts };
  /**
   * In order; each validated by the write itself (the worker started that when it fetched).
   * `fetched` null: a batch without records that only moves the cursor.
   */
  batches: Array<{ fetched: string | null; cursor: string | null }>;
  /** Queue sources: acknowledge each batch's messages after its commit (I8). */
  ack: boolean;
}

export interface WriteBatchesResult {
  /**
   * One result per batch committed, in order. Fewer than the batches asked for when a batch after
   * the first failed: the workflow takes these and writes the rest again, from the first not
   * committed (whose failure, if it lasts, then fails that call and is retried as any write).
   */
  written: WriteBatchResult[];
  /** The rule results of the batches written, summed (absent from results recorded before they were reported). */
  rules?: RuleTotals;
}

/* ---- the activities, as the workflow calls them ---- */

/** Activities any worker runs (on the shared task queue, or as local activities). */
export interface SharedActivities {
  /** This worker's own task queue (run as a local activity: it names the worker executing the workflow task). */
  getWorkerQueue(): Promise<string>;
  /**
   * Where the stream stands, from the checkpoint store. `committedBatchId`: the batch the
   * workflow already committed (after a lost worker); a store behind it fails (LakeNotSharedError).
   */
  openStream(spec: StreamSpec, committedBatchId?: number): Promise<OpenStreamResult>;
}

/** Activities that handle one batch, all on the worker whose spool holds it. */
export interface BatchActivities {
  fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult>;
  /**
   * The fetch served from the read-ahead of the worker that runs it (a local activity); null when
   * that worker holds none for the stream at this cursor.
   */
  takeReadAhead(input: FetchBatchInput): Promise<FetchBatchResult | null>;
  /** The batches of one fetch, each validated, written, committed (and for a queue acknowledged) in turn (a local activity). */
  writeBatches(input: WriteBatchesInput): Promise<WriteBatchesResult>;
}

/** What the activities need from the worker's stream runtime (src/temporal/stream-runtime.ts). */
export interface BatchRuntime {
  openStream(spec: StreamSpec, committedBatchId?: number): Promise<OpenStreamResult>;
  fetchBatch(input: FetchBatchInput, stop: AbortSignal): Promise<FetchBatchResult>;
  takeReadAhead(input: FetchBatchInput): Promise<FetchBatchResult | null>;
  writeBatches(input: WriteBatchesInput): Promise<WriteBatchesResult>;
}

/**
 * A scheduled maintenance run of one contract's lake tables (workflows/maintain.ts, over
 * src/lake/maintain.ts): the same options as `lakelogic lake maintain`.
 */
export interface MaintainWorkflowInput {
  /** Path of the contract file on the workers. */
  contract: string;
  /** The lake directory or URI as the workers see it; default the contract's. */
  targetPath?: string;
  /** delta: vacuum retention in hours; default 168. */
  retainHours?: number;
  /** delta: accept a retention below the table's minimum. */
  allowShortRetention?: boolean;
  vars?: Record<string, string>;
  environment?: string;
}

/** Activities of the maintenance workflow, on the shared task queue. */
export interface MaintainActivities {
  maintainLake(input: MaintainWorkflowInput): Promise<MaintainReport>;
}
