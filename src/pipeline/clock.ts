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
