import { waitUntil } from "../../util/wait.js";
import type { SourceRecord } from "../core/types.js";

/** Part of one fetched batch: records of one partition, in offset order. */
export interface Chunk {
  partition: number;
  /** Decoded on arrival, while the sink is busy writing, rather than on the read path. */
  records: SourceRecord[];
  offsets: number[];
  index: number;
  bytes: number;
  /** After the last message: the partition's position moves here (past control records). */
  advanceTo: number | undefined;
}

/** A record taken from the buffer, with where it sits. */
export interface Taken {
  partition: number;
  offset: number;
  record: SourceRecord;
}

/** Where `take` moves a partition past records it never hands out (control records). */
export interface Positions {
  advance(partition: number, offset: number): void;
}

export interface BufferLimits {
  bufferMaxMessages: number;
  bufferMaxBytes: number;
}

/**
 * The bounded buffer between kafkajs's fetch callback (the writer) and `read` (the reader),
 * counted in messages and in bytes of keys and values (I5). The writer waits for room while it
 * is full; the reader waits for data while it is empty; each wakes the other.
 */
export class ReadBuffer {
  private chunks: Chunk[] = [];
  private messages = 0;
  private bytes = 0;
  private wakeReader: (() => void) | undefined;
  private wakeWriter: (() => void) | undefined;

  constructor(private readonly limits: BufferLimits) {}

  push(chunk: Chunk): void {
    this.chunks.push(chunk);
    this.messages += chunk.records.length;
    this.bytes += chunk.bytes;
    this.wakeReader?.();
  }

  /** The next record in fetch order; a finished chunk moves its partition to `advanceTo`. */
  take(positions: Positions): Taken | undefined {
    while (this.chunks.length > 0) {
      const chunk = this.chunks[0]!;
      if (chunk.index < chunk.records.length) {
        const i = chunk.index++;
        this.messages--;
        return { partition: chunk.partition, offset: chunk.offsets[i]!, record: chunk.records[i]! };
      }
      this.chunks.shift();
      this.bytes -= chunk.bytes;
      // Only control records (transaction markers) or filtered records lie before this offset.
      if (chunk.advanceTo !== undefined) positions.advance(chunk.partition, chunk.advanceTo);
      this.wakeWriter?.();
    }
    return undefined;
  }

  /** The oldest record not yet taken. */
  head(): SourceRecord | undefined {
    const first = this.chunks[0];
    return first?.records[first.index];
  }

  full(): boolean {
    return this.messages >= this.limits.bufferMaxMessages || this.bytes >= this.limits.bufferMaxBytes;
  }

  /** Forget what is buffered: of one partition (it was lost in a rebalance), or all. */
  drop(partition?: number): void {
    if (partition === undefined) {
      this.chunks = [];
      this.messages = 0;
      this.bytes = 0;
      return;
    }
    const kept: Chunk[] = [];
    for (const c of this.chunks) {
      if (c.partition === partition) {
        this.messages -= c.records.length - c.index;
        this.bytes -= c.bytes;
      } else {
        kept.push(c);
      }
    }
    this.chunks = kept;
  }

  /** The reader: wait until something was pushed, the writer or `wake` was called, or `signal` aborts. */
  async waitForData(signal: AbortSignal): Promise<void> {
    await waitUntil(undefined, signal, (wake) => {
      this.wakeReader = wake;
    });
  }

  /** The writer: wait until a chunk was taken or dropped, `releaseWriter`/`wake` was called, or `ms` passed. */
  async waitForRoom(ms: number): Promise<void> {
    await waitUntil(ms, undefined, (wake) => {
      this.wakeWriter = wake;
    });
  }

  /** Let a waiting writer return (it re-checks whether it should go on waiting). */
  releaseWriter(): void {
    this.wakeWriter?.();
  }

  wake(): void {
    this.wakeReader?.();
    this.wakeWriter?.();
  }
}
