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
import { spawnWorker, type WorkerMachine } from "../../test/temporal/support.js";

/** How long a queue stream may take to drain once the kills are spent (leases lapse, redeliveries settle). */
export const QUEUE_DRAIN_MS = 15 * 60_000;

/** How long a cold life may take to its first commit before it is killed anyway. */
const FIRST_COMMIT_WAIT_MS = 120_000;

export interface TemporalCell {
  /**
   * Run a worker for `ms` (from when it polls, or on machines from its first commit), then SIGKILL it: "killed", or "ended" if the run
   * ended meanwhile, or "done" if the stream was done with nothing left. A run that ended with
   * records left (an available_now run that looked caught up) is started again, as a schedule would.
   */
  killAfter(ms: number): Promise<"killed" | "ended" | "done">;
  /** Let the stream drain on a live worker, starting it again while `remaining` says records are left. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `remaining`: what the stream has not consumed yet (queue messages, or produced minus counted).
 * `machines`: each worker life runs on the next of these in turn (a private disk each), so the
 * stream moves machine at every kill; none: plain processes of this host. A life on a machine
 * starts cold (it opens the source and the shared lake anew), so its while is counted from its
 * first commit: every life moves the stream on before it dies.
 */
export async function startTemporalCell(
  address: string,
  taskQueue: string,
  remaining: () => Promise<number>,
  input: StreamWorkflowInput,
  machines: WorkerMachine[] = [],
): Promise<TemporalCell> {
  const streams = await StreamClient.connect({ address, taskQueue });
  await streams.start(input);
  const key = input.checkpointKey!;
  let worker: ChildProcess | undefined;
  let closed = false;
  let lives = 0;
  /** Until the live worker commits a batch (its status query answers), the run ends, or a while passes. */
  const firstCommit = async () => {
    const status = () => streams.status(key).then((s) => s.batchId, () => undefined);
    let from: number | undefined;
    for (const deadline = Date.now() + FIRST_COMMIT_WAIT_MS; Date.now() < deadline; await delay(250)) {
      if (await done()) return;
      const at = await status();
      from ??= at;
      if (at !== undefined && from !== undefined && at > from) return;
    }
  };
  const spawn = () => spawnWorker(address, taskQueue, machines.length ? machines[lives++ % machines.length] : undefined);
  const done = async () => (await streams.handle(key).describe()).status.name !== "RUNNING";
  /** Whether the stream is running (started again if it ended with records left). */
  const running = async () => {
    if (!(await done())) return true;
    if ((await remaining()) === 0) return false;
    await streams.start(input);
    return true;
  };
  return {
    killAfter: async (ms) => {
      if (!(await running())) return "done";
      const w = (worker ??= await spawn());
      if (machines.length) await firstCommit();
      await delay(ms);
      if (await done()) return "ended";
      const exited = new Promise((r) => (w.exitCode !== null || w.signalCode !== null ? r(undefined) : w.once("exit", r)));
      w.kill("SIGKILL");
      await exited;
      worker = undefined;
      return "killed";
    },
    drain: async () => {
      worker ??= await spawn();
      await streams.result(key);
      const deadline = Date.now() + QUEUE_DRAIN_MS;
      for (let run = 0; (await remaining()) > 0; run++) {
        if (Date.now() > deadline) throw new Error(`${key}: records still unconsumed after ${run} runs in ${QUEUE_DRAIN_MS / 60_000} min`);
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
