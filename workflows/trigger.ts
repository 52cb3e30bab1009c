/**
 * The processing_time trigger's schedule, once for both runtimes. Workflow-safe (no timers, no
 * I/O, no imports): the stream workflow waits for it on a durable timer, StreamSink on its clock.
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
