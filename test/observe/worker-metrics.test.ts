import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StreamClient } from "../../src/temporal/client.js";
import type { StreamWorkflowResult } from "../../workflows/types.js";
import { freePort } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { ORDERS_CONTRACT, writeOrders } from "../temporal/support.js";
import { jsonLines, parsePrometheus, sampleValue, spawnCli } from "./support.js";

const temporal = await requireService("observe: lakelogic worker metrics", () => startTemporal());
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-worker-metrics-"));
afterAll(async () => {
  await temporal?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const complete = (s: string) => jsonLines(s.slice(0, s.lastIndexOf("\n") + 1));

describe.skipIf(!temporal)("lakelogic worker --metrics-port / --sdk-metrics-port", () => {
  it("serves the batches its activities commit, and the Temporal SDK's own metrics on their own port", async () => {
    const sdkPort = await freePort();
    const taskQueue = `observe-${process.pid}`;
    const cli = spawnCli(
      ["worker", "--address", temporal!.address, "--task-queue", taskQueue, "--metrics-port", "0", "--sdk-metrics-port", String(sdkPort), "--log-format", "json", "--shutdown-grace", "2"],
      tmp,
    );
    const streams = await StreamClient.connect({ address: temporal!.address, taskQueue });
    try {
      const url = await cli.waitForStderr((s) => complete(s).find((l) => l.msg === "serving metrics")?.fields.url as string | undefined);
      const polling = await cli.waitForStderr((s) => complete(s).find((l) => l.msg === "lakelogic worker: polling"));
      expect(polling.fields).toMatchObject({ address: temporal!.address, namespace: "default", taskQueue, workerQueue: expect.stringMatching(new RegExp(`^${taskQueue}@`)) });

      const events = join(tmp, "events.ndjson");
      writeOrders(events, 0, 1200);
      const key = "observe::worker";
      const handle = await streams.start({
        contract: ORDERS_CONTRACT,
        source: { type: "file", path: events },
        mode: "available_now",
        checkpointKey: key,
        targetPath: join(tmp, "lake"),
        checkpoint: join(tmp, "checkpoints.sqlite"),
        batchSize: 400,
        maxWaitMs: 200,
        timeouts: { idleFetchMs: 300 },
      });
      const result = (await handle.result()) as StreamWorkflowResult;
      expect(result.sourceCount).toBe(1200);

      const ours = parsePrometheus(await (await fetch(url)).text());
      const labels = { stream: key, checkpoint_key: key };
      expect(sampleValue(ours, "lakelogic_records_in_total", labels)).toBe(result.sourceCount);
      expect(sampleValue(ours, "lakelogic_records_good_total", labels)).toBe(result.goodCount);
      expect(sampleValue(ours, "lakelogic_records_bad_total", labels)).toBe(result.badCount);
      expect(sampleValue(ours, "lakelogic_batches_total", labels)).toBe(3);
      // One info line per committed batch, with the same counts.
      const logged = complete(cli.stderr()).filter((l) => l.msg === "batch committed");
      expect(logged.reduce((n, l) => n + (l.fields.records as number), 0)).toBe(result.sourceCount);
      // The worker said where the stream reads from, from which cursor, and where it writes.
      expect(complete(cli.stderr()).find((l) => l.msg === "stream started")?.fields).toEqual({
        key,
        mode: "available_now",
        source: `file ${events}`,
        cursor: "null",
        batch: 0,
        format: "duckdb",
        table: "orders",
        target: join(tmp, "lake"),
        checkpoint: join(tmp, "checkpoints.sqlite"),
      });

      const sdk = parsePrometheus(await (await fetch(`http://127.0.0.1:${sdkPort}/metrics`)).text());
      expect(sdk.some((f) => f.name.startsWith("temporal_"))).toBe(true);
      expect(sdk.some((f) => f.name.startsWith("lakelogic_"))).toBe(false);
    } finally {
      await streams.close();
      cli.child.kill("SIGTERM");
    }
    // A graceful stop on SIGTERM: said, then the worker drains and exits 128 + 15.
    const { code } = await cli.exited;
    expect(code, cli.stderr().slice(-2000)).toBe(143);
    const tail = complete(cli.stderr()).map((l) => l.msg);
    expect(tail.slice(tail.indexOf("stopping after the batch in flight"))).toEqual(["stopping after the batch in flight", "lakelogic worker: stopped"]);
    expect(complete(cli.stderr()).find((l) => l.msg === "stopping after the batch in flight")?.fields).toEqual({ signal: "SIGTERM", graceMs: 2000 });
  });
});
