import type { Cursor } from "../../checkpoint/types.js";
import { CursorMismatchError } from "../core/errors.js";

/**
 * The Kafka cursor: `{ "<topic>:<partition>": nextOffset }` — the offset of the next record to
 * read, per partition. This is the form stored in checkpoints; in memory it is a
 * `Map<partition, nextOffset>`.
 */
export type KafkaCursor = Record<string, number>;

/** A stored cursor as per-partition offsets; anything else is a CURSOR_MISMATCH naming `what`. */
export function decodeCursor(cursor: Cursor | undefined, topic: string, description: string, what: string): Map<number, number> {
  const out = new Map<number, number>();
  if (cursor === undefined || cursor === null) return out;
  if (typeof cursor !== "object" || Array.isArray(cursor)) throw mismatch(cursor, topic, description, what);
  const prefix = `${topic}:`;
  for (const [key, value] of Object.entries(cursor as Record<string, unknown>)) {
    if (!key.startsWith(prefix)) throw mismatch(cursor, topic, description, what);
    const p = Number(key.slice(prefix.length));
    const offset = typeof value === "bigint" ? Number(value) : typeof value === "string" && value.trim() !== "" ? Number(value) : value;
    if (!Number.isInteger(p) || p < 0 || typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) {
      throw mismatch(cursor, topic, description, what);
    }
    out.set(p, offset);
  }
  return out;
}

function mismatch(cursor: unknown, topic: string, description: string, what: string): CursorMismatchError {
  return new CursorMismatchError(
    `${description}: the ${what} ${JSON.stringify(cursor)} is not a Kafka cursor of topic "${topic}" ` +
      `({"${topic}:<partition>": nextOffset}); this checkpoint key belongs to another source or topic.`,
  );
}

/** Per-partition offsets as a stored cursor, partitions in ascending order. */
export function encodeCursor(topic: string, offsets: ReadonlyMap<number, number>): KafkaCursor {
  const c: KafkaCursor = {};
  for (const p of [...offsets.keys()].sort((a, b) => a - b)) c[`${topic}:${p}`] = offsets.get(p)!;
  return c;
}

/** The share of the records up to `end` that `at` has passed, from 0 to 1 (1 for an empty end). */
export function cursorProgress(at: ReadonlyMap<number, number>, end: ReadonlyMap<number, number>): number {
  let total = 0;
  let done = 0;
  for (const [p, e] of end) {
    total += e;
    done += Math.min(e, at.get(p) ?? 0);
  }
  return total === 0 ? 1 : done / total;
}

/**
 * The live cursor of a source: the next offset to yield, per partition. The sink samples it
 * after every record, so the stored form is rebuilt only when a position moved, and an object
 * once returned is never mutated afterwards.
 */
export class PartitionOffsets {
  private readonly offsets = new Map<number, number>();
  private cache: KafkaCursor | undefined;
  /** Partitions of the cursor in order, with their keys (rebuilt only when one is added). */
  private keys: Array<[number, string]> = [];

  constructor(private readonly topic: string) {}

  get(partition: number): number | undefined {
    return this.offsets.get(partition);
  }

  set(partition: number, offset: number): void {
    this.offsets.set(partition, offset);
    this.cache = undefined;
  }

  /** Move a partition's position forward to `offset`; never backwards. */
  advance(partition: number, offset: number): void {
    if (offset > (this.offsets.get(partition) ?? -1)) this.set(partition, offset);
  }

  clear(): void {
    this.offsets.clear();
    this.keys = [];
    this.cache = undefined;
  }

  load(offsets: ReadonlyMap<number, number>): void {
    for (const [p, offset] of offsets) this.offsets.set(p, offset);
    this.cache = undefined;
  }

  current(): KafkaCursor | undefined {
    if (this.offsets.size === 0) return undefined;
    if (!this.cache) {
      if (this.keys.length !== this.offsets.size) {
        this.keys = [...this.offsets.keys()].sort((a, b) => a - b).map((p) => [p, `${this.topic}:${p}`]);
      }
      const c: KafkaCursor = {};
      for (const [p, key] of this.keys) c[key] = this.offsets.get(p)!;
      this.cache = c;
    }
    return this.cache;
  }
}
