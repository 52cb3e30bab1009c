import { mkdtempSync, rmSync } from "node:fs";
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
      expect(code, cli.stderr()).toBe(0);
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
    } finally {
      await server.close();
    }
  });
});
