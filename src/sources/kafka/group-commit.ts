// Types only: kafkajs is an optional peer dependency, loaded at run time through requirePeer.
import type { Admin, Consumer } from "kafkajs";
import { settledWithin } from "../../util/wait.js";
import { errorTypes, messageOf } from "./errors.js";
import type { ResolvedKafkaOptions } from "./options.js";

/** What the group commit needs to know about the source's membership of the group. */
export interface GroupMember {
  /** After `close()`: never reconnect just to commit. */
  closed(): boolean;
  /** The consumer of the current (or last) read, if it joined the group. */
  consumer(): Consumer | undefined;
  /** Whether the consumer's assignment has been settled at least once. */
  settled(): boolean;
  owns(partition: number): boolean;
  admin(): Promise<Admin>;
}

type CommitOptions = Pick<ResolvedKafkaOptions, "groupId" | "commitGroupOffsets" | "groupCommitTimeoutMs" | "onWarning" | "sasl">;

/** The broker's answers to a commit of a generation a rebalance has replaced. */
const REBALANCE_ERRORS = new Set(["ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID"]);

/**
 * The consumer group's committed offsets, moved after each checkpoint commit for the partitions
 * this member owns, never backwards. Advisory (the checkpoint is the truth), so it never holds up
 * the next batch: commits run one at a time in the background, the newest positions win, and
 * `flush` waits for the last one. A failure is one warning; a later commit catches up.
 */
export class GroupCommits {
  /** What the group is known to hold, per partition (fetched from it, or committed to it). */
  private readonly known = new Map<number, number>();
  private running: Promise<void> | undefined;
  private wanted: Map<number, number> | undefined;
  /**
   * The last checkpointed positions: committed to the group again after a rejoin, in case the
   * commit that followed the checkpoint was refused during the rebalance or an outage.
   */
  private last: Map<number, number> | undefined;
  private failing = false;

  constructor(
    private readonly topic: string,
    private readonly description: string,
    private readonly options: CommitOptions,
    private readonly member: GroupMember,
  ) {}

  /** The checkpoint now holds `positions`: commit them to the group. */
  committed(positions: Map<number, number>): void {
    this.last = positions;
    this.schedule(positions);
  }

  /** The assignment was settled after a (re)join: commit the last checkpoint again. */
  afterRejoin(): void {
    if (this.last && this.options.commitGroupOffsets) this.schedule(this.wanted ?? this.last);
  }

  /** A new read starts: nothing of it is checkpointed yet. */
  forgetLast(): void {
    this.last = undefined;
  }

  /** Offsets fetched from the group; a commit of ours it has not seen yet is kept. */
  seen(group: ReadonlyMap<number, number>): void {
    for (const [p, offset] of group) this.known.set(p, Math.max(offset, this.known.get(p) ?? -1));
  }

  /** Offsets fetched from the group, taken as they are. */
  adopt(group: ReadonlyMap<number, number>): void {
    for (const [p, offset] of group) this.known.set(p, offset);
  }

  /** Wait until the commits asked for so far have been tried. */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  private schedule(positions: Map<number, number>): void {
    this.wanted = positions;
    this.running ??= this.loop().finally(() => {
      this.running = undefined;
    });
  }

  private async loop(): Promise<void> {
    for (let positions = this.wanted; positions; positions = this.wanted) {
      this.wanted = undefined;
      await this.commit(positions);
    }
  }

  private async commit(positions: Map<number, number>): Promise<void> {
    if (this.member.closed()) return;
    const consumer = this.member.consumer();
    // A member commits for the partitions it owns; a consumer still joining has nothing to commit.
    if (consumer && !this.member.settled()) return;
    const offsets = [...positions]
      .filter(([p, offset]) => (consumer ? this.member.owns(p) : true) && offset > (this.known.get(p) ?? -1))
      .map(([partition, offset]) => ({ topic: this.topic, partition, offset: String(offset) }));
    if (offsets.length === 0) return;
    try {
      const commit = consumer
        ? consumer.commitOffsets(offsets)
        : // Not a member (the drain had nothing to read): set them as an admin, which the broker
          // allows only while the group has no active members; otherwise they stay as they are.
          this.member
            .admin()
            .then((admin) =>
              admin.setOffsets({ groupId: this.options.groupId, topic: this.topic, partitions: offsets.map(({ partition, offset }) => ({ partition, offset })) }),
            );
      const outcome = await settledWithin(commit.then(() => "ok" as const), this.options.groupCommitTimeoutMs);
      if (outcome === "timeout") throw new Error(`no answer within ${this.options.groupCommitTimeoutMs} ms`);
      for (const { partition, offset } of offsets) this.known.set(partition, Number(offset));
      this.failing = false;
    } catch (err) {
      // During a rebalance the broker refuses commits of the old generation: expected, and the
      // member (or the partition's new owner) commits again once the group has settled.
      const rebalancing = errorTypes(err).some((t) => REBALANCE_ERRORS.has(t));
      if (!this.failing && !rebalancing) {
        this.options.onWarning(
          `${this.description}: could not commit offsets of group "${this.options.groupId}" (${messageOf(err, this.options.sasl)}). ` +
            `The checkpoint holds the true position; lag tools show the group behind until a later commit succeeds.`,
        );
        this.failing = true;
      }
    }
  }
}
