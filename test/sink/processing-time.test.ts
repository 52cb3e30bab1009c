/**
 * StreamSink's processing_time mode (Spark's Trigger.ProcessingTime): a batch starts every
 * interval. The run's clock is injected and driven by hand, and so is the source's: records
 * "arrive" at clock times, so which trigger takes which record follows from the schedule alone.
 * Nothing here depends on how fast the machine is: each trigger's batch finds its records at hand
 * (they are yielded in microtasks, before any timer can cut the batch) or finds none and is cut
 * by the (real, short) maxWaitMs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import type { Cursor } from "../../src/checkpoint/types.js";
import { loadContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import type { TriggerClock } from "../../src/pipeline/trigger.js";
import { nextTriggerAt } from "../../src/pipeline/trigger.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import type { CursorSource, ReadOptions, RunMode, SourceRecord } from "../../src/sources/core/types.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function lakeDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ll-ptime-"));
  dirs.push(d);
  return d;
}

const T0 = 1_000_000;

/** A clock moved only by the run's sleeps and by the test (a batch "taking" time). */
class HandClock implements TriggerClock {
  t = T0;
  readonly sleeps: Array<{ at: number; ms: number }> = [];
  private waiters: Array<() => void> = [];
  /** Called instead of sleeping when set (e.g. to stop the run during a wait). */
  onSleep: ((ms: number) => boolean) | undefined;

  now(): number {
    return this.t;
  }

  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    this.sleeps.push({ at: this.t, ms });
    if (this.onSleep?.(ms) || signal.aborted) return;
    this.advance(ms);
  }

  advance(ms: number): void {
    this.t += ms;
    const waiting = this.waiters;
    this.waiters = [];
    waiting.forEach((w) => w());
  }

  /** Resolves at the next advance. */
  moved(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** Order events, each arriving at a clock time; the cursor is the number of records read. */
function clockedSource(clock: HandClock, arrivals: number[], seenModes: RunMode[] = []): CursorSource {
  let position = 0;
  return {
    kind: "cursor",
    description: "clocked orders",
    replays: true,
    seek: async (cursor: Cursor | undefined) => void (position = typeof cursor === "number" ? cursor : 0),
    currentCursor: () => position,
    read(options: ReadOptions): AsyncIterable<SourceRecord> {
      seenModes.push(options.mode);
      return (async function* () {
        while (position < arrivals.length) {
          while (arrivals[position]! > clock.now()) await clock.moved();
          const i = position++;
          yield { value: orderEvent(i) };
        }
        // A live feed: after its last record it waits (for ever, as far as this test goes).
        while (!options.signal?.aborted) await clock.moved();
      })();
    },
  };
}

const ids = (r: BatchReport, from: number) => Array.from({ length: r.sourceCount }, (_, k) => from + k);

describe("StreamSink processing_time", () => {
  it("starts a batch every interval, commits nothing for an empty trigger, and follows an overrun batch at once", async () => {
    const clock = new HandClock();
    // 0–4 wait at the start; 5–7 arrive during the second wait; 8–9 while batch 2 overruns.
    const arrivals = [T0, T0, T0, T0, T0, T0 + 45_000, T0 + 45_000, T0 + 45_000, T0 + 100_000, T0 + 100_000];
    const modes: RunMode[] = [];
    const contract = await loadContract(CONTRACT);
    const target = lakeDir();
    const reports: BatchReport[] = [];
    const startedAt: number[] = [];
    // How long each committed batch "takes", on the run's clock.
    const durations = [5_000, 70_000, 0];
    const sink = new StreamSink(contract, clockedSource(clock, arrivals, modes), {
      checkpoint: "memory",
      targetPath: target,
      handleSignals: false,
      maxWaitMs: 20,
      clock,
      onBatch: (r) => {
        startedAt.push(clock.now());
        reports.push(r);
        clock.advance(durations[reports.length - 1]!);
      },
    });
    const summary = await sink.run("processing_time", { interval: "30 seconds", maxBatches: 3 });

    // Trigger 1 at T0 (batch took 5 s): wait 25 s to T0+30s. Trigger 2 at T0+30s finds nothing:
    // wait 30 s. Trigger 3 at T0+60s takes 5–7 and runs 70 s, past the T0+90s boundary: trigger 4
    // starts at once (no sleep), takes 8–9, and maxBatches ends the run.
    expect(clock.sleeps).toEqual([
      { at: T0 + 5_000, ms: 25_000 },
      { at: T0 + 30_000, ms: 30_000 },
    ]);
    expect(startedAt).toEqual([T0, T0 + 60_000, T0 + 130_000]);
    expect(reports.map((r) => r.batchId)).toEqual([1, 2, 3]); // the empty trigger made no batch
    expect([ids(reports[0]!, 0), ids(reports[1]!, 5), ids(reports[2]!, 8)]).toEqual([[0, 1, 2, 3, 4], [5, 6, 7], [8, 9]]);
    expect(reports.map((r) => r.cursor)).toEqual([5, 8, 10]);
    expect(summary).toMatchObject({ batches: 3, sourceCount: 10, stoppedBy: "max-batches", cursor: 10 });
    // The source is read as a continuous stream, and every record is in the lake once.
    expect(modes).toEqual(["continuous"]);
    const rows = (await readTable(contract, { targetPath: target })).length + (await readQuarantine(contract, { targetPath: target })).length;
    expect(rows).toBe(10);
  });

  it("takes the interval from the contract's trigger when run() names no mode", async () => {
    const clock = new HandClock();
    const base = await loadContract(CONTRACT);
    const contract = { ...base, trigger: "processing_time", raw: { ...base.raw, trigger: "processing_time", processing_time: "2 minutes" } };
    const reports: BatchReport[] = [];
    const sink = new StreamSink(contract, clockedSource(clock, [T0, T0 + 1, T0 + 500_000]), {
      checkpoint: "memory",
      targetPath: lakeDir(),
      handleSignals: false,
      maxWaitMs: 20,
      clock,
      onBatch: (r) => void reports.push(r),
    });
    const summary = await sink.run(undefined, { maxBatches: 3 });
    // Trigger 1 at T0 takes record 0 only (record 1 arrives a millisecond later), trigger 2 at
    // T0+2 min record 1; the three after find nothing, until record 2's trigger at T0+10 min.
    // Every wait is the whole 2 minutes (the batches take no clock time).
    expect(reports.map((r) => r.sourceCount)).toEqual([1, 1, 1]);
    expect(reports.map((r) => r.batchId)).toEqual([1, 2, 3]);
    expect(clock.sleeps.map((s) => s.ms)).toEqual([120_000, 120_000, 120_000, 120_000, 120_000]);
    expect(clock.now()).toBe(T0 + 600_000);
    expect(summary.stoppedBy).toBe("max-batches");
  });

  it("ends the wait between triggers when the run is stopped, committing nothing more", async () => {
    const clock = new HandClock();
    const stop = new AbortController();
    clock.onSleep = () => {
      stop.abort();
      return true;
    };
    const sink = new StreamSink(CONTRACT, clockedSource(clock, [T0, T0 + 10]), {
      checkpoint: "memory",
      targetPath: lakeDir(),
      handleSignals: false,
      maxWaitMs: 20,
      clock,
      signal: stop.signal,
    });
    const summary = await sink.run("processing_time", { interval: 30_000 });
    expect(clock.sleeps).toEqual([{ at: T0, ms: 30_000 }]);
    expect(summary).toMatchObject({ batches: 1, sourceCount: 1, stoppedBy: "signal", cursor: 1 });
  });

  it("refuses an interval that is not one, and an interval with another mode", async () => {
    const sink = new StreamSink(CONTRACT, [], { checkpoint: "memory", targetPath: lakeDir() });
    await expect(sink.run("processing_time", { interval: "soon" })).rejects.toThrow(ConfigError);
    await expect(sink.run("processing_time", { interval: "soon" })).rejects.toThrow(/interval: expected an interval such as "30 seconds"/);
    await expect(sink.run("continuous", { interval: "30s" })).rejects.toThrow(/interval: goes with the processing_time mode/);
  });

  it("schedules the next trigger on the boundary, or at once after an overrun, without a backlog", () => {
    expect(nextTriggerAt(0, 30_000, 5_000)).toBe(30_000);
    expect(nextTriggerAt(0, 30_000, 30_000)).toBe(30_000);
    expect(nextTriggerAt(0, 30_000, 95_000)).toBe(95_000); // three boundaries missed: one trigger, now
    expect(nextTriggerAt(0, 0, 7)).toBe(7);
  });
});
