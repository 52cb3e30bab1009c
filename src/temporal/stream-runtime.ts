import { BatchCollector, receiveBatch, recordBytes, type BatchLimits } from "../batch/collect.js";
import { writeAndCommit } from "../batch/commit.js";
import { Spool, type SpoolOptions } from "../batch/spool.js";
import { validateRecords, type ValidatedBatch } from "../batch/validate.js";
import { decodeCursor, encodeCursor } from "../checkpoint/codec.js";
import type { CheckpointStore, Cursor } from "../checkpoint/types.js";
import { createSource } from "../connectors/index.js";
import { loadContract } from "../contract/index.js";
import type { Contract } from "../contract/types.js";
import { createEngine } from "../engine/index.js";
import type { Engine } from "../engine/types.js";
import type { LakeWriter } from "../lake/types.js";
import { openCheckpoint } from "../sink/checkpoint-option.js";
import { openLakeFor } from "../sink/lake-option.js";
import type { AckSource, Source, SourceRecord } from "../sources/types.js";
import type {
  AckBatchInput,
  FetchBatchInput,
  FetchBatchResult,
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

interface OpenSource {
  source: Source;
  /** The source config and mode it was opened with: a fetch with others gets a new source. */
  identity: string;
  /** available_now: the end snapshot (encoded) of the drain this source reads, once known. */
  drainEnd?: string | null;
  /** Ends the source's read loop when the source is dropped (not per activity call). */
  reading: AbortController;
  collector?: BatchCollector;
  /** Encoded cursor the source is positioned at (what the next fetch must ask for to continue). */
  cursor: string | null;
}

/** A fetched batch as it waits in the spool; an ack source's tokens are live handles, kept with it. */
interface FetchedBatch {
  records: SourceRecord[];
  ack?: { source: AckSource; tokens: unknown[] };
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
    const open = await this.positionedSource(input);
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
    if (source.kind === "cursor") {
      open.collector ??= new BatchCollector(
        source.read({ mode: input.spec.mode, signal: open.reading.signal })[Symbol.asyncIterator](),
        () => source.currentCursor(),
      );
      const batch = await open.collector.next({ ...limits, maxIdleMs: input.idleMs ?? IDLE_FETCH_MS }, stop);
      records = batch.records;
      if (batch.cursor !== undefined) cursor = encodeCursor(batch.cursor);
      exhausted = batch.exhausted;
    } else {
      const received = await receiveBatch(source, limits, stop);
      records = received;
      tokens = received.map((r) => r.ackToken);
      exhausted = received.length === 0 && input.spec.mode === "available_now";
    }
    open.cursor = cursor;

    const fetched: FetchedBatch = { records, ...(tokens ? { ack: { source: source as AckSource, tokens } } : {}) };
    const spool = records.length > 0 ? this.spool.put("fetched", fetched) : null;
    const lag = (await source.lag?.().catch(() => undefined)) ?? null;
    return {
      spool,
      count: records.length,
      bytes: records.reduce((n, r) => n + recordBytes(r), 0),
      cursor,
      cursorMoved: cursor !== input.cursor,
      exhausted,
      ...(endCursor !== undefined ? { endCursor } : {}),
      lag,
      ackSource: source.kind === "ack",
    };
  }

  async validateBatch(input: ValidateBatchInput): Promise<ValidateBatchResult> {
    const contract = await this.contract(input.spec.contract);
    const engine = await this.engine(input.spec.engine ?? "duckdb");
    const { records } = this.spool.get<FetchedBatch>(input.spool);
    const validated = await validateRecords(engine, contract, records);
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
      : { sourceCount: 0, good: [], goodCount: 0, bad: [], ruleCounts: [], datasetRules: [] };
    const committed = await writeAndCommit(
      { lake: target.lake, store: target.store, storeInTarget: target.inTarget, key: input.key, writerId: input.writerId },
      {
        cursor: input.previous.cursor === null ? undefined : decodeCursor(input.previous.cursor),
        batchId: input.previous.batchId,
        totals: input.previous.totals,
      },
      input.cursor === null ? undefined : (decodeCursor(input.cursor) as Cursor),
      validated,
    );
    // The fetched records of an ack source are dropped by ackBatch, after the acknowledgement.
    const fetched = input.fetched ? this.spool.peek<FetchedBatch>(input.fetched) : undefined;
    this.spool.drop(input.validated, fetched?.ack ? null : input.fetched);
    const source = this.sources.get(input.key)?.source;
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
    for (const { source, collector, reading } of this.sources.values()) {
      reading.abort();
      await collector?.close().catch(() => undefined);
      await source.close?.().catch(() => undefined);
    }
    this.sources.clear();
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

  /**
   * The cached source for this stream when it continues from the cursor the workflow asks for, in
   * the same mode and drain; otherwise (a retried or restarted batch, another worker's progress,
   * a new drain or mode) a new one sought to that cursor.
   */
  private async positionedSource(input: FetchBatchInput): Promise<OpenSource> {
    const identity = JSON.stringify([input.spec.source, input.spec.mode]);
    const cached = this.sources.get(input.key);
    if (cached && cached.identity === identity && cached.cursor === input.cursor && this.sameDrain(cached, input)) return cached;
    if (cached) {
      cached.reading.abort();
      await cached.collector?.close().catch(() => undefined);
      await cached.source.close?.().catch(() => undefined);
      this.sources.delete(input.key);
    }
    const source = await createSource(input.spec.source);
    if (source.kind === "cursor") await source.seek(input.cursor === null ? undefined : decodeCursor(input.cursor));
    const open: OpenSource = { source, identity, reading: new AbortController(), cursor: input.cursor };
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
