/**
 * Waiting that a stream can always interrupt: every source and connector waits through these,
 * so that a stop request (an aborted signal) ends the wait at once instead of after a timeout.
 */

/** Wait `ms`, or less if `signal` aborts. Resolves true when the full time passed. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return waitUntil(ms, signal, () => undefined).then((why) => why === "time");
}

/**
 * Wait until `ms` passed (undefined: no limit), `signal` aborted, or someone calls the wake
 * function handed to `onWaker` (e.g. when a record arrives in a buffer). `onWaker` receives
 * `undefined` once the wait is over, so the caller can drop its reference.
 */
export function waitUntil(
  ms: number | undefined,
  signal: AbortSignal | undefined,
  onWaker: (wake: (() => void) | undefined) => void,
): Promise<"time" | "abort" | "wake"> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve("abort");
    let timer: NodeJS.Timeout | undefined;
    const finish = (why: "time" | "abort" | "wake") => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      onWaker(undefined);
      resolve(why);
    };
    const onAbort = () => finish("abort");
    if (ms !== undefined) timer = setTimeout(() => finish("time"), Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
    onWaker(() => finish("wake"));
  });
}

/** `promise`'s value, or "timeout" when it has not settled within `ms` (the timer never outlives the race). */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), Math.max(0, ms))));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
