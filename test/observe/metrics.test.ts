import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StreamMetrics, serveMetrics } from "../../src/observe/metrics.js";
import { StreamSink } from "../../src/sink/index.js";
import { writeOrders } from "../temporal/support.js";
import { ORDERS_CONTRACT, jsonLines, parsePrometheus, sampleValue, spawnCli, type PromFamily } from "./support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-metrics-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const KEY = { stream: "orders", checkpoint_key: "stream::orders" };

/** Complete JSON log lines so far (the last, partial one is left for later). */
function logsSoFar(stderr: string) {
  return jsonLines(stderr.slice(0, stderr.lastIndexOf("\n") + 1));
}

function committedRecords(stderr: string): number {
  return logsSoFar(stderr)
    .filter((l) => l.msg === "batch committed")
    .reduce((n, l) => n + (l.fields.records as number), 0);
}

async function scrape(url: string): Promise<PromFamily[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

describe("metrics", () => {
  it("lakelogic run --metrics-port serves Prometheus metrics during a run that add up to its summary", async () => {
    const events = join(tmp, "events.ndjson");
    writeOrders(events, 0, 1000);
    const cli = spawnCli(
      [
        "run", ORDERS_CONTRACT, "--source", JSON.stringify({ type: "file", path: events }), "--mode", "continuous",
        "--target-path", join(tmp, "lake"), "--batch-size", "300", "--max-wait-ms", "100",
        "--metrics-port", "0", "--log-format", "json", "--json",
      ],
      tmp,
    );
    try {
      const url = await cli.waitForStderr((s) => logsSoFar(s).find((l) => l.msg === "serving metrics")?.fields.url as string | undefined);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      await cli.waitForStderr((s) => (committedRecords(s) >= 1000 ? true : undefined));
      const first = await scrape(url);
      expect(sampleValue(first, "lakelogic_records_in_total", KEY)).toBe(1000);

      // Still running: more records show up in the next scrape.
      writeOrders(events, 1000, 1250, true);
      await cli.waitForStderr((s) => (committedRecords(s) >= 1250 ? true : undefined));
      const second = await scrape(url);
      cli.child.kill("SIGTERM");
      const { code } = await cli.exited;
      // Stopped gracefully by SIGTERM: 128 + 15.
      expect(code, cli.stderr()).toBe(143);
      const summary = JSON.parse(cli.stdout()) as { sourceCount: number; goodCount: number; badCount: number; supersededCount: number; batches: number; stoppedBy: string };
      expect(summary).toMatchObject({ sourceCount: 1250, stoppedBy: "signal" });

      expect(sampleValue(second, "lakelogic_records_in_total", KEY)).toBe(summary.sourceCount);
      expect(sampleValue(second, "lakelogic_records_good_total", KEY)).toBe(summary.goodCount);
      expect(sampleValue(second, "lakelogic_records_bad_total", KEY)).toBe(summary.badCount);
      expect(sampleValue(second, "lakelogic_records_superseded_total", KEY)).toBe(summary.supersededCount);
      expect(summary.goodCount + summary.badCount + summary.supersededCount).toBe(summary.sourceCount);
      expect(summary.badCount).toBeGreaterThan(0);
      expect(sampleValue(second, "lakelogic_batches_total", KEY)).toBe(summary.batches);
      expect(sampleValue(second, "lakelogic_batch_duration_seconds_count", KEY)).toBe(summary.batches);
      const types = Object.fromEntries(second.map((f) => [f.name, f.type]));
      expect(types).toMatchObject({
        lakelogic_records_in: "counter",
        lakelogic_batch_duration_seconds: "histogram",
        lakelogic_commit_lag_seconds: "gauge",
        lakelogic_checkpoint_age_seconds: "gauge",
        lakelogic_source_lag_bytes: "gauge",
      });
      // The file source caught up: nothing left beyond the committed position.
      expect(sampleValue(second, "lakelogic_source_lag_bytes", KEY)).toBe(0);
      expect(sampleValue(second, "lakelogic_checkpoint_age_seconds", KEY)).toBeGreaterThanOrEqual(0);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill("SIGKILL");
    }
  });

  it("StreamSink records into a StreamMetrics given as its metrics option (library use)", async () => {
    const metrics = new StreamMetrics();
    const server = await serveMetrics(metrics.registry, { port: 0 });
    try {
      const records = Array.from({ length: 25 }, (_, i) => ({ order_id: i, customer_id: "c1", amount: i === 3 ? -1 : 10, currency: "EUR", status: "new" }));
      const summary = await new StreamSink(ORDERS_CONTRACT, records, { checkpoint: "memory", targetPath: join(tmp, "lib-lake"), batchSize: 10, metrics }).run("available_now");
      const families = await scrape(`http://127.0.0.1:${server.port}/metrics`);
      expect(sampleValue(families, "lakelogic_records_in_total", KEY)).toBe(summary.sourceCount);
      expect(sampleValue(families, "lakelogic_records_bad_total", KEY)).toBe(summary.badCount);
      expect(sampleValue(families, "lakelogic_batches_total", KEY)).toBe(summary.batches);
      expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
      // The root answers with where the metrics are, not a 404.
      const root = await fetch(`http://127.0.0.1:${server.port}/`);
      expect(root.status).toBe(200);
      expect(await root.text()).toMatch(/GET \/metrics/);
      // The standard collectors and the build's version, parsed by the Prometheus client.
      const names = new Set(families.map((f) => f.name));
      for (const n of ["process_cpu_seconds", "process_resident_memory_bytes", "nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_seconds", "lakelogic_build_info"]) expect(names, n).toContain(n);
      const version = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;
      expect(sampleValue(families, "lakelogic_build_info", { version, nodejs_version: process.version })).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("counts each rule's failed records and each dataset rule's result per batch, as the summary does", async () => {
    // orders with a dataset rule of at most 6 good rows per batch: batches of 10 records hold 7, 8
    // and (the last, of 5) 4 good rows, so it fails twice and passes once.
    const contract = join(tmp, "orders-rules.yaml");
    writeFileSync(contract, readFileSync(ORDERS_CONTRACT, "utf8").replace("    - unique: order_id\n", "    - unique: order_id\n    - row_count_between: {max: 6}\n"));
    const metrics = new StreamMetrics({ processMetrics: false });
    const records = Array.from({ length: 25 }, (_, i) => ({ order_id: i, customer_id: "c1", amount: i % 5 === 3 ? -1 : 10, currency: "EUR", status: i === 7 ? "lost" : "paid", quantity: 1 }));
    const warnings: Array<Record<string, unknown>> = [];
    const logger = { error: () => {}, info: () => {}, debug: () => {}, enabled: () => true, warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, ...fields }) };
    const summary = await new StreamSink(contract, records, { checkpoint: "memory", targetPath: join(tmp, "rules-lake"), batchSize: 10, metrics, logger }).run("available_now");
    const families = parsePrometheus(await metrics.text());
    const rule = (r: string) => ({ ...KEY, rule: r });

    // Rows: amount <= 0 in 5 records (3, 8, 13, 18, 23), status "lost" in one; every record checked by every rule.
    const range = summary.rules.rows.find((r) => r.ruleId.startsWith("range"))!;
    const values = summary.rules.rows.find((r) => r.ruleId === "accepted_values:status")!;
    expect(range).toMatchObject({ severity: "error", failed: 5, passed: 20 });
    expect(values).toMatchObject({ failed: 1, passed: 24 });
    expect(sampleValue(families, "lakelogic_rule_failed_records_total", rule(range.ruleId))).toBe(5);
    expect(sampleValue(families, "lakelogic_rule_failed_records_total", rule("accepted_values:status"))).toBe(1);
    expect(summary.badCount).toBe(6);

    const dataset = summary.rules.dataset.find((d) => d.kind === "row_count_between")!;
    expect(dataset).toMatchObject({ failedBatches: 2, passedBatches: 1, lastObserved: 4 });
    expect(sampleValue(families, "lakelogic_dataset_rule_failed_batches_total", rule(dataset.ruleId))).toBe(2);
    expect(warnings.filter((w) => w.msg === "dataset rule failed" && w.rule === dataset.ruleId).map((w) => w.observed)).toEqual([7, 8]);
    expect(sampleValue(families, "lakelogic_dataset_rule_passed", rule(dataset.ruleId))).toBe(1);
    expect(sampleValue(families, "lakelogic_dataset_rule_observed", rule(dataset.ruleId))).toBe(4);
    // The unique rule passed every batch.
    expect(summary.rules.dataset.find((d) => d.kind === "unique")).toMatchObject({ failedBatches: 0, passedBatches: 3 });
  });

  it("does not age a quiet stream: the checkpoint age restarts when the source is known caught up", async () => {
    let clock = 1_000_000;
    const metrics = new StreamMetrics({ now: () => clock, processMetrics: false });
    const labels = { stream: "orders", checkpointKey: "stream::orders" };
    const age = async () => sampleValue(parsePrometheus(await metrics.text()), "lakelogic_checkpoint_age_seconds", KEY);
    metrics.recordBatch(labels, { sourceCount: 10, goodCount: 10, badCount: 0, supersededCount: 0, lag: { records: 5 } });
    clock += 60_000;
    // Records pending and no commit for a minute: the age says so.
    expect(await age()).toBe(60);
    metrics.recordLag(labels, { records: 0 });
    clock += 30_000;
    // Caught up 30 s ago and quiet since: 30, not 90.
    expect(await age()).toBe(30);
    metrics.recordCaughtUp(labels);
    expect(await age()).toBe(0);
  });
});
