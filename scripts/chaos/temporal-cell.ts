/**
 * The Temporal runtime under chaos: one stream workflow per cell. Each turn starts a worker
 * process, lets it work for a random while and SIGKILLs it; the workflow waits with no worker
 * until the cell's next turn and then carries on on the new one. Progress per kill is bounded by
 * that while, so the kills, not the data, run out first.
 */
import type { ChildProcess } from "node:child_process";
import { StreamClient } from "../../src/temporal/client.js";
import type { StreamWorkflowInput } from "../../workflows/types.js";
import { delay, stopProcess } from "../../test/support/proc.js";
import { spawnWorker } from "../../test/temporal/support.js";

/** How long a queue stream may take to drain once the kills are spent (leases lapse, redeliveries settle). */
export const QUEUE_DRAIN_MS = 15 * 60_000;

export interface TemporalCell {
  /** Run a worker for `ms` (from when it polls), then SIGKILL it; false if the stream was already done. */
  killAfter(ms: number): Promise<boolean>;
  /**
   * Let the stream drain on a live worker; resolves when the workflow completed and, for a queue,
   * `remaining` says nothing is left (else the stream is started again, as a schedule would).
   */
  drain(remaining?: () => Promise<number>): Promise<void>;
  close(): Promise<void>;
}

export async function startTemporalCell(address: string, taskQueue: string, input: StreamWorkflowInput): Promise<TemporalCell> {
  const streams = await StreamClient.connect({ address, taskQueue });
  await streams.start(input);
  const key = input.checkpointKey!;
  let worker: ChildProcess | undefined;
  let closed = false;
  const done = async () => (await streams.handle(key).describe()).status.name !== "RUNNING";
  return {
    killAfter: async (ms) => {
      if (await done()) return false;
      const w = (worker ??= await spawnWorker(address, taskQueue));
      await delay(ms);
      if (await done()) return false;
      const exited = new Promise((r) => (w.exitCode !== null || w.signalCode !== null ? r(undefined) : w.once("exit", r)));
      w.kill("SIGKILL");
      await exited;
      worker = undefined;
      return true;
    },
    drain: async (remaining) => {
      worker ??= await spawnWorker(address, taskQueue);
      await streams.result(key);
      const deadline = Date.now() + QUEUE_DRAIN_MS;
      for (let run = 0; remaining && (await remaining()) > 0; run++) {
        if (Date.now() > deadline) throw new Error(`${key}: the queue still holds unacknowledged messages after ${run} runs in ${QUEUE_DRAIN_MS / 60_000} min`);
        await delay(1000);
        await streams.start(input);
        await streams.result(key);
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      if (worker) await stopProcess(worker);
      await streams.close();
    },
  };
}
