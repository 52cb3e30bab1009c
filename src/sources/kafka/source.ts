// Types only: kafkajs is an optional peer dependency, loaded at run time through requirePeer.
import type { Consumer, EachBatchPayload } from "kafkajs";
import type { Cursor } from "../../checkpoint/types.js";
import { settledWithin, sleep } from "../../util/wait.js";
import type { CursorSource, ReadOptions, RunMode, SourceBacklog, SourceLag, SourceRecord } from "../core/types.js";
import { KafkaClients } from "./client.js";
import { PartitionOffsets, cursorProgress, decodeCursor, encodeCursor, type KafkaCursor } from "./cursor.js";
import { causeOf, messageOf } from "./errors.js";
import { GroupCommits } from "./group-commit.js";
import { resolveOptions, type ResolvedKafkaOptions } from "./options.js";
import type { KafkaSourceOptions } from "./spec.js";
import { ReadBuffer } from "./read-buffer.js";
import { Membership } from "./rebalance.js";
import { prepareValues, sliceBatch } from "./record.js";
import { SourceBusyError } from "../core/errors.js";
import { KafkaConnectError } from "./errors.js";

export { kafkaSpec, type KafkaSourceOptions, type KafkaSasl, type KafkaLogLevel } from "./spec.js";
export { KafkaConnectError, KafkaConsumerError, KafkaTopicError } from "./errors.js";
export type { KafkaCursor } from "./cursor.js";
export type { KafkaPosition } from "./record.js";

/**
 * A Kafka topic as a replayable cursor source (see `kafkaSpec` for the options).
 *
 * **Cursor.** `{ "<topic>:<partition>": nextOffset }`, describing exactly the records yielded
 * (never prefetched ones). On start, each partition this member is assigned seeks to
 * max(checkpoint position, group's committed offset); with neither, it starts per
 * `autoOffsetReset`. In a single-member deployment the group offset is committed after the
 * checkpoint and never passes it, so the checkpoint decides; in a shared group a group offset
 * ahead of this member's checkpoint means another member already committed those records.
 *
 * **Reading.** kafkajs pushes fetched batches; they are decoded on arrival (so decoding overlaps
 * the sink's writes) into a bounded buffer (messages and bytes), and the fetch callback waits —
 * heartbeating — while it is full, so memory is bounded (I5). `read` pulls from the buffer.
 *
 * **Rebalance.** Records of a partition this member lost are dropped from the buffer at the
 * rebalance and never yielded. Records already yielded but not yet committed are committed by
 * this member's in-flight batch, and may also be read by the partition's new owner, from the
 * group offset: at-least-once, a replayed batch at most, absorbed by a merge target.
 *
 * **Poison messages.** A value that is null, not UTF-8 or not JSON becomes a record with
 * `decodeError`, `raw` = the bytes and `position` = {topic, partition, offset}: quarantined (I6).
 * JSON that is not an object is wrapped as `{ data: value }`, like the other connectors.
 *
 * The parts: `cursor.ts` (positions), `read-buffer.ts` (the bounded buffer), `rebalance.ts`
 * (assignment and start positions), `group-commit.ts` (the group's offsets), `client.ts` (kafkajs).
 */
export class KafkaOffsetSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /**
   * Not `replays`: members of a consumer group each keep their own checkpoint, and a partition
   * that moves to another member is read again from the group's offset by that member's stream,
   * so records one stream committed can come again in another's (the lake looks every id up).
   */
  readonly replays = false;
  readonly topic: string;
  protected readonly options: ResolvedKafkaOptions;

  private readonly clients: KafkaClients;
  private consumer: Consumer | undefined;
  private reading = false;
  private closed = false;
  /** Next offset to yield, per partition. */
  private readonly cursor: PartitionOffsets;
  /** End snapshot of this drain (available_now). */
  private end: Map<number, number> | undefined;
  /** The snapshot in force for the current read (set only in available_now). */
  private limit: Map<number, number> | undefined;
  private readonly buffer: ReadBuffer;
  private readonly membership: Membership;
  private readonly commits: GroupCommits;

  // Per-read state, reset for every read.
  private stopping = false;
  private failure: Error | undefined;
  private readonly highWatermarks = new Map<number, number>();

  constructor(topic: string, options: KafkaSourceOptions) {
    const resolved = resolveOptions(topic, options);
    this.topic = resolved.topic;
    this.options = resolved.options;
    this.description = `kafka ${this.topic}`;
    this.cursor = new PartitionOffsets(this.topic);
    this.buffer = new ReadBuffer(this.options);
    this.clients = new KafkaClients(this.topic, this.description, this.options);
    this.commits = new GroupCommits(this.topic, this.description, this.options, {
      closed: () => this.closed,
      consumer: () => this.consumer,
      settled: () => this.membership.settled(),
      owns: (p) => this.membership.owns(p),
      admin: () => this.clients.admin(),
    });
    this.membership = new Membership({
      topic: this.topic,
      description: this.description,
      options: this.options,
      cursor: this.cursor,
      buffer: this.buffer,
      clients: this.clients,
      commits: this.commits,
      consumer: () => this.consumer,
      limit: () => this.limit,
      reading: () => this.reading,
      stopping: () => this.stopping,
      fail: (err) => this.fail(err),
    });
  }

  get groupId(): string {
    return this.options.groupId;
  }

  /** With `tombstones: delete`, a tombstone deletes its key's row (merge targets only). */
  get deletes(): boolean {
    return this.options.tombstones === "delete";
  }

  // ---------------------------------------------------------------- cursor protocol

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (this.reading) throw new SourceBusyError(`${this.description}: seek() while a read is in progress`);
    this.cursor.clear();
    this.end = undefined;
    this.cursor.load(this.decode(cursor, "stored cursor"));
  }

  currentCursor(): KafkaCursor | undefined {
    return this.cursor.current();
  }

  /** Each partition's high watermark now (I7), or adopt a snapshot captured by another worker. */
  async endCursor(snapshot?: Cursor): Promise<KafkaCursor> {
    if (snapshot !== undefined && snapshot !== null) {
      this.end = this.decode(snapshot, "end snapshot");
    } else {
      const marks = await this.clients.watermarks();
      this.end = new Map([...marks].map(([p, m]) => [p, m.high]));
    }
    return encodeCursor(this.topic, this.end);
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    try {
      return cursorProgress(this.decode(cursor, "cursor"), this.decode(end, "end snapshot"));
    } catch {
      return undefined;
    }
  }

  async lag(): Promise<SourceLag | undefined> {
    const records = this.backlog()?.records;
    if (records === undefined) return undefined;
    const head = this.buffer.head();
    const ts = head ? Number(head.meta?.timestamp) : NaN;
    return Number.isFinite(ts) ? { records, oldestAgeMs: Math.max(0, Date.now() - ts) } : { records };
  }

  /**
   * Messages after the cursor in the partitions this member owns, from the high watermarks the
   * last fetches reported (no round trip): what `lag` counts.
   */
  backlog(): SourceBacklog | undefined {
    let records = 0;
    let known = false;
    for (const p of this.membership.partitions()) {
      const hw = this.highWatermarks.get(p);
      const at = this.cursor.get(p);
      if (hw === undefined || at === undefined) continue;
      known = true;
      records += Math.max(0, hw - at);
    }
    return known ? { records } : undefined;
  }

  /**
   * After a checkpoint commit: commit the group's offsets for the partitions this member owns,
   * in the background (see GroupCommits); `close()` waits for the last one.
   */
  async committed(cursor: Cursor): Promise<void> {
    if (!this.options.commitGroupOffsets) return;
    this.commits.committed(this.decode(cursor, "committed cursor"));
  }

  /** Wait until the group commits asked for so far have been tried. */
  async flushGroupCommits(): Promise<void> {
    await this.commits.flush();
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.buffer.wake();
    await this.commits.flush();
    this.closed = true;
    const consumer = this.consumer;
    this.consumer = undefined;
    // Bounded: leave the group within closeTimeoutMs, then every connection is closed by force.
    await this.clients.close(consumer);
    this.reading = false;
  }

  // ---------------------------------------------------------------- reading

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    if (this.reading) throw new SourceBusyError(`${this.description}: read() is already in progress`);
    this.reading = true;
    this.closed = false;
    this.commits.forgetLast();
    // A consumer left over from an earlier read of this instance leaves the group first.
    const previous = this.consumer?.disconnect().catch(() => undefined);
    if (previous) await settledWithin(previous, this.options.closeTimeoutMs);
    this.consumer = undefined;
    this.resetRead(options.mode);
    try {
      if (options.mode === "available_now") {
        if (!this.end) await this.endCursor();
        this.limit = this.end;
        // Nothing to read? Then do not join the group at all (a join costs a rebalance).
        if (this.limit && (await this.nothingToRead(this.limit))) return;
      }
      await this.startConsumer();
      while (true) {
        if (this.failure) throw this.failure;
        if (options.signal.aborted || this.stopping) return;
        if (this.limit && this.drained(this.limit)) return;
        const item = this.membership.holding ? undefined : this.buffer.take(this.cursor);
        if (!item) {
          // Taking nothing may still have moved a partition past control records (a commit
          // marker, an aborted transaction) up to the snapshot: then the drain is over.
          if (this.limit && this.drained(this.limit)) return;
          await this.buffer.waitForData(options.signal);
          continue;
        }
        // The position moves before the record is handed over: when the sink samples the
        // cursor right after receiving it, the cursor includes it, and nothing later.
        this.cursor.set(item.partition, item.offset + 1);
        yield item.record;
      }
    } finally {
      // Stop fetching but stay in the group: the sink still commits the last batch's offsets.
      this.limit = undefined;
      this.membership.hold();
      this.buffer.drop();
      this.buffer.releaseWriter();
      this.pauseAll();
      this.reading = false;
    }
  }

  private decode(cursor: Cursor | undefined, what: string): Map<number, number> {
    return decodeCursor(cursor, this.topic, this.description, what);
  }

  private fail(err: Error): void {
    this.failure ??= err;
    this.buffer.wake();
  }

  private pauseAll(): void {
    try {
      this.consumer?.pause([{ topic: this.topic }]);
    } catch {
      // not running
    }
  }

  private drained(limit: ReadonlyMap<number, number>): boolean {
    if (!this.membership.settled() || this.membership.holding) return false;
    for (const [p, end] of limit) {
      // A partition another member owns is that member's to drain.
      if (!this.membership.owns(p)) continue;
      if ((this.cursor.get(p) ?? -1) < end) return false;
    }
    return true;
  }

  private resetRead(mode: RunMode): void {
    this.membership.reset();
    this.stopping = false;
    this.failure = undefined;
    this.buffer.drop();
    this.highWatermarks.clear();
    this.limit = mode === "available_now" ? this.end : undefined;
  }

  /** available_now fast path: every partition already at (or past) the snapshot. */
  private async nothingToRead(limit: ReadonlyMap<number, number>): Promise<boolean> {
    const [group, marks] = await Promise.all([this.clients.groupOffsets(), this.clients.watermarks()]);
    const starts = new Map<number, number>();
    for (const [p, end] of limit) {
      const start = this.membership.startOf(p, group, marks);
      if (start < end) return false;
      starts.set(p, start);
    }
    for (const [p, start] of starts) this.cursor.set(p, Math.max(start, this.cursor.get(p) ?? -1));
    this.commits.adopt(group);
    return true;
  }

  // ---------------------------------------------------------------- kafkajs consumer

  private async startConsumer(): Promise<void> {
    const consumer = await this.clients.consumer();
    this.consumer = consumer;
    this.membership.listen(consumer);
    // A fetch that returned only control records or aborted transactions never reaches
    // eachBatch; its end still moves the position, or a drain could wait for offsets that
    // will never be delivered.
    consumer.on(consumer.events.START_BATCH_PROCESS, (e) => {
      const { partition, batchSize, lastOffset } = e.payload;
      if (batchSize === 0 && e.payload.topic === this.topic) this.advanceEmpty(partition, Number(lastOffset) + 1);
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.topic, fromBeginning: this.options.autoOffsetReset === "earliest" });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: (payload) => this.onBatch(payload),
      });
    } catch (err) {
      throw new KafkaConnectError(`${this.description}: cannot start the consumer of group "${this.options.groupId}": ${messageOf(err, this.options.sasl)}`, {
        cause: causeOf(err, this.options.sasl),
      });
    }
  }

  /** eachBatch: buffer the batch (bounded), then wait for room while heartbeating. */
  private async onBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    // Schemas new to the decoder (decoder: avro / protobuf) are fetched before the batch is decoded.
    const notReady = await prepareValues(this.options.payloadDecoder, batch.messages);
    if (notReady) return this.fail(notReady);
    const p = batch.partition;
    const from = this.membership.fetchedTo(p);
    if (
      this.stopping ||
      this.membership.holding ||
      !this.reading ||
      !payload.isRunning() ||
      payload.isStale() ||
      from === undefined ||
      !this.membership.owns(p) ||
      batch.topic !== this.topic
    ) {
      // Not resolved: kafkajs fetches it again (or from a pending seek) once the new assignment
      // is settled. Returning (rather than waiting here) lets kafkajs keep heartbeating.
      await sleep(100);
      return;
    }
    this.highWatermarks.set(p, Number(batch.highWatermark));
    const end = this.limit ? (this.limit.get(p) ?? from) : Infinity;
    const { records, offsets, bytes } = sliceBatch(this.topic, p, batch.messages, from, end, this.options.payloadDecoder, this.options.tombstones);
    const last = offsets.at(-1);
    let fetchedTo = last !== undefined ? last + 1 : from;
    const batchEnd = Math.min(Number(batch.lastOffset()) + 1, end);
    const advanceTo = batchEnd > fetchedTo ? batchEnd : undefined;
    if (advanceTo !== undefined) fetchedTo = advanceTo;
    if (records.length > 0 || advanceTo !== undefined) {
      this.buffer.push({ partition: p, records, offsets, index: 0, bytes, advanceTo });
      this.membership.setFetched(p, fetchedTo);
    }
    payload.resolveOffset(String(fetchedTo - 1));
    if (fetchedTo >= end) this.consumer?.pause([{ topic: this.topic, partitions: [p] }]);

    // Backpressure (I5): kafkajs fetches again only after this returns.
    const join = this.membership.generation;
    while (this.buffer.full() && !this.stopping && payload.isRunning() && join === this.membership.generation) {
      await this.buffer.waitForRoom(Math.min(1_000, this.options.heartbeatIntervalMs));
      // Keeps the membership alive while the sink writes; throws when a rebalance started,
      // which is how kafkajs learns it must rejoin.
      await payload.heartbeat();
    }
  }

  /** A fetch with only control/aborted records: move the position past them, in order. */
  private advanceEmpty(p: number, to: number): void {
    const from = this.membership.fetchedTo(p);
    if (from === undefined || !this.membership.owns(p) || this.membership.holding) return;
    const end = this.limit ? (this.limit.get(p) ?? from) : Infinity;
    const target = Math.min(to, end);
    if (target <= from) return;
    this.buffer.push({ partition: p, records: [], offsets: [], index: 0, bytes: 0, advanceTo: target });
    this.membership.setFetched(p, target);
  }
}
