/**
 * Replay protection for pushed events: the keys of the last `size` committed events, and the
 * keys of events queued or in a batch right now. Both are bounded: the first by `size`, the
 * second by what the delivery queue holds plus the batches being written.
 */
export class DedupeWindow {
  private readonly committed = new Set<string>();
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly size: number) {}

  get enabled(): boolean {
    return this.size > 0;
  }

  /** The event with this key is committed (a Set keeps insertion order: the oldest goes first). */
  remember(key: string): void {
    if (this.size === 0) return;
    this.committed.delete(key);
    this.committed.add(key);
    if (this.committed.size > this.size) {
      const oldest = this.committed.values().next();
      if (oldest.done !== true) this.committed.delete(oldest.value);
    }
  }

  isCommitted(key: string): boolean {
    return this.committed.has(key);
  }

  isInFlight(key: string): boolean {
    return this.inFlight.has(key);
  }

  /** An event with this key is queued (it stays in flight until it is committed, given back or dropped). */
  hold(key: string): void {
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
  }

  /** An event with this key left the queue without being committed, or was committed. */
  settle(key: string): void {
    const n = this.inFlight.get(key) ?? 0;
    if (n <= 1) this.inFlight.delete(key);
    else this.inFlight.set(key, n - 1);
  }

  /** How many keys are remembered (for stats and tests of the bound). */
  get remembered(): number {
    return this.committed.size;
  }
}
