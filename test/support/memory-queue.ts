import type { AckSource, ReceivedRecord } from "../../src/sources/core/types.js";

/**
 * An in-memory queue (an ack source) for tests of the runtimes' queue handling — acks after the
 * commit, nacks on failure — with no queue server. The connectors' own tests run against real
 * queue servers.
 */
export class MemoryQueue implements AckSource<number> {
  readonly kind = "ack" as const;
  readonly description = "memory queue";
  readonly acked: number[] = [];
  readonly nacked: number[] = [];
  private next = 0;

  constructor(
    private readonly messages: readonly unknown[],
    /** Called before each acknowledgement is recorded (e.g. to look at the checkpoint then). */
    private readonly onAck?: (tokens: number[]) => Promise<void> | void,
  ) {}

  async receive(max: number): Promise<Array<ReceivedRecord<number>>> {
    const out: Array<ReceivedRecord<number>> = [];
    while (out.length < max && this.next < this.messages.length) {
      const id = this.next++;
      out.push({ value: this.messages[id], ackToken: id, position: id });
    }
    return out;
  }

  async ack(tokens: number[]): Promise<void> {
    await this.onAck?.(tokens);
    this.acked.push(...tokens);
  }

  async nack(tokens: number[]): Promise<void> {
    this.nacked.push(...tokens);
  }
}
