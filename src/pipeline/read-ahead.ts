import type { BatchCollector, BatchLimits, CollectedBatch } from "./collect.js";

/**
 * Batches of a cursor source collected ahead of their write, in source order, each starting where
 * the one before ends. One collection runs at a time (the collector reads one source); it stops
 * at `depth` batches held, or at batches holding `maxBytes` between them (so batches grown to the
 * budget are read ahead one at a time: memory stays near two batches' bytes), at the end of the
 * source, after a batch that found nothing in time, after `budget` batches, or when stopped.
 * Whoever takes the batches writes them, one by one.
 */
export class ReadAhead<B> {
  private readonly ready: B[] = [];
  /** The batch being collected now; it is in `ready` once this settles. */
  private current: Promise<B> | undefined;
  /** The collecting loop, while it runs. */
  private collecting: Promise<void> | undefined;
  /** A collection failed: the take that needs its batch throws this. */
  private failure: { error: unknown } | undefined;
  private readonly stopper = new AbortController();

  constructor(
    private readonly collector: BatchCollector,
    /** Wraps a collected batch (and starts its validation). */
    private readonly wrap: (batch: CollectedBatch) => B,
    private readonly isEmpty: (batch: B) => boolean,
    /** A batch's bytes, as `BatchLimits.maxBytes` counts them. */
    private readonly bytesOf: (batch: B) => number,
    /** Stops collecting: the caller's stop signal, if any. */
    stop?: AbortSignal,
  ) {
    this.signal = stop ? AbortSignal.any([stop, this.stopper.signal]) : this.stopper.signal;
  }

  /** Cuts the batch being collected when aborted. */
  readonly signal: AbortSignal;

  get held(): number {
    return this.ready.length;
  }

  get isCollecting(): boolean {
    return this.collecting !== undefined;
  }

  /** Keep collecting until `depth` batches are held (see the class comment). */
  fill(limits: BatchLimits, depth: number, budget = Number.POSITIVE_INFINITY): void {
    if (this.collecting || this.failure || this.signal.aborted) return;
    let left = budget;
    const step = async (): Promise<void> => {
      while (!this.signal.aborted && this.ready.length < depth && this.heldBytes() < limits.maxBytes && left > 0) {
        this.current = this.collector.next(limits, this.signal).then((batch) => {
          const wrapped = this.wrap(batch);
          this.ready.push(wrapped);
          return wrapped;
        });
        const got = await this.current;
        left--;
        if (this.collector.isExhausted || this.isEmpty(got)) return;
      }
    };
    this.collecting = step()
      .catch((error: unknown) => void (this.failure = { error }))
      .finally(() => void (this.collecting = undefined));
  }

  private heldBytes(): number {
    let bytes = 0;
    for (const b of this.ready) bytes += this.bytesOf(b);
    return bytes;
  }

  /** A batch already collected, never waiting; undefined when none is held. */
  takeReady(): B | undefined {
    return this.ready.shift();
  }

  /**
   * Whether the next batch is held with records (or is the source's end), waiting at most `ms`
   * for the one being collected. Takes nothing; never throws (a failed collection is false, and
   * `take` reports it).
   */
  async nextReady(ms: number): Promise<boolean> {
    if (this.ready.length === 0 && this.collecting && this.current) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.current.then(
          () => undefined,
          () => undefined,
        ),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
      ]);
      clearTimeout(timer);
    }
    const first = this.ready[0];
    return first !== undefined && !this.isEmpty(first);
  }

  /**
   * The next batch in order: a held one, or the one being collected (waited for). Undefined when
   * nothing is held or being collected. `stop` cuts the batch being collected.
   */
  async take(stop?: AbortSignal): Promise<B | undefined> {
    if (this.ready.length === 0 && this.collecting && this.current) {
      const onStop = () => this.stopper.abort();
      if (stop?.aborted) onStop();
      else stop?.addEventListener("abort", onStop, { once: true });
      try {
        const failed = await this.current.then(
          () => undefined,
          (error: unknown) => ({ error }),
        );
        if (failed) throw failed.error;
      } finally {
        stop?.removeEventListener("abort", onStop);
      }
    }
    if (this.failure && this.ready.length === 0) throw this.failure.error;
    return this.ready.shift();
  }

  /** Stop collecting and wait for the collection in flight; held batches are dropped unwritten. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.collecting;
    this.ready.length = 0;
  }
}
