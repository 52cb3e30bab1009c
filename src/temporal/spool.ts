import { randomUUID } from "node:crypto";
import { NonRetriableError } from "../errors.js";

export interface SpoolOptions {
  /** Entries older than this are dropped on the next `put` (abandoned batches). Default 10 min. */
  maxAgeMs?: number;
  /** At most this many entries; the oldest go first. Default 256. */
  maxEntries?: number;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Claim-check storage for batches that pass between activities on one worker (I4: rows never
 * travel through Temporal history, only the spool reference does).
 *
 * The values stay in this process's memory, by reference: fetchBatch runs on this worker's own
 * queue and validate/write/ack run as local activities in this same process, so whoever reads a
 * reference is the process that wrote it. When the process dies, its queue dies with it and the
 * workflow restarts the batch from the checkpoint on another worker, which finds no entry for the
 * reference (`SpoolMissingError`) if it is ever asked for one. Nothing is copied or serialised:
 * a value is handed back exactly as it was put (callers must not mutate what they put).
 *
 * Every batch the workflow writes is dropped after its commit; what is left behind (a batch whose
 * workflow moved to another worker) is dropped after `maxAgeMs`, or when more than `maxEntries`
 * are held. A reference dropped that way reads as missing, which restarts that batch: safe, only
 * slower.
 */
export class Spool {
  private readonly entries = new Map<string, { value: unknown; at: number }>();
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: SpoolOptions = {}) {
    this.maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
    this.maxEntries = options.maxEntries ?? 256;
    this.now = options.now ?? Date.now;
  }

  /** Entries currently held. */
  get size(): number {
    return this.entries.size;
  }

  put(kind: string, value: unknown): string {
    const at = this.now();
    this.evict(at);
    const ref = `${kind}-${randomUUID()}`;
    this.entries.set(ref, { value, at });
    return ref;
  }

  get<T>(ref: string): T {
    const entry = this.entries.get(ref);
    if (!entry) throw new SpoolMissingError(ref);
    return entry.value as T;
  }

  /** The value, or undefined when the reference is not held (never throws). */
  peek<T>(ref: string): T | undefined {
    return this.entries.get(ref)?.value as T | undefined;
  }

  drop(...refs: Array<string | null | undefined>): void {
    for (const ref of refs) if (ref) this.entries.delete(ref);
  }

  /** Drop everything; called when the worker shuts down. */
  clear(): void {
    this.entries.clear();
  }

  private evict(now: number): void {
    // A Map iterates in insertion order, and entries are never re-inserted: oldest first.
    for (const [ref, { at }] of this.entries) {
      if (now - at < this.maxAgeMs && this.entries.size < this.maxEntries) break;
      this.entries.delete(ref);
    }
  }
}

/** The batch's spool is not on this worker (it died, or the batch moved): restart the batch. */
export class SpoolMissingError extends NonRetriableError {
  constructor(ref: string) {
    // Not retriable here: the workflow restarts the batch from its fetch, on any worker.
    super("SPOOL_MISSING", `spool ${ref} is not on this worker; the batch must be fetched again`);
  }
}
