/**
 * The processing_time trigger's schedule, once for both runtimes: the stream workflow waits for
 * `nextTriggerAt` on a durable timer, StreamSink on its clock (TriggerSchedule). Workflow-safe:
 * nothing here runs at import, and the workflow calls only `nextTriggerAt`, which is pure.
 */

/**
 * When the trigger after the one that started at `startedAt` starts, `now` being when its batch
 * finished: on the interval boundary, or at once when the batch overran it. Missed boundaries
 * are not made up for (no backlog of triggers): the schedule goes on from the late start.
 */
export function nextTriggerAt(startedAt: number, intervalMs: number, now: number): number {
  const due = startedAt + intervalMs;
  return now >= due ? now : due;
}

/** The time a run's trigger schedule reads and waits on; tests pass one they drive by hand. */
export interface TriggerClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolve after `ms`, or as soon as `signal` aborts (never rejects). */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const SYSTEM_CLOCK: TriggerClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
    }),
};

/**
 * An in-process run's triggers: the first when the run starts, each next one on the interval
 * boundary after it, or at once when the batch overran the boundary (nextTriggerAt).
 */
export class TriggerSchedule {
  private startedAt: number;

  constructor(
    private readonly everyMs: number,
    private readonly clock: TriggerClock,
  ) {
    this.startedAt = clock.now();
  }

  /** Wait for the next trigger (a stop ends the wait early). */
  async waitForNext(stop: AbortSignal): Promise<void> {
    const next = nextTriggerAt(this.startedAt, this.everyMs, this.clock.now());
    const wait = next - this.clock.now();
    if (wait > 0) await this.clock.sleep(wait, stop);
    this.startedAt = next;
  }
}
