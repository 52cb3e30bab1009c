import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { packageInfo } from "../util/package-info.js";

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
  /** Rows each row rule failed in the batch (a BatchReport's ruleCounts). */
  ruleCounts?: ReadonlyArray<{ ruleId: string; severity: string; failed: number }>;
  /** Each dataset rule's result on the batch (a BatchReport's datasetRules; observed NaN or null when not measured). */
  datasetRules?: ReadonlyArray<{ ruleId: string; severity: string; passed: boolean; observed: number | null }>;
}

export interface StreamMetricsOptions {
  /** Register into this registry (e.g. your app's); default a new one. */
  registry?: Registry;
  /** Clock for the checkpoint age (tests). */
  now?: () => number;
  /**
   * Register prom-client's standard process and Node.js collectors (`process_*`, `nodejs_*`).
   * Default: true when this instance makes its registry, false with your own (which may have them).
   */
  processMetrics?: boolean;
}

const LABELS = ["stream", "checkpoint_key"] as const;
const RULE_LABELS = [...LABELS, "rule", "severity"] as const;
type Labels = Record<(typeof LABELS)[number], string>;

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
  private readonly ruleFailed: Counter<(typeof RULE_LABELS)[number]>;
  private readonly datasetRuleFailed: Counter<(typeof RULE_LABELS)[number]>;
  private readonly datasetRulePassed: Gauge<(typeof RULE_LABELS)[number]>;
  private readonly datasetRuleObserved: Gauge<(typeof RULE_LABELS)[number]>;
  /** Per stream: when it last committed, or was last known to have nothing pending (the later counts). */
  private readonly settled = new Map<string, { labels: Labels; at: number }>();

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
    const ruleCounter = (name: string, help: string) => new Counter({ name, help, labelNames: RULE_LABELS, registers });
    const ruleGauge = (name: string, help: string) => new Gauge({ name, help, labelNames: RULE_LABELS, registers });
    this.ruleFailed = ruleCounter("lakelogic_rule_failed_records_total", "Records that failed a row rule (a record failing two rules counts under each; warning and info rules too).");
    this.datasetRuleFailed = ruleCounter("lakelogic_dataset_rule_failed_batches_total", "Committed batches on which a dataset rule failed.");
    this.datasetRulePassed = ruleGauge("lakelogic_dataset_rule_passed", "1 when a dataset rule passed on the stream's last committed batch, 0 when it failed.");
    this.datasetRuleObserved = ruleGauge("lakelogic_dataset_rule_observed", "The value a dataset rule measured on the last committed batch (row count, null ratio, duplicates).");
    new Gauge({ name: "lakelogic_build_info", help: "1, labelled with the LakeLogic package version and the Node.js version.", labelNames: ["version", "nodejs_version"], registers }).set(
      { version: packageInfo().version, nodejs_version: process.version },
      1,
    );
    if (options.processMetrics ?? options.registry === undefined) collectDefaultMetrics({ register: this.registry });
    const settled = this.settled;
    new Gauge({
      name: "lakelogic_checkpoint_age_seconds",
      help: "Seconds the stream has had records pending without a commit: since its last commit, or since it was last known caught up, whichever is later.",
      labelNames: LABELS,
      registers,
      collect() {
        this.reset();
        for (const { labels, at } of settled.values()) this.set(labels, Math.max(0, (now() - at) / 1000));
      },
    });
    this.now = now;
  }

  private readonly now: () => number;

  /** Count one committed batch. */
  recordBatch(labels: StreamLabels, facts: BatchFacts): void {
    const l = labelsOf(labels);
    this.recordsIn.inc(l, facts.sourceCount);
    this.recordsGood.inc(l, facts.goodCount);
    this.recordsBad.inc(l, facts.badCount);
    this.recordsSuperseded.inc(l, facts.supersededCount);
    this.batches.inc(l);
    if (facts.durationMs !== undefined) {
      this.duration.observe(l, facts.durationMs / 1000);
      this.commitLag.set(l, facts.durationMs / 1000);
    }
    for (const r of facts.ruleCounts ?? []) this.ruleFailed.inc({ ...l, rule: r.ruleId, severity: r.severity }, r.failed);
    for (const d of facts.datasetRules ?? []) {
      const rl = { ...l, rule: d.ruleId, severity: d.severity };
      this.datasetRuleFailed.inc(rl, d.passed ? 0 : 1);
      this.datasetRulePassed.set(rl, d.passed ? 1 : 0);
      // Not measured (NaN, or null after JSON): no value rather than a made-up one.
      if (typeof d.observed === "number" && Number.isFinite(d.observed)) this.datasetRuleObserved.set(rl, d.observed);
    }
    this.settle(labels);
    if (facts.lag) this.recordLag(labels, facts.lag);
  }

  /** The source's backlog, as it reported it (the Temporal worker records it at each fetch); none left settles the age. */
  recordLag(labels: StreamLabels, lag: NonNullable<BatchFacts["lag"]>): void {
    const l = labelsOf(labels);
    if (lag.records !== undefined) this.lagRecords.set(l, lag.records);
    if (lag.bytes !== undefined) this.lagBytes.set(l, lag.bytes);
    if (lag.oldestAgeMs !== undefined) this.lagAge.set(l, lag.oldestAgeMs / 1000);
    if (lag.records === 0 || lag.bytes === 0) this.settle(labels);
  }

  /**
   * The source was polled and had nothing new: a quiet stream is healthy, so its checkpoint age
   * starts again from now rather than growing until an alert fires.
   */
  recordCaughtUp(labels: StreamLabels): void {
    this.settle(labels);
  }

  private settle(labels: StreamLabels): void {
    this.settled.set(JSON.stringify([labels.stream, labels.checkpointKey]), { labels: labelsOf(labels), at: this.now() });
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

function labelsOf(labels: StreamLabels): Labels {
  return { stream: labels.stream, checkpoint_key: labels.checkpointKey };
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
    if (req.method === "GET" && path === "/") {
      // What a person (or a probe) opening the port sees: where the metrics are.
      res.writeHead(200, { "content-type": "text/plain" }).end("LakeLogic metrics: GET /metrics (Prometheus text format)\n");
      return;
    }
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${req.method ?? "?"} ${path ?? ""}; the metrics are at GET /metrics\n`);
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
