// Types only: kafkajs is an optional peer dependency, loaded at run time through requirePeer.
import type { Consumer } from "kafkajs";
import { sleep } from "../../util/wait.js";
import type { KafkaClients, Marks } from "./client.js";
import type { PartitionOffsets } from "./cursor.js";
import { CursorBeyondEndError, CursorMismatchError } from "../core/errors.js";
import { KafkaConsumerError, messageOf } from "./errors.js";
import type { GroupCommits } from "./group-commit.js";
import type { ResolvedKafkaOptions } from "./options.js";
import type { ReadBuffer } from "./read-buffer.js";

/** What rebalance handling works with: the source's parts, and its state of the moment. */
export interface MembershipContext {
  topic: string;
  description: string;
  options: Pick<ResolvedKafkaOptions, "autoOffsetReset" | "maxRetryTimeMs" | "onWarning" | "sasl">;
  cursor: PartitionOffsets;
  buffer: ReadBuffer;
  clients: Pick<KafkaClients, "groupOffsets" | "watermarks">;
  commits: Pick<GroupCommits, "seen" | "afterRejoin">;
  consumer(): Consumer | undefined;
  /** The end snapshot of the current read (available_now only). */
  limit(): ReadonlyMap<number, number> | undefined;
  reading(): boolean;
  stopping(): boolean;
  /** The read cannot go on: `read` throws this. */
  fail(err: Error): void;
}

/**
 * This member's share of the topic: the partitions the group assigned it and, per partition,
 * where fetching resumes. kafkajs rebalances eagerly: every partition may move, so from the first
 * sign of a rebalance the reader is held until the new assignment is known and every partition's
 * start is settled; records of a partition this member lost are dropped from the buffer and
 * never yielded (its position stays in the cursor).
 */
export class Membership {
  private assigned = new Set<number>();
  /** Next offset to enqueue, per assigned partition whose start has been settled. */
  private readonly fetched = new Map<number, number>();
  private joins = 0;
  private settledJoins = 0;
  private joinWork: Promise<void> = Promise.resolve();
  private held = false;

  constructor(private readonly c: MembershipContext) {}

  /** A new read: no assignment yet. */
  reset(): void {
    this.assigned = new Set();
    this.fetched.clear();
    this.joins = 0;
    this.settledJoins = 0;
    this.joinWork = Promise.resolve();
    this.held = false;
  }

  /** While true, the reader takes nothing: an assignment is being settled (or the read ended). */
  get holding(): boolean {
    return this.held;
  }

  hold(): void {
    this.held = true;
  }

  /** Counts joins: a fetch that waits across a join learns it is stale. */
  get generation(): number {
    return this.joins;
  }

  /** Whether an assignment has been settled in this read. */
  settled(): boolean {
    return this.settledJoins > 0;
  }

  owns(partition: number): boolean {
    return this.assigned.has(partition);
  }

  partitions(): Iterable<number> {
    return this.assigned;
  }

  /** Next offset to enqueue for `partition`, once its start is settled. */
  fetchedTo(partition: number): number | undefined {
    return this.fetched.get(partition);
  }

  setFetched(partition: number, offset: number): void {
    this.fetched.set(partition, offset);
  }

  /** Follow the consumer's group events. */
  listen(consumer: Consumer): void {
    const { GROUP_JOIN, REBALANCING, CRASH } = consumer.events;
    consumer.on(GROUP_JOIN, (e) => this.onJoin(e.payload.memberAssignment[this.c.topic] ?? []));
    // Eager rebalancing: every partition may be about to move. Hold the reader until the new
    // assignment is known, so records of a lost partition are not yielded in the meantime.
    consumer.on(REBALANCING, () => this.hold());
    consumer.on(CRASH, (e) => {
      if (e.payload.restart) {
        // kafkajs left the group and will rejoin: assume nothing is ours any more.
        this.held = true;
        this.c.buffer.drop();
        this.fetched.clear();
        this.c.buffer.releaseWriter();
      } else {
        this.c.fail(new KafkaConsumerError(this.c.description, e.payload.error, this.c.options.sasl));
      }
    });
  }

  /** Where partition p starts: max(checkpoint, group offset), else the reset policy; never before the log start. */
  startOf(p: number, group: ReadonlyMap<number, number>, marks: ReadonlyMap<number, Marks>): number {
    const { description, options } = this.c;
    const mine = this.c.cursor.get(p);
    const mark = marks.get(p);
    if (mine !== undefined && mark && mine > mark.high) {
      throw new CursorBeyondEndError(
        `${description}: the checkpoint says partition ${p} is at offset ${mine}, but the partition ends at ` +
          `${mark.high}. The topic was deleted and recreated, or this checkpoint belongs to another cluster. ` +
          `Resuming could skip records; start over with a new checkpointKey (and consumer group).`,
      );
    }
    let start = Math.max(mine ?? -1, group.get(p) ?? -1);
    if (start < 0) start = mark ? (options.autoOffsetReset === "earliest" ? mark.low : mark.high) : 0;
    if (mark && start < mark.low) {
      options.onWarning(
        `${description}: partition ${p} should resume at offset ${start}, but retention already deleted ` +
          `records before ${mark.low}; continuing at ${mark.low}. ${mark.low - start} records were never read.`,
      );
      start = mark.low;
    }
    return start;
  }

  /** GROUP_JOIN: take the new assignment at once, settle start positions (async) after. */
  private onJoin(partitions: number[]): void {
    const join = ++this.joins;
    const next = new Set(partitions);
    for (const p of this.assigned) {
      if (!next.has(p)) {
        // Lost: never yield its buffered records; its position stays in the cursor.
        this.c.buffer.drop(p);
        this.fetched.delete(p);
      }
    }
    this.assigned = next;
    this.held = true;
    this.c.buffer.releaseWriter();
    this.joinWork = this.joinWork.then(() => this.settle(join));
  }

  private async settle(join: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (join !== this.joins || this.c.stopping()) return; // superseded: the newest join settles
      try {
        const unsettled = [...this.assigned].filter((p) => !this.fetched.has(p));
        const [group, marks] =
          unsettled.length > 0
            ? await Promise.all([this.c.clients.groupOffsets(), this.c.clients.watermarks()])
            : [new Map<number, number>(), new Map<number, Marks>()];
        if (join !== this.joins || this.c.stopping()) return;
        this.c.commits.seen(group);
        for (const p of unsettled) {
          const start = this.startOf(p, group, marks);
          this.fetched.set(p, start);
          this.c.cursor.advance(p, start);
        }
        const consumer = this.c.consumer();
        if (!consumer) return;
        this.seekAssigned(consumer);
        this.settledJoins++;
        this.held = false;
        this.c.buffer.wake();
        this.c.commits.afterRejoin();
        return;
      } catch (err) {
        if (err instanceof CursorBeyondEndError || err instanceof CursorMismatchError) {
          this.c.fail(err);
          return;
        }
        // The brokers are unreachable (a restart, an outage): keep trying, like the consumer does.
        if (attempt === 5) {
          this.c.options.onWarning(`${this.c.description}: still cannot settle partition positions after a rebalance: ${messageOf(err, this.c.options.sasl)}; retrying`);
        }
        await sleep(Math.min(this.c.options.maxRetryTimeMs, 250 * 2 ** attempt));
      }
    }
  }

  /** Point the consumer at each assigned partition's settled start; fetch only those with records left to read. */
  private seekAssigned(consumer: Consumer): void {
    const topic = this.c.topic;
    const limit = this.c.limit();
    const pause: number[] = [];
    const resume: number[] = [];
    for (const p of this.assigned) {
      const at = this.fetched.get(p)!;
      // kafkajs restarts every partition from the group offset after a rebalance; ours is ahead.
      consumer.seek({ topic, partition: p, offset: String(at) });
      const end = limit ? (limit.get(p) ?? at) : undefined;
      // After the read ended (the member stays for the last group commit) nothing is fetched.
      (!this.c.reading() || (end !== undefined && at >= end) ? pause : resume).push(p);
    }
    if (pause.length > 0) consumer.pause([{ topic, partitions: pause }]);
    if (resume.length > 0) consumer.resume([{ topic, partitions: resume }]);
  }
}
