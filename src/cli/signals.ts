import { constants } from "node:os";
import { EXIT } from "./types.js";

/** A graceful stop on the first SIGINT or SIGTERM, for a command that keeps running. */
export interface GracefulStop {
  /** Aborted when the signal arrives (StreamSink's `signal`). */
  readonly abort: AbortSignal;
  /** 128 + the signal's number when a signal stopped the command (SIGINT 130, SIGTERM 143), else 0. */
  exitCode(): number;
  /** Stop listening (the command ended). */
  detach(): void;
}

/**
 * The first SIGINT or SIGTERM calls `onStop` (which says the command is stopping and starts the
 * stop); a second one finds no handler and ends the process at once, which the checkpoint makes
 * safe. `listen: false` (an available_now drain) leaves signals to end the process as usual.
 */
export function gracefulStop(onStop: (signal: NodeJS.Signals) => void, listen = true): GracefulStop {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const signals = listen ? (["SIGINT", "SIGTERM"] as const) : [];
  const detach = () => {
    for (const s of signals) process.removeListener(s, handler);
  };
  const handler = (signal: NodeJS.Signals) => {
    detach();
    received = signal;
    onStop(signal);
    controller.abort();
  };
  for (const s of signals) process.once(s, handler);
  return {
    abort: controller.signal,
    // The code a shell gives a process a signal ended, so a script can tell a stop from a drain.
    exitCode: () => (received === undefined ? EXIT.ok : 128 + constants.signals[received]),
    detach,
  };
}
