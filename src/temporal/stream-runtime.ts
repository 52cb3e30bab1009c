import { validateRecords, type ValidatedBatch } from "../pipeline/validate.js";
import { recordBytes } from "../pipeline/collect.js";
import { addCounts, ZERO_COUNTS } from "../pipeline/commit.js";
import { decodeCursor, encodeCursor } from "../checkpoint/codec.js";
import { loadContract, type LoadContractOptions } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { createEngine } from "../engine/index.js";
import type { Engine } from "../engine/types.js";
import { PipelineBatch } from "../pipeline/batch.js";
import { addRules, noRules, type BatchRules } from "../pipeline/rule-tally.js";
import { commitBatch } from "../pipeline/commit.js";
import { resolveStreamSettings, type StreamOverrides, type StreamSettings } from "../pipeline/settings.js";
import { assertTargetTakesDeletes } from "../pipeline/deletes.js";
import { StreamPipeline, type DrainEnd } from "../pipeline/pipeline.js";
import { assertLakeHolds, assertStoreHolds, loadStart, openTarget, type StreamTarget } from "../pipeline/open.js";
import { streamStart, type StreamStart } from "../pipeline/start.js";
import type { SourceRecord } from "../sources/core/types.js";
import { createSource } from "../sources/registry.js";
import { Spool, type SpoolOptions } from "./spool.js";
import type {
  BatchRuntime,
  FetchBatchInput,
  FetchBatchResult,
  FetchedMore,
  OpenStreamResult,
  StreamSpec,
  WriteBatchResult,
  WriteBatchesInput,
  WriteBatchesResult,
} from "../../workflows/types.js";

/** A continuous fetch with nothing to read returns empty after this long, so the workflow can react to signals. */
const IDLE_FETCH_MS = 30_000;
/**
 * How long takeReadAhead waits for a batch still being collected before it leaves the fetch to
 * the server round trip (which waits as long as a fetch waits). Short: the workflow task is open
 * meanwhile, and signals wait for it.
 */
const TAKE_READ_AHEAD_WAIT_MS = 1_000;
/** A source no activity has used for this long is closed (its stream ended, paused or moved). */
const SOURCE_IDLE_MS = 10 * 60_000;

/** A stream's pipeline as this worker keeps it between activity calls. */
interface CachedPipeline {
  pipeline: StreamPipeline;
  /** The source config and mode it was opened with: a fetch with others gets a new pipeline. */
  identity: string;
  /** available_now: the drain's end snapshot (encoded), as the workflow carries it. */
  drainEnd: string | null | undefined;
  /**
   * Encoded cursor the next fetch must ask for to continue on this pipeline: where the source is
   * positioned, or, while batches are read ahead, where the first of them starts.
   */
  cursor: string | null;
  /** Activities using the pipeline now, and when the last one ended (for closing idle ones). */
  busy: number;
  lastUsed: number;
}

/** A batch's size as the history reports it (payload bytes, or an estimate). */
function bytesOf(records: readonly SourceRecord[]): number {
  return records.reduce((n, r) => n + recordBytes(r), 0);
}

export interface StreamRuntimeOptions {
  spool?: SpoolOptions;
  /** See TAKE_READ_AHEAD_WAIT_MS (tests set it so that no outcome hangs on the machine's speed). */
  takeReadAheadWaitMs?: number;
  /** Called after each batch this worker committed (not one found already committed): logs and metrics. */
  onCommitted?: (key: string, result: WriteBatchResult, durationMs: number, rules: BatchRules) => void;
  /** Called each time this worker opens a stream's source at a cursor (a new drain, a retried or moved batch). */
  onOpened?: (start: StreamStart) => void;
}

/**
 * What a worker keeps between activity calls: contracts, engines, lake targets, and one stream
 * pipeline (src/pipeline) per stream, driven step by step by the activities — the same steps
 * StreamSink runs in a loop. Every activity receives the cursor it must start from, and a cached
 * pipeline that is not positioned there is replaced by one that is, so a retried or moved batch
 * never continues from stale in-memory state. Batches wait in the spool between activities (I4).
 */
export class StreamRuntime implements BatchRuntime {
  readonly spool: Spool;
  private readonly contracts = new Map<string, Promise<Contract>>();
  private readonly engines = new Map<string, Promise<Engine>>();
  private readonly targets = new Map<string, Promise<StreamTarget>>();
  private readonly resolved = new Map<string, Promise<StreamSettings>>();
  private readonly pipelines = new Map<string, CachedPipeline>();

  private readonly takeReadAheadWaitMs: number;
  private readonly onCommitted: StreamRuntimeOptions["onCommitted"];
  private readonly onOpened: StreamRuntimeOptions["onOpened"];

  constructor(options: StreamRuntimeOptions = {}) {
    this.spool = new Spool(options.spool);
    this.takeReadAheadWaitMs = options.takeReadAheadWaitMs ?? TAKE_READ_AHEAD_WAIT_MS;
    this.onCommitted = options.onCommitted;
    this.onOpened = options.onOpened;
  }

  /** The contract a stream runs, loaded with the stream's `vars` (its `{placeholders}`). */
  contract(spec: Pick<StreamSpec, "contract" | "vars" | "environment">): Promise<Contract> {
    const id = JSON.stringify([spec.contract, spec.vars ?? null, spec.environment ?? null]);
    return cached(this.contracts, id, () => loadContract(spec.contract, contractLoadOptions(spec)));
  }

  async openStream(spec: StreamSpec, committedBatchId?: number): Promise<OpenStreamResult> {
    const settings = await this.settings(spec);
    const { key } = settings;
    const record = await loadStart(await this.target(spec), key, { resetCheckpoint: settings.resetCheckpoint });
    if (committedBatchId !== undefined) assertStoreHolds(key, committedBatchId, record);
    return {
      key,
      dataset: settings.contract.dataset,
      cursor: record ? encodeCursor(record.cursor) : null,
      batchId: record?.batchId ?? 0,
      totals: addCounts(ZERO_COUNTS, record?.totals ?? ZERO_COUNTS),
    };
  }

  async fetchBatch(input: FetchBatchInput, stop: AbortSignal): Promise<FetchBatchResult> {
    await this.closeIdle(input.key);
    const { entry, endCursor } = await this.positioned(input);
    entry.busy++;
    try {
      return { ...(await this.fetchFrom(entry, input, stop)), ...(endCursor !== undefined ? { endCursor } : {}) };
    } catch (err) {
      // A cursor source may have consumed records this fetch never returned: the next fetch seeks.
      if (entry.pipeline.source.kind === "cursor") await this.drop(input.key, entry);
      throw err;
    } finally {
      entry.busy--;
      entry.lastUsed = Date.now();
    }
  }

  private async fetchFrom(entry: CachedPipeline, input: FetchBatchInput, stop: AbortSignal): Promise<Omit<FetchBatchResult, "endCursor">> {
    const { pipeline } = entry;
    // processing_time: undefined, so a trigger's batch waits at most maxWaitMs (the pipeline's rule).
    const idleMs = input.idleMs ?? (input.spec.mode === "processing_time" ? undefined : IDLE_FETCH_MS);
    const first = await pipeline.next(stop, { idleMs });
    const cursorOf = (b: PipelineBatch, before: string | null) => (b.cursor === undefined ? before : encodeCursor(b.cursor));
    const cursor = cursorOf(first, input.cursor);
    // Hand over, too, the batches already collected ahead (never waiting for one), so that one
    // round trip through the server serves several batches.
    const wanted = Math.max(1, input.maxBatches ?? 1);
    const more: FetchedMore[] = [];
    let last = { exhausted: first.exhausted, cursor, count: first.records.length };
    while (last.count > 0 && !last.exhausted && more.length < wanted - 1) {
      const next = pipeline.takeReady();
      if (!next || next.records.length === 0) break;
      const nextCursor = cursorOf(next, last.cursor);
      more.push({ spool: this.spool.put("fetched", next), count: next.records.length, bytes: bytesOf(next.records), cursor: nextCursor, exhausted: next.exhausted });
      last = { exhausted: next.exhausted, cursor: nextCursor, count: next.records.length };
    }
    if (pipeline.source.kind === "cursor") {
      entry.cursor = last.cursor;
      // Collect and validate the next batches now, while the workflow writes these; the next
      // fetch takes them if it asks for `entry.cursor`, as it will unless the workflow restarts
      // from elsewhere (then `positioned` replaces the pipeline). The read-ahead yields to the
      // event loop as it goes, so the activities and workflow tasks in flight are not kept waiting.
      if (input.readAhead && !last.exhausted && last.count > 0) {
        pipeline.readAhead(wanted, { idleMs });
      }
    }
    const lag = (await pipeline.source.lag?.().catch(() => undefined)) ?? null;
    return {
      spool: first.records.length > 0 ? this.spool.put("fetched", first) : null,
      count: first.records.length,
      bytes: bytesOf(first.records),
      cursor,
      cursorMoved: cursor !== input.cursor,
      exhausted: first.exhausted,
      ...(more.length > 0 ? { more } : {}),
      lag,
      ackSource: pipeline.source.kind === "ack",
    };
  }

  /**
   * A fetch served from this worker's read-ahead, without the round trip through the server: the
   * workflow calls it as a local activity after a fetch that asked to read ahead. Null when this
   * worker holds no batch for the stream at that cursor, or none with records within a short wait
   * (the workflow then fetches as usual, and that fetch still takes what is collected here).
   * Never fails the workflow: a failure leaves the batch to the usual fetch, which reopens the
   * source if it must.
   */
  async takeReadAhead(input: FetchBatchInput): Promise<FetchBatchResult | null> {
    const hit = this.pipelines.get(input.key);
    if (!hit || !this.continues(hit, input) || hit.pipeline.source.kind !== "cursor") return null;
    hit.busy++;
    try {
      if (!(await hit.pipeline.readAheadReady(this.takeReadAheadWaitMs))) return null;
      return await this.fetchFrom(hit, input, new AbortController().signal);
    } catch {
      await this.drop(input.key, hit);
      return null;
    } finally {
      hit.busy--;
      hit.lastUsed = Date.now();
    }
  }

  /** Whether batches of this stream are held or being collected ahead (for tests and diagnostics). */
  hasReadAhead(key: string): boolean {
    const { held, collecting } = this.readAheadOf(key);
    return held > 0 || collecting;
  }

  /** Batches of this stream held ahead, and whether one is being collected (for tests and diagnostics). */
  readAheadOf(key: string): { held: number; collecting: boolean } {
    return this.pipelines.get(key)?.pipeline.readAheadState() ?? { held: 0, collecting: false };
  }

  /**
   * The batches of one fetch, each written, committed (and for a queue acknowledged, I8) in turn,
   * in one local activity: one round trip between the workflow and the worker for them all. A
   * failure of the first batch fails the call (retried as any write); a later one ends it with
   * the batches committed so far, and the workflow writes the rest with another call.
   */
  async writeBatches(input: WriteBatchesInput): Promise<WriteBatchesResult> {
    const written: WriteBatchResult[] = [];
    // One sum for the call, not one per batch: the workflow's history stays small (I4).
    let rules = noRules();
    let previous = input.previous;
    for (const batch of input.batches) {
      try {
        const { result, batchRules } = await this.writeOne(input, batch, previous);
        if (input.ack && batch.fetched) await this.acknowledge(batch.fetched);
        written.push(result);
        rules = addRules(rules, batchRules);
        previous = { cursor: batch.cursor, batchId: result.batchId, totals: result.totals };
      } catch (err) {
        if (written.length === 0) throw err;
        break;
      }
    }
    return { written, rules };
  }

  /**
   * Write and commit one batch after `previous`; its validation was started when it was fetched.
   * No fetched batch: an empty one that only moves the cursor.
   */
  private async writeOne(
    input: Pick<WriteBatchesInput, "spec" | "key" | "writerId">,
    { fetched: ref, cursor }: WriteBatchesInput["batches"][number],
    previous: WriteBatchesInput["previous"],
  ): Promise<{ result: WriteBatchResult; batchRules: BatchRules }> {
    const started = Date.now();
    const target = await this.target(input.spec);
    const fetched = ref ? this.spool.get<PipelineBatch>(ref) : undefined;
    const batch = fetched ?? PipelineBatch.empty((records) => this.validate(input.spec, records));
    // A local lake on this worker must hold what the stream committed elsewhere (I9). A Delta
    // table fences a moved stream itself (each commit compares the stream's transaction version);
    // a DuckLake is asked, as its catalog may be a file on this worker's disk (one query).
    if ((await this.settings(input.spec)).contract.materialization.format !== "delta") {
      await assertLakeHolds(target, input.key, previous.batchId, batch.fromCursorSource);
    }
    let committed;
    try {
      committed = await commitBatch(
        { target, key: input.key, writerId: input.writerId },
        { cursor: previous.cursor === null ? undefined : decodeCursor(previous.cursor), batchId: previous.batchId, totals: previous.totals },
        batch,
        { cursor: cursor === null ? undefined : decodeCursor(cursor) },
      );
    } catch (err) {
      // A queue's messages were handed back (nack): a retry must fetch them again rather than
      // write the spooled copy, whose leases are gone — so the batch leaves the spool, which the
      // workflow reads as a lost batch and refetches from the committed position.
      if (fetched?.needsAck && ref) this.spool.drop(ref);
      throw err;
    }
    // The fetched records of an ack source are dropped by acknowledge, after the acknowledgement.
    if (!fetched?.needsAck) this.spool.drop(ref);
    await batch.committed(committed.record.cursor);
    const { ruleCounts, datasetRules } = await batch.validated();
    const batchRules: BatchRules = { ruleCounts, datasetRules };
    const result: WriteBatchResult = {
      batchId: committed.record.batchId,
      totals: committed.record.totals,
      batch: committed.record.batch,
      committedAt: committed.record.committedAt.toISOString(),
      outcome: committed.outcome,
    };
    if (result.outcome === "committed") this.onCommitted?.(input.key, result, Date.now() - started, batchRules);
    return { result, batchRules };
  }

  /** I8: queue messages are acknowledged only after their batch committed. */
  private async acknowledge(ref: string): Promise<void> {
    // A batch dropped from the spool before its ack (evicted) is redelivered by the queue; the
    // merge on the primary key makes that harmless.
    await this.spool.peek<PipelineBatch>(ref)?.acknowledge();
    this.spool.drop(ref);
  }

  async close(): Promise<void> {
    for (const [key, entry] of [...this.pipelines]) await this.drop(key, entry);
    for (const t of this.targets.values()) await (await t.catch(() => undefined))?.close();
    this.targets.clear();
    for (const e of this.engines.values()) await (await e.catch(() => undefined))?.close().catch(() => undefined);
    this.engines.clear();
    this.spool.clear();
  }

  /**
   * The cached pipeline for this stream when it continues from the cursor the workflow asks for,
   * in the same mode and drain; otherwise (a retried or restarted batch, another worker's
   * progress, a new drain or mode, a read-ahead the workflow did not take) a new one, opened at
   * that cursor. A new drain's first fetch captures its end (I7); later fetches, on any worker,
   * adopt the one the workflow carries.
   */
  private async positioned(input: FetchBatchInput): Promise<{ entry: CachedPipeline; endCursor?: string | null }> {
    const hit = this.pipelines.get(input.key);
    if (hit && this.continues(hit, input)) return { entry: hit };
    if (hit) await this.drop(input.key, hit);
    const source = await createSource(input.spec.source);
    try {
      assertTargetTakesDeletes(source, await this.contract(input.spec));
    } catch (err) {
      await source.close?.().catch(() => undefined);
      throw err;
    }
    const pipeline = new StreamPipeline({
      source,
      mode: input.spec.mode,
      limits: (await this.settings(input.spec)).limits,
      validate: (records) => this.validate(input.spec, records),
    });
    let end: DrainEnd;
    try {
      end = await pipeline.open(input.cursor === null ? undefined : decodeCursor(input.cursor), this.carried(input, source.kind));
    } catch (err) {
      await pipeline.close();
      throw err;
    }
    this.onOpened?.(streamStart(await this.settings(input.spec), source, { cursor: input.cursor === null ? null : decodeCursor(input.cursor), batchId: input.batchId }));
    const encodedEnd = encodeDrainEnd(end);
    const entry: CachedPipeline = { pipeline, identity: identityOf(input), drainEnd: input.endCursor !== undefined ? input.endCursor : encodedEnd, cursor: input.cursor, busy: 0, lastUsed: Date.now() };
    this.pipelines.set(input.key, entry);
    return { entry, ...(input.spec.mode === "available_now" && input.endCursor === undefined ? { endCursor: encodedEnd ?? null } : {}) };
  }

  /** Whether a cached pipeline continues where this fetch asks to start, in its mode and drain. */
  private continues(hit: CachedPipeline, input: FetchBatchInput): boolean {
    return hit.identity === identityOf(input) && hit.cursor === input.cursor && this.sameDrain(hit, input);
  }

  /** The drain end the workflow carries, as the pipeline adopts it. */
  private carried(input: FetchBatchInput, kind: "cursor" | "ack"): DrainEnd {
    if (input.spec.mode !== "available_now" || input.endCursor === undefined) return undefined;
    if (kind === "cursor") return { kind: "cursor", end: input.endCursor === null ? null : decodeCursor(input.endCursor) };
    const carried = input.endCursor ? (decodeCursor(input.endCursor) as { producedBefore?: unknown } | null) : null;
    return typeof carried?.producedBefore === "number" ? { kind: "ack", producedBefore: carried.producedBefore } : undefined;
  }

  /**
   * available_now: a pipeline that finished one drain (or read to another drain's end) must not
   * serve the next drain of the stream, which captures a new end with its first fetch (I7).
   */
  private sameDrain(hit: CachedPipeline, input: FetchBatchInput): boolean {
    if (input.spec.mode !== "available_now") return true;
    return input.endCursor !== undefined && hit.drainEnd === input.endCursor;
  }

  /** Close a pipeline: its read-ahead (whose records are dropped unread), read loop and source. */
  private async drop(key: string, entry: CachedPipeline): Promise<void> {
    if (this.pipelines.get(key) === entry) this.pipelines.delete(key);
    await entry.pipeline.close();
  }

  /** Pipelines of streams that stopped fetching here (ended, paused long, moved) are closed. */
  private async closeIdle(except: string): Promise<void> {
    const cutoff = Date.now() - SOURCE_IDLE_MS;
    for (const [key, entry] of this.pipelines) {
      if (key !== except && entry.busy === 0 && entry.lastUsed < cutoff) await this.drop(key, entry);
    }
  }

  private async validate(spec: StreamSpec, records: readonly SourceRecord[]): Promise<ValidatedBatch> {
    const settings = await this.settings(spec);
    const engine = await cached(this.engines, spec.engine ?? "duckdb", () => createEngine(spec.engine ?? "duckdb"));
    return validateRecords(engine, settings.contract, records, settings.record);
  }

  /** The stream's settings, resolved as every front door resolves them (src/pipeline/settings.ts). */
  private settings(spec: StreamSpec): Promise<StreamSettings> {
    return cached(this.resolved, JSON.stringify(spec), async () => resolveStreamSettings(await this.contract(spec), overridesOf(spec)));
  }

  /** One target per lake and checkpoint location, shared by the streams that write there. */
  private async target(spec: StreamSpec): Promise<StreamTarget> {
    const settings = await this.settings(spec);
    const id = JSON.stringify([spec.contract, spec.vars ?? null, spec.environment ?? null, settings.targetPath, settings.checkpoint]);
    return cached(this.targets, id, () => openTarget(settings.contract, settings));
  }
}

/** What the workflow input says about the stream; the contract and the defaults fill in the rest. */
function overridesOf(spec: StreamSpec): StreamOverrides {
  const { mode, checkpointKey, checkpoint, targetPath, batchSize, maxBatchBytes, maxWaitMs, maxRecordBytes, resetCheckpoint } = spec;
  return { mode, checkpointKey, checkpoint, targetPath, batchSize, maxBatchBytes, maxWaitMs, maxRecordBytes, resetCheckpoint };
}

/** What a cached pipeline was opened for: its source config and mode. */
function identityOf(input: FetchBatchInput): string {
  return JSON.stringify([input.spec.source, input.spec.mode]);
}

/** The value in `map` under `key`, made once; a failure is not kept, so the next call tries again. */
function cached<T>(map: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let value = map.get(key);
  if (!value) {
    value = make();
    map.set(key, value);
    value.catch(() => map.delete(key));
  }
  return value;
}

/** A drain end as the workflow carries it (typed JSON); undefined outside available_now. */
function encodeDrainEnd(end: DrainEnd): string | null | undefined {
  if (end === undefined) return undefined;
  if (end.kind === "ack") return encodeCursor({ producedBefore: end.producedBefore });
  return end.end === undefined ? null : encodeCursor(end.end);
}

/** What the stream's input says about loading its contract: run-time vars and the registry environment. */
function contractLoadOptions(spec: Pick<StreamSpec, "vars" | "environment">): LoadContractOptions {
  return { ...(spec.vars ? { vars: spec.vars } : {}), ...(spec.environment ? { environment: spec.environment } : {}) };
}

