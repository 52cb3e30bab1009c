import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** Labels of every stream metric. */
export interface StreamLabels {
  /** The contract's dataset. */
  stream: string;
  /** The stream's checkpoint key. */
  checkpointKey: string;
}

/**
 * The facts of one committed batch the metrics need; a StreamSink `BatchReport` has them all,
 * so `metrics.onBatch(labels)` can be passed as `onBatch` too.
 */
export interface BatchFacts {
  sourceCount: number;
  goodCount: number;
  badCount: number;
  supersededCount: number;
  /** From the batch being cut to its commit. */
  durationMs?: number;
  /** The source's backlog after the commit, when it can tell. */
  lag?: { records?: number; bytes?: number; oldestAgeMs?: number };
}

export interface StreamMetricsOptions {
  /** Register into this registry (e.g. your app's); default a new one. */
  registry?: Registry;
  /** Clock for the checkpoint age (tests). */
  now?: () => number;
}

const LABELS = ["stream", "checkpoint_key"] as const;

/**
 * Prometheus metrics of LakeLogic streams (prom-client). One instance per process: StreamSink
 * takes it as its `metrics` option, the Temporal worker records its batch activities into one.
 * Names and labels: docs/observability.md.
 */
export class StreamMetrics {
  readonly registry: Registry;
  private readonly recordsIn: Counter<(typeof LABELS)[number]>;
  private readonly recordsGood: Counter<(typeof LABELS)[number]>;
  private readonly recordsBad: Counter<(typeof LABELS)[number]>;
  private readonly recordsSuperseded: Counter<(typeof LABELS)[number]>;
  private readonly batches: Counter<(typeof LABELS)[number]>;
  private readonly duration: Histogram<(typeof LABELS)[number]>;
  private readonly commitLag: Gauge<(typeof LABELS)[number]>;
  private readonly lagRecords: Gauge<(typeof LABELS)[number]>;
  private readonly lagBytes: Gauge<(typeof LABELS)[number]>;
  private readonly lagAge: Gauge<(typeof LABELS)[number]>;
  private readonly lastCommit = new Map<string, { labels: Record<(typeof LABELS)[number], string>; at: number }>();

  constructor(options: StreamMetricsOptions = {}) {
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    const now = options.now ?? Date.now;
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: LABELS, registers });
    const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: LABELS, registers });
    this.recordsIn = counter("lakelogic_records_in_total", "Records read from the source and committed (good + bad + superseded).");
    this.recordsGood = counter("lakelogic_records_good_total", "Records written to the target.");
    this.recordsBad = counter("lakelogic_records_bad_total", "Records quarantined.");
    this.recordsSuperseded = counter("lakelogic_records_superseded_total", "Good records replaced by a later one with the same key in their batch.");
    this.batches = counter("lakelogic_batches_total", "Batches committed.");
    this.duration = new Histogram({
      name: "lakelogic_batch_duration_seconds",
      help: "Time from a batch being cut to its commit (validate, write, commit).",
      labelNames: LABELS,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.commitLag = gauge("lakelogic_commit_lag_seconds", "Time from the last committed batch being cut to its commit.");
    this.lagRecords = gauge("lakelogic_source_lag_records", "Records the source holds beyond the committed position, when it can tell.");
    this.lagBytes = gauge("lakelogic_source_lag_bytes", "Bytes the source holds beyond the committed position (file sources).");
    this.lagAge = gauge("lakelogic_source_lag_oldest_age_seconds", "Age of the oldest record not yet read, when the source can tell (queues).");
    const lastCommit = this.lastCommit;
    new Gauge({
      name: "lakelogic_checkpoint_age_seconds",
      help: "Seconds since this process last committed a batch of the stream.",
      labelNames: LABELS,
      registers,
      collect() {
        this.reset();
        for (const { labels, at } of lastCommit.values()) this.set(labels, Math.max(0, (now() - at) / 1000));
      },
    });
    this.now = now;
  }

  private readonly now: () => number;

  /** Count one committed batch. */
  recordBatch(labels: StreamLabels, facts: BatchFacts): void {
    const l = { stream: labels.stream, checkpoint_key: labels.checkpointKey };
    this.recordsIn.inc(l, facts.sourceCount);
    this.recordsGood.inc(l, facts.goodCount);
    this.recordsBad.inc(l, facts.badCount);
    this.recordsSuperseded.inc(l, facts.supersededCount);
    this.batches.inc(l);
    if (facts.durationMs !== undefined) {
      this.duration.observe(l, facts.durationMs / 1000);
      this.commitLag.set(l, facts.durationMs / 1000);
    }
    if (facts.lag) this.recordLag(labels, facts.lag);
    this.lastCommit.set(JSON.stringify([labels.stream, labels.checkpointKey]), { labels: l, at: this.now() });
  }

  /** The source's backlog, as it reported it (the Temporal worker records it at each fetch). */
  recordLag(labels: StreamLabels, lag: NonNullable<BatchFacts["lag"]>): void {
    const l = { stream: labels.stream, checkpoint_key: labels.checkpointKey };
    if (lag.records !== undefined) this.lagRecords.set(l, lag.records);
    if (lag.bytes !== undefined) this.lagBytes.set(l, lag.bytes);
    if (lag.oldestAgeMs !== undefined) this.lagAge.set(l, lag.oldestAgeMs / 1000);
  }

  /** An `onBatch` callback that records each batch under these labels. */
  onBatch(labels: StreamLabels): (facts: BatchFacts) => void {
    return (facts) => this.recordBatch(labels, facts);
  }

  /** The exposition text (what /metrics serves). */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

export interface MetricsServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** Serve `registry` in the Prometheus text format at http://host:port/metrics. */
export async function serveMetrics(registry: Registry, options: { port: number; host?: string }): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: GET /metrics\n");
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`${(err as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.unref();
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
