import { BatchCollector, receiveBatch, recordBytes, type BatchLimits, type CollectedBatch } from "../batch/collect.js";
import { replayOf, writeAndCommit } from "../batch/commit.js";
import { Spool, type SpoolOptions } from "../batch/spool.js";
import { validateRecords, type ValidatedBatch } from "../batch/validate.js";
import { decodeCursor, encodeCursor } from "../checkpoint/codec.js";
import type { CheckpointStore, Cursor } from "../checkpoint/types.js";
import { createSource } from "../sources/registry.js";
import { loadContract } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { createEngine } from "../engine/index.js";
import type { Engine } from "../engine/types.js";
import type { LakeWriter } from "../lake/types.js";
import { openCheckpoint } from "../sink/checkpoint-option.js";
import { openLakeFor } from "../sink/lake-option.js";
import type { AckSource, CursorSource, Source, SourceRecord } from "../sources/core/types.js";
import type {
  AckBatchInput,
  FetchBatchInput,
  FetchBatchResult,
  FetchedMore,
  OpenStreamResult,
  StreamSpec,
  ValidateBatchInput,
  ValidateBatchResult,
  WriteBatchInput,
  WriteBatchResult,
} from "./types.js";

const DEFAULTS = { batchSize: 1000, maxBatchBytes: 16 * 1024 * 1024, maxWaitMs: 1000 };
/** A continuous fetch with nothing to read returns empty after this long, so the workflow can react to signals. */
const IDLE_FETCH_MS = 30_000;
/** A read-ahead lets the event loop run after this many records (measured with 10k batches: 64–256 best, none or 1024 slower). */
const READ_AHEAD_YIELD_EVERY = 64;
/** A source no activity has used for this long is closed (its stream ended, paused or moved). */
const SOURCE_IDLE_MS = 10 * 60_000;

interface OpenSource {
  source: Source;
  /** The source config and mode it was opened with: a fetch with others gets a new source. */
  identity: string;
  /** available_now: the end snapshot (encoded) of the drain this source reads, once known. */
  drainEnd?: string | null;
  /** Ends the source's read loop when the source is dropped (not per activity call). */
  reading: AbortController;
  collector?: BatchCollector;
  /**
   * Encoded cursor the next fetch must ask for to continue on this source: where the source is
   * positioned, or, while batches are read ahead, where the first of them starts.
   */
  cursor: string | null;
  /** The next batches, collected from `cursor` while the workflow writes the last ones. */
  ahead?: ReadAhead;
  /** Activities using the source now, and when the last one ended (for closing idle sources). */
  busy: number;
  lastUsed: number;
}

/** A fetched batch as it waits in the spool; an ack source's tokens are live handles, kept with it. */
interface FetchedBatch {
  records: SourceRecord[];
  ack?: { source: AckSource; tokens: unknown[] };
  /** Its validation, started as soon as the records were collected (see validationOf). */
  validation?: Promise<ValidatedBatch>;
}

/** A batch collected ahead, with its validation already started. */
interface AheadBatch {
  batch: CollectedBatch;
  validation?: Promise<ValidatedBatch>;
}

/**
 * Batches collected ahead of the workflow, in source order, each starting where the one before
 * ends. One collection runs at a time (the collector reads one source); it stops at `depth`
 * batches held, at the end of the source, or after a batch that found nothing in time.
 */
interface ReadAhead {
  ready: AheadBatch[];
  /** The batch being collected now (or the last one); it is in `ready` once this resolves. */
  current?: Promise<AheadBatch>;
  /** The collecting loop, while it runs. */
  collecting?: Promise<void>;
  /** A collection failed: the fetch that needs its batch throws this. */
  failure?: { error: unknown };
  stop: AbortController;
}

/** A batch's size as the history reports it (payload bytes, or an estimate). */
function bytesOf(records: readonly SourceRecord[]): number {
  return records.reduce((n, r) => n + recordBytes(r), 0);
}

interface Target {
  lake: LakeWriter;
  store: CheckpointStore;
  inTarget: boolean;
}

/**
 * What a worker keeps between activity calls: contracts, engines, lake writers, checkpoint
 * stores, open sources and spooled batches. Every activity receives the cursor it must start
 * from and this runtime repositions a cached source when it differs, so a retried or moved
 * batch never continues from stale in-memory state. The batch logic itself is `src/batch`,
 * shared with StreamSink.
 */
export class StreamRuntime {
  readonly spool: Spool;
  private readonly contracts = new Map<string, Promise<Contract>>();
  private readonly engines = new Map<string, Promise<Engine>>();
  private readonly targets = new Map<string, Promise<Target>>();
  private readonly sources = new Map<string, OpenSource>();

  constructor(options: { spool?: SpoolOptions } = {}) {
    this.spool = new Spool(options.spool);
  }

  contract(path: string): Promise<Contract> {
    let c = this.contracts.get(path);
    if (!c) {
      c = loadContract(path);
      this.contracts.set(path, c);
      c.catch(() => this.contracts.delete(path));
    }
    return c;
  }

  async openStream(spec: StreamSpec): Promise<OpenStreamResult> {
    const contract = await this.contract(spec.contract);
    const key = spec.checkpointKey ?? `stream::${contract.dataset}`;
    const { store } = await this.target(spec);
    const record = await store.load(key);
    return {
      key,
      dataset: contract.dataset,
      cursor: record ? encodeCursor(record.cursor) : null,
      batchId: record?.batchId ?? 0,
      totals: record ? { ...record.totals } : { sourceCount: 0, goodCount: 0, badCount: 0 },
    };
  }

  async fetchBatch(input: FetchBatchInput, stop: AbortSignal): Promise<FetchBatchResult> {
    await this.closeIdleSources(input.key);
    const open = await this.positionedSource(input);
    open.busy++;
    try {
      return await this.fetchFrom(open, input, stop);
    } catch (err) {
      // A cursor source may have consumed records this fetch never returned: the next fetch seeks.
      if (open.source.kind === "cursor") await this.dropSource(input.key, open);
      throw err;
    } finally {
      open.busy--;
      open.lastUsed = Date.now();
    }
  }

  private async fetchFrom(open: OpenSource, input: FetchBatchInput, stop: AbortSignal): Promise<FetchBatchResult> {
    const limits = this.limits(input.spec);
    const { source } = open;
    let endCursor: string | null | undefined;
    if (source.kind === "cursor" && input.spec.mode === "available_now" && !open.collector) {
      // I7: the first fetch of a drain captures the end; later fetches (on any worker) adopt it.
      const end =
        input.endCursor === undefined
          ? await source.endCursor?.()
          : await source.endCursor?.(input.endCursor === null ? null : decodeCursor(input.endCursor));
      if (input.endCursor === undefined) endCursor = end === undefined ? null : encodeCursor(end);
      open.drainEnd = input.endCursor !== undefined ? input.endCursor : endCursor;
    }

    let records: SourceRecord[];
    let cursor = input.cursor;
    let exhausted = false;
    let tokens: unknown[] | undefined;
    let validation: Promise<ValidatedBatch> | undefined;
    const more: FetchedMore[] = [];
    if (source.kind === "cursor") {
      const batchLimits = { ...limits, maxIdleMs: input.idleMs ?? IDLE_FETCH_MS };
      const collected = await this.collect(open, source, input, batchLimits, stop);
      records = collected.batch.records;
      validation = collected.validation;
      if (collected.batch.cursor !== undefined) cursor = encodeCursor(collected.batch.cursor);
      exhausted = collected.batch.exhausted;
      // Hand over, too, the batches already collected ahead (never waiting for one), so that one
      // round trip through the server serves several batches.
      const wanted = Math.max(1, input.maxBatches ?? 1);
      let last = { exhausted, cursor, count: records.length };
      while (records.length > 0 && !last.exhausted && more.length < wanted - 1) {
        const next = open.ahead?.ready[0];
        if (!next || next.batch.records.length === 0) break;
        open.ahead!.ready.shift();
        const nextCursor = next.batch.cursor === undefined ? last.cursor : encodeCursor(next.batch.cursor);
        const entry: FetchedBatch = { records: next.batch.records, ...(next.validation ? { validation: next.validation } : {}) };
        more.push({
          spool: this.spool.put("fetched", entry),
          count: next.batch.records.length,
          bytes: bytesOf(next.batch.records),
          cursor: nextCursor,
          exhausted: next.batch.exhausted,
        });
        last = { exhausted: next.batch.exhausted, cursor: nextCursor, count: next.batch.records.length };
      }
      open.cursor = last.cursor;
      if (input.readAhead && !last.exhausted && last.count > 0) {
        // Collect and validate the next batches now, while the workflow writes these, as
        // StreamSink does; the next fetch takes them if it asks for `open.cursor`, as it will
        // unless the workflow restarts from elsewhere (then positionedSource drops them and
        // seeks). Nothing is written or committed ahead: the workflow writes batch by batch (I1).
        // It yields to the event loop as it goes, so the activities and workflow tasks of the
        // batches in flight are not kept waiting behind records already at hand.
        this.readAhead(open, input.spec, { ...batchLimits, yieldEvery: READ_AHEAD_YIELD_EVERY }, wanted);
      }
    } else {
      // I7 for queues: the drain's snapshot is when its first fetch ran (messages the broker took
      // later wait for the next drain); the workflow carries it to the later fetches, which may
      // run on another worker.
      let producedBefore: number | undefined;
      if (input.spec.mode === "available_now") {
        const carried = input.endCursor ? (decodeCursor(input.endCursor) as { producedBefore?: unknown } | null) : null;
        producedBefore = typeof carried?.producedBefore === "number" ? carried.producedBefore : Date.now();
        if (input.endCursor === undefined) endCursor = encodeCursor({ producedBefore });
      }
      const received = await receiveBatch(source, limits, stop, producedBefore);
      records = received;
      tokens = received.map((r) => r.ackToken);
      exhausted = received.length === 0 && input.spec.mode === "available_now";
    }
    validation ??= records.length > 0 ? this.startValidation(input.spec, { records }).validation : undefined;

    const fetched: FetchedBatch = {
      records,
      ...(tokens ? { ack: { source: source as AckSource, tokens } } : {}),
      ...(validation ? { validation } : {}),
    };
    const spool = records.length > 0 ? this.spool.put("fetched", fetched) : null;
    const lag = (await source.lag?.().catch(() => undefined)) ?? null;
    return {
      spool,
      count: records.length,
      bytes: bytesOf(records),
      cursor,
      cursorMoved: cursor !== input.cursor,
      exhausted,
      ...(endCursor !== undefined ? { endCursor } : {}),
      ...(more.length > 0 ? { more } : {}),
      lag,
      ackSource: source.kind === "ack",
    };
  }

  /** Whether batches of this stream are held or being collected ahead (for tests and diagnostics). */
  hasReadAhead(key: string): boolean {
    const { held, collecting } = this.readAheadOf(key);
    return held > 0 || collecting;
  }

  /** Batches of this stream held ahead, and whether one is being collected (for tests and diagnostics). */
  readAheadOf(key: string): { held: number; collecting: boolean } {
    const ahead = this.sources.get(key)?.ahead;
    return { held: ahead?.ready.length ?? 0, collecting: ahead?.collecting !== undefined };
  }

  /** Keep collecting batches ahead, one after another, until `depth` are held (see ReadAhead). */
  private readAhead(open: OpenSource, spec: StreamSpec, limits: BatchLimits, depth: number): void {
    const ahead = (open.ahead ??= { ready: [], stop: new AbortController() });
    if (ahead.collecting || ahead.failure) return;
    const collector = open.collector!;
    const step = async (): Promise<void> => {
      while (!ahead.stop.signal.aborted && ahead.ready.length < depth) {
        ahead.current = collector.next(limits, ahead.stop.signal).then((batch) => {
          const got = this.startValidation(spec, batch);
          ahead.ready.push(got);
          return got;
        });
        const { batch } = await ahead.current;
        if (batch.exhausted || batch.records.length === 0) return;
      }
    };
    ahead.collecting = step()
      .catch((error: unknown) => void (ahead.failure = { error }))
      .finally(() => void (ahead.collecting = undefined));
  }

  async validateBatch(input: ValidateBatchInput): Promise<ValidateBatchResult> {
    const validated = await this.validationOf(input.spec, this.spool.get<FetchedBatch>(input.spool));
    const ref = this.spool.put("validated", validated);
    return {
      validated: ref,
      sourceCount: validated.sourceCount,
      goodCount: validated.goodCount,
      badCount: validated.bad.length,
    };
  }

  async writeBatch(input: WriteBatchInput): Promise<WriteBatchResult> {
    const target = await this.target(input.spec);
    // A retry of a write whose commit already landed (the activity's completion was lost) must
    // not write again: for append that would duplicate rows.
    const stored = await target.store.load(input.key);
    if (
      stored &&
      stored.batchId === input.previous.batchId + 1 &&
      stored.writerId === input.writerId &&
      encodeCursor(stored.cursor) === (input.cursor ?? encodeCursor(null))
    ) {
      return {
        batchId: stored.batchId,
        totals: { ...stored.totals },
        batch: { ...stored.batch },
        committedAt: stored.committedAt.toISOString(),
        outcome: "already-committed",
      };
    }
    const validated: ValidatedBatch = input.validated
      ? this.spool.get<ValidatedBatch>(input.validated)
      : input.fetched
        ? await this.validationOf(input.spec, this.spool.get<FetchedBatch>(input.fetched))
        : { sourceCount: 0, good: [], goodCount: 0, bad: [], ruleCounts: [], datasetRules: [] };
    const source = this.sources.get(input.key)?.source;
    // When the previous batch was committed: known when the store holds it (otherwise the commit
    // is refused anyway); null before the stream's first commit.
    const previousCommittedAt =
      stored?.batchId === input.previous.batchId ? stored.committedAt : !stored && input.previous.batchId === 0 ? null : undefined;
    const committed = await writeAndCommit(
      {
        lake: target.lake,
        store: target.store,
        storeInTarget: target.inTarget,
        key: input.key,
        writerId: input.writerId,
        replay: replayOf(source),
      },
      {
        cursor: input.previous.cursor === null ? undefined : decodeCursor(input.previous.cursor),
        batchId: input.previous.batchId,
        totals: input.previous.totals,
        committedAt: previousCommittedAt,
      },
      input.cursor === null ? undefined : (decodeCursor(input.cursor) as Cursor),
      validated,
    );
    // The fetched records of an ack source are dropped by ackBatch, after the acknowledgement.
    const fetched = input.fetched ? this.spool.peek<FetchedBatch>(input.fetched) : undefined;
    this.spool.drop(input.validated, fetched?.ack ? null : input.fetched);
    if (source?.kind === "cursor") await source.committed?.(committed.record.cursor);
    return {
      batchId: committed.record.batchId,
      totals: committed.record.totals,
      batch: committed.record.batch,
      committedAt: committed.record.committedAt.toISOString(),
      outcome: committed.outcome,
    };
  }

  /** I8: queue messages are acknowledged only after their batch committed. */
  async ackBatch(input: AckBatchInput): Promise<void> {
    // A batch dropped from the spool before its ack (evicted) is redelivered by the queue; the
    // merge on the primary key makes that harmless.
    const ack = this.spool.peek<FetchedBatch>(input.spool)?.ack;
    if (ack) await ack.source.ack(ack.tokens);
    this.spool.drop(input.spool);
  }

  async close(): Promise<void> {
    for (const [key, open] of [...this.sources]) await this.dropSource(key, open);
    for (const t of this.targets.values()) {
      const { lake, store, inTarget } = await t.catch(() => undefined) ?? ({} as Partial<Target>);
      if (store && !inTarget) await store.close().catch(() => undefined);
      await lake?.close().catch(() => undefined);
    }
    this.targets.clear();
    for (const e of this.engines.values()) await (await e.catch(() => undefined))?.close().catch(() => undefined);
    this.engines.clear();
    this.spool.clear();
  }

  private async validate(spec: StreamSpec, records: readonly SourceRecord[]): Promise<ValidatedBatch> {
    const contract = await this.contract(spec.contract);
    const engine = await this.engine(spec.engine ?? "duckdb");
    return validateRecords(engine, contract, records);
  }

  /**
   * Validation is a pure function of the records and the contract, so it starts as soon as a
   * batch is collected: it overlaps the round trip to the server and, for a read-ahead batch, the
   * write of the batch before.
   */
  private startValidation<B extends { records: SourceRecord[] }>(spec: StreamSpec, batch: B): { batch: B; validation?: Promise<ValidatedBatch> } {
    if (batch.records.length === 0) return { batch };
    const validation = this.validate(spec, batch.records);
    validation.catch(() => undefined); // awaited through validationOf, or dropped with its batch
    return { batch, validation };
  }

  /** The batch's validation: the one started at fetch time, or a new one if that failed. */
  private validationOf(spec: StreamSpec, fetched: FetchedBatch): Promise<ValidatedBatch> {
    const validation = fetched.validation ?? this.validate(spec, fetched.records);
    fetched.validation = validation;
    // A failure is not kept: a retried activity validates again.
    validation.catch(() => {
      if (fetched.validation === validation) fetched.validation = undefined;
    });
    return validation;
  }

  /**
   * The next batch of a cursor source: the read-ahead batch when one is held (positionedSource
   * kept it only if it starts at the cursor this fetch asks for), else a fresh one.
   */
  private async collect(
    open: OpenSource,
    source: CursorSource,
    input: FetchBatchInput,
    limits: BatchLimits,
    stop: AbortSignal,
  ): Promise<AheadBatch> {
    const ahead = open.ahead;
    if (ahead) {
      if (ahead.ready.length === 0 && ahead.collecting && ahead.current) {
        // Wait for the batch being collected (only that one). Cancelling this fetch cuts the
        // read-ahead as it would cut a fresh read.
        const onStop = () => ahead.stop.abort();
        if (stop.aborted) onStop();
        else stop.addEventListener("abort", onStop, { once: true });
        try {
          const failed = await ahead.current.then(
            () => undefined,
            (error: unknown) => ({ error }),
          );
          if (failed) throw failed.error;
        } finally {
          stop.removeEventListener("abort", onStop);
        }
      }
      if (ahead.failure && ahead.ready.length === 0) throw ahead.failure.error;
      const got = ahead.ready.shift();
      if (ahead.ready.length === 0 && !ahead.collecting) open.ahead = undefined;
      // An idle read-ahead (nothing arrived in time) says nothing: wait again, for this fetch.
      if (got && (got.batch.records.length > 0 || got.batch.exhausted)) return got;
    }
    open.collector ??= new BatchCollector(
      source.read({ mode: input.spec.mode, signal: open.reading.signal })[Symbol.asyncIterator](),
      () => source.currentCursor(),
    );
    return { batch: await open.collector.next(limits, stop) };
  }

  /**
   * The cached source for this stream when it continues from the cursor the workflow asks for, in
   * the same mode and drain; otherwise (a retried or restarted batch, another worker's progress,
   * a new drain or mode, a read-ahead the workflow did not take) a new one sought to that cursor.
   */
  private async positionedSource(input: FetchBatchInput): Promise<OpenSource> {
    const identity = JSON.stringify([input.spec.source, input.spec.mode]);
    const cached = this.sources.get(input.key);
    if (cached && cached.identity === identity && cached.cursor === input.cursor && this.sameDrain(cached, input)) return cached;
    if (cached) await this.dropSource(input.key, cached);
    const source = await createSource(input.spec.source);
    if (source.kind === "cursor") await source.seek(input.cursor === null ? undefined : decodeCursor(input.cursor));
    const open: OpenSource = { source, identity, reading: new AbortController(), cursor: input.cursor, busy: 0, lastUsed: Date.now() };
    this.sources.set(input.key, open);
    return open;
  }

  /**
   * available_now: a source that finished one drain (or read to another drain's end) must not
   * serve the next drain of the stream, which captures a new end with its first fetch (I7).
   */
  private sameDrain(cached: OpenSource, input: FetchBatchInput): boolean {
    if (cached.source.kind !== "cursor" || input.spec.mode !== "available_now") return true;
    return input.endCursor !== undefined && cached.drainEnd === input.endCursor;
  }

  /** Close a source, its read loop and any read-ahead (whose records are dropped unread). */
  private async dropSource(key: string, open: OpenSource): Promise<void> {
    if (this.sources.get(key) === open) this.sources.delete(key);
    open.ahead?.stop.abort();
    await open.ahead?.collecting;
    open.ahead = undefined;
    open.reading.abort();
    await open.collector?.close().catch(() => undefined);
    await open.source.close?.().catch(() => undefined);
  }

  /** Sources of streams that stopped fetching here (ended, paused long, moved) are closed. */
  private async closeIdleSources(except: string): Promise<void> {
    const cutoff = Date.now() - SOURCE_IDLE_MS;
    for (const [key, open] of this.sources) {
      if (key !== except && open.busy === 0 && open.lastUsed < cutoff) await this.dropSource(key, open);
    }
  }

  private engine(name: "duckdb" | "polars"): Promise<Engine> {
    let e = this.engines.get(name);
    if (!e) {
      e = createEngine(name);
      this.engines.set(name, e);
    }
    return e;
  }

  private target(spec: StreamSpec): Promise<Target> {
    const id = JSON.stringify([spec.contract, spec.targetPath ?? null, spec.checkpoint ?? null]);
    let t = this.targets.get(id);
    if (!t) {
      t = (async () => {
        const contract = await this.contract(spec.contract);
        const lake = await openLakeFor(contract, spec.targetPath);
        const { store, inTarget } = await openCheckpoint(spec.checkpoint, lake, contract, spec.targetPath);
        return { lake, store, inTarget };
      })();
      this.targets.set(id, t);
      t.catch(() => this.targets.delete(id));
    }
    return t;
  }

  private limits(spec: StreamSpec): BatchLimits {
    return {
      maxRecords: spec.batchSize ?? DEFAULTS.batchSize,
      maxBytes: spec.maxBatchBytes ?? DEFAULTS.maxBatchBytes,
      maxWaitMs: spec.maxWaitMs ?? DEFAULTS.maxWaitMs,
    };
  }
}
