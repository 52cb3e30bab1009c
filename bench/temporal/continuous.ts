/**
 * `bench:temporal --case continuous`: a loopback SSE feed (./sse-feed.ts, a child process) offers
 * order events at `rate` per second for `seconds`; StreamSink (continuous) and the stream workflow
 * (one worker in this process) consume it in turn, each from its own fresh feed, with the same
 * contract and batch limits. Per committed batch (StreamSink's onBatch; the worker's "batch
 * committed" line) the bench notes the time and the number of records committed so far: event i
 * (id i + 1) is committed by the first batch whose running count exceeds i, so its latency is that
 * batch's commit time minus the time the feed wrote it.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { StreamSink } from "../../src/sink/index.js";
import { SSEOffsetSource } from "../../src/sources/sse/source.js";
import { StreamClient } from "../../src/temporal/client.js";
import { createLakeLogicWorker } from "../../src/temporal/worker.js";
import type { WorkflowHandle } from "@temporalio/client";
import type { Logger, LogFields } from "../../src/observe/logger.js";
import type { TemporalServer } from "../../test/support/temporal.js";
import { ORDERS_CONTRACT, workflowBundle } from "../../test/temporal/support.js";

export interface ContinuousOptions {
  rate: number;
  seconds: number;
  batchSize: number;
  maxWaitMs: number;
  /** The workflow's batchesPerFetch; default its own (4). */
  batchesPerFetch?: number;
  /** The workflow's localFetchesPerRoundTrip; default its own (3). */
  localFetchesPerRoundTrip?: number;
  dir: string;
}

interface Feed {
  url: string;
  /** Resolves once every event is offered. */
  done: Promise<{ offered: number; ticks: Array<[number, number]>; connections: number; maxBufferedBytes: number }>;
  stop(): Promise<void>;
}

/** After the last event is offered, how long a side may take to commit the rest before it is stopped. */
const CATCH_UP_MS = 15_000;

type History = Awaited<ReturnType<WorkflowHandle["fetchHistory"]>>;
type HistoryEvent = NonNullable<History["events"]>[number];

const quantiles = (values: number[]) => {
  const v = [...values].sort((a, b) => a - b);
  const q = (p: number) => Math.round(v[Math.min(v.length - 1, Math.floor(p * v.length))] ?? NaN);
  return { p50: q(0.5), p90: q(0.9), sum: Math.round(v.reduce((a, b) => a + b, 0)) };
};

/** Whether a history event is a takeReadAhead local activity that handed over batches (a fetch served by the worker). */
export function localFetchServed(e: HistoryEvent): boolean {
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName !== "core_local_activity") return false;
  const decode = (d: Uint8Array | null | undefined) => (d ? (JSON.parse(new TextDecoder().decode(d)) as unknown) : undefined);
  const info = decode(marker.details?.data?.payloads?.[0]?.data) as { activity_type?: string } | undefined;
  return info?.activity_type === "takeReadAhead" && Boolean(decode(marker.details?.result?.payloads?.[0]?.data));
}

/**
 * Where a fetch cycle's time goes, from the event times of the history: `queued` (fetchBatch
 * scheduled → started on the worker: the server's hand-off and the worker's poll), `fetch`
 * (started → completed: waiting for the first batch), `toWorkflowTask` (completed → the workflow
 * task that receives the result started on the worker), `writes` (completed → the next fetch
 * scheduled: the workflow tasks that write and commit the batches handed over, as local activities).
 */
class FetchCycles {
  /** Fetches through the server (fetchBatch activities). */
  fetches = 0;
  /** Fetches served by the worker's read-ahead as local activities (takeReadAhead that handed over batches). */
  localFetches = 0;
  private readonly queued: number[] = [];
  private readonly fetch: number[] = [];
  private readonly writes: number[] = [];
  private readonly toTask: number[] = [];
  private readonly scheduledAt: number[] = [];
  private readonly taskStartedAt: number[] = [];

  add(events: HistoryEvent[]): void {
    const ms = (e: HistoryEvent) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
    let scheduled: number | undefined;
    let started: number | undefined;
    let completed: number | undefined;
    let awaitingTask = false;
    for (const e of events) {
      if (localFetchServed(e)) this.localFetches++;
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === "fetchBatch") {
        this.fetches++;
        if (completed !== undefined) this.writes.push(ms(e) - completed);
        scheduled = ms(e);
        this.scheduledAt.push(scheduled);
        completed = undefined;
      } else if (e.activityTaskStartedEventAttributes && scheduled !== undefined) {
        started = ms(e);
        this.queued.push(started - scheduled);
      } else if (e.activityTaskCompletedEventAttributes && started !== undefined) {
        completed = ms(e);
        this.fetch.push(completed - started);
        started = undefined;
        awaitingTask = true;
      } else if (e.workflowTaskStartedEventAttributes && awaitingTask && completed !== undefined) {
        this.toTask.push(ms(e) - completed);
        this.taskStartedAt.push(ms(e));
        awaitingTask = false;
      }
    }
  }

  /** `writes`: [start, end] of every batch's write, on the same clock as the history's event times. */
  summary(writes: Array<[number, number]>) {
    // Last write of a cycle → the next fetch scheduled (the workflow task completing), and the
    // workflow task that receives a fetch → the first write it starts.
    const lastWriteToFetch = this.scheduledAt.flatMap((t) => {
      const end = writes.filter(([, e]) => e <= t).pop()?.[1];
      return end === undefined ? [] : [t - end];
    });
    const taskToFirstWrite = this.taskStartedAt.flatMap((t) => {
      const start = writes.find(([b]) => b >= t)?.[0];
      return start === undefined ? [] : [start - t];
    });
    return {
      queued: quantiles(this.queued),
      fetch: quantiles(this.fetch),
      toWorkflowTask: quantiles(this.toTask),
      taskToFirstWrite: quantiles(taskToFirstWrite),
      writes: quantiles(this.writes),
      lastWriteToFetch: quantiles(lastWriteToFetch),
    };
  }
}

const now = () => performance.timeOrigin + performance.now();

async function startFeed(rate: number, seconds: number): Promise<Feed> {
  const script = fileURLToPath(new URL("./sse-feed.ts", import.meta.url));
  const child: ChildProcess = fork(script, [String(rate), String(seconds)], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let resolveDone!: (v: Awaited<Feed["done"]>) => void;
  const done = new Promise<Awaited<Feed["done"]>>((r) => (resolveDone = r));
  const url = await new Promise<string>((resolve, reject) => {
    child.on("message", (m: { type: string; url?: string } & Awaited<Feed["done"]>) => {
      if (m.type === "listening") resolve(m.url!);
      if (m.type === "done") resolveDone(m);
    });
    child.once("exit", (code) => reject(new Error(`the SSE feed exited early (${code})`)));
  });
  return {
    url,
    done,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.disconnect();
      }),
  };
}

/** Commit log: [records committed so far, commit time] per batch. */
type Commits = Array<[number, number]>;

interface RunFigures {
  offered: number;
  committed: number;
  batches: number;
  /** Records committed by the time the last one was offered, per second of offering. */
  sustainedPerSec: number;
  /** First offer to last commit. */
  drainSeconds: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** Event-loop utilisation of this process (the consumer's JavaScript thread) over the run. */
  jsThreadBusy: number;
  cpuSeconds: number;
  feedConnections: number;
  feedMaxBufferedMb: number;
}

function figures(feed: Awaited<Feed["done"]>, commits: Commits, elu: number, cpuSeconds: number): RunFigures {
  const { ticks, offered } = feed;
  const firstOffer = ticks[0]![1];
  const lastOffer = ticks[ticks.length - 1]![1];
  const latencies = new Float64Array(offered);
  let event = 0;
  let tick = 0;
  let committedByLastOffer = 0;
  for (const [upTo, at] of commits) {
    if (at <= lastOffer) committedByLastOffer = upTo;
    for (; event < Math.min(upTo, offered); event++) {
      while (ticks[tick]![0] <= event) tick++;
      latencies[event] = at - ticks[tick]![1];
    }
  }
  const committed = commits.length ? commits[commits.length - 1]![0] : 0;
  const seen = latencies.subarray(0, event).sort();
  const q = (p: number) => Math.round(seen[Math.min(seen.length - 1, Math.floor(p * seen.length))] ?? NaN);
  return {
    offered,
    committed,
    batches: commits.length,
    sustainedPerSec: Math.round(committedByLastOffer / ((lastOffer - firstOffer) / 1000)),
    drainSeconds: +((commits[commits.length - 1]![1] - firstOffer) / 1000).toFixed(2),
    latencyMs: { p50: q(0.5), p99: q(0.99), max: q(1) },
    jsThreadBusy: +elu.toFixed(2),
    cpuSeconds: +cpuSeconds.toFixed(1),
    feedConnections: feed.connections,
    feedMaxBufferedMb: +(feed.maxBufferedBytes / 1048576).toFixed(1),
  };
}

/** Wait until every offered event is committed (or `limitMs` passed since the last was offered). */
async function caughtUp(feed: Feed, commits: Commits, limitMs: number): Promise<Awaited<Feed["done"]>> {
  const done = await feed.done;
  const end = Date.now() + limitMs;
  while ((commits[commits.length - 1]?.[0] ?? 0) < done.offered && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return done;
}

function measure() {
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  return () => {
    const cpu = process.cpuUsage(cpu0);
    return { elu: performance.eventLoopUtilization(elu0).utilization, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  };
}

export async function streamSinkContinuous(o: ContinuousOptions): Promise<RunFigures> {
  mkdirSync(o.dir, { recursive: true });
  const feed = await startFeed(o.rate, o.seconds);
  const commits: Commits = [];
  const stop = new AbortController();
  try {
    const sink = new StreamSink(ORDERS_CONTRACT, new SSEOffsetSource(feed.url), {
      targetPath: join(o.dir, "lake-sink-continuous"),
      checkpoint: join(o.dir, "sink-continuous.sqlite"),
      batchSize: o.batchSize,
      maxWaitMs: o.maxWaitMs,
      signal: stop.signal,
      handleSignals: false,
      onBatch: (r) => void commits.push([r.totals.sourceCount, now()]),
    });
    const done = measure();
    const running = sink.run("continuous");
    const fed = await caughtUp(feed, commits, CATCH_UP_MS);
    const { elu, cpuSeconds } = done();
    stop.abort();
    await running;
    return figures(fed, commits, elu, cpuSeconds);
  } finally {
    await feed.stop();
  }
}

export async function temporalContinuous(o: ContinuousOptions, server: TemporalServer) {
  mkdirSync(o.dir, { recursive: true });
  const commits: Commits = [];
  const writeMs: number[] = [];
  const writes: Array<[number, number]> = [];
  const gaps: number[] = [];
  let committed = 0;
  const onLine = (msg: string, fields?: LogFields) => {
    if (msg !== "batch committed") return;
    committed += Number(fields?.records ?? 0);
    commits.push([committed, now()]);
    const durationMs = Number(fields?.durationMs ?? NaN);
    // From the end of one batch's write to the start of the next: the workflow's turn between batches.
    const end = now();
    if (writes.length) gaps.push(end - durationMs - writes[writes.length - 1]![1]);
    writes.push([end - durationMs, end]);
    writeMs.push(durationMs);
  };
  const quiet = () => undefined;
  const logger: Logger = { info: onLine, debug: quiet, warn: quiet, error: (m, f) => console.error(m, JSON.stringify(f ?? {})), enabled: (l) => l !== "debug" };
  const worker = await createLakeLogicWorker({ address: server.address, workflowBundle: await workflowBundle(), shutdownGraceTimeMs: 1000, logger });
  const running = worker.run();
  const streams = await StreamClient.connect({ address: server.address });
  const feed = await startFeed(o.rate, o.seconds);
  const key = `bench::temporal-continuous-${basename(o.dir)}`;
  try {
    const handle = await streams.start({
      contract: ORDERS_CONTRACT,
      source: { type: "sse", url: feed.url },
      mode: "continuous",
      checkpointKey: key,
      targetPath: join(o.dir, "lake-temporal-continuous"),
      checkpoint: join(o.dir, "temporal-continuous.sqlite"),
      batchSize: o.batchSize,
      maxWaitMs: o.maxWaitMs,
      // Only an idle fetch (after the feed ends) waits this long: the stop is seen sooner.
      timeouts: { idleFetchMs: 1000 },
      ...(o.batchesPerFetch === undefined ? {} : { batchesPerFetch: o.batchesPerFetch }),
      ...(o.localFetchesPerRoundTrip === undefined ? {} : { localFetchesPerRoundTrip: o.localFetchesPerRoundTrip }),
    });
    const done = measure();
    const fed = await caughtUp(feed, commits, CATCH_UP_MS);
    const { elu, cpuSeconds } = done();
    await streams.signal(key, "stop");
    await handle.result();
    // Every run of the workflow (continue-as-new) counts.
    let historyEvents = 0;
    let runs = 0;
    const cycles = new FetchCycles();
    let runId: string | undefined = handle.firstExecutionRunId;
    while (runId) {
      const history: History = await streams.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
      const events = history.events ?? [];
      runs++;
      historyEvents += events.length;
      cycles.add(events);
      runId = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    const f = figures(fed, commits, elu, cpuSeconds);
    return {
      ...f,
      historyEvents,
      runs,
      historyEventsPerBatch: +(historyEvents / Math.max(1, f.batches)).toFixed(2),
      fetches: cycles.fetches,
      localFetches: cycles.localFetches,
      batchesPerFetch: +(f.batches / Math.max(1, cycles.fetches + cycles.localFetches)).toFixed(2),
      cycleMs: cycles.summary(writes),
      writeBatchMs: quantiles(writeMs),
      betweenWritesMs: quantiles(gaps),
    };
  } finally {
    // The worker first: its source would reconnect to a feed that is gone.
    worker.shutdown();
    await running;
    await streams.close();
    await feed.stop();
  }
}
