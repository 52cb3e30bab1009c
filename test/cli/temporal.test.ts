import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { delay, stopProcess, waitFor } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { writeOrders } from "../temporal/support.js";

/**
 * The Temporal commands of the real `lakelogic` binary against a real dev server:
 * worker, start, status, pause, resume, stop, schedule create / trigger / delete.
 */
const temporal = await requireService("cli: temporal commands", () => startTemporal());
afterAll(() => temporal?.stop());

const REPO = resolve(".");
const BIN = join(REPO, "bin", "lakelogic.js");
const CONTRACT = join(REPO, "examples", "orders.yaml");
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-cli-temporal-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [BIN, ...args, "--address", temporal!.address], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

async function json<T>(...args: string[]): Promise<T> {
  const r = await cli(...args, "--json");
  if (r.code !== 0) throw new Error(`lakelogic ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

describe.skipIf(!temporal)("lakelogic worker / start / status / pause / resume / stop / schedule", () => {
  it("runs a continuous stream end to end from the command line", async () => {
    const worker: ChildProcess = spawn(process.execPath, [BIN, "worker", "--address", temporal!.address, "--shutdown-grace", "5"], {
      cwd: tmp,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let workerLog = "";
    worker.stderr!.on("data", (d: Buffer) => (workerLog += d.toString()));
    try {
      await waitFor("worker polling", async () => workerLog.includes("polling"), 120_000, 200);
      const events = join(tmp, "events.ndjson");
      writeOrders(events, 0, 1000);
      const common = ["--source", JSON.stringify({ type: "file", path: events }), "--target-path", "lake", "--checkpoint", "ck.sqlite"];

      const started = await json<{ workflowId: string; checkpointKey: string }>("start", CONTRACT, "--mode", "continuous", "--batch-size", "250", ...common);
      expect(started).toMatchObject({ workflowId: "lakelogic:stream::orders", checkpointKey: "stream::orders" });

      const again = await cli("start", CONTRACT, "--mode", "continuous", ...common);
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/already running: one writer per checkpoint key/);

      await waitFor("1000 records", async () => (await json<{ sourceCount: number }>("status", "stream::orders")).sourceCount === 1000, 60_000);
      const listed = await json<Array<{ key: string; state: string }>>("status");
      expect(listed.map((l) => l.key)).toContain("stream::orders");
      // Without --json: text for people, one field per line.
      const text = await cli("status", "stream::orders");
      expect(text.stdout).not.toMatch(/^\s*[{[]/);
      expect(text.stdout).toMatch(/^state\s+running$/m);

      await json("pause", "stream::orders");
      await waitFor("paused", async () => (await json<{ state: string }>("status", "stream::orders")).state === "paused", 60_000);
      await json("resume", "stream::orders");
      writeOrders(events, 1000, 1200, true);
      await waitFor("1200 records", async () => (await json<{ sourceCount: number }>("status", "stream::orders")).sourceCount === 1200, 60_000);
      await json("stop", "stream::orders");
      await waitFor("completed", async () => (await json<{ state: string }>("status", "stream::orders").catch(() => ({ state: "gone" }))).state === "completed", 60_000);

      // A schedule of available_now drains: create, trigger once, see the drain, delete.
      writeOrders(events, 1200, 1300, true);
      const created = await json<{ schedule: string; overlap: string }>("schedule", "create", "orders-drain", CONTRACT, "--every", "1h", ...common);
      expect(created).toMatchObject({ schedule: "orders-drain", overlap: "SKIP" });
      await json("schedule", "trigger", "orders-drain");
      await waitFor(
        "scheduled drain committed",
        async () => {
          const { SQLiteCheckpointStore } = await import("../../src/checkpoint/sqlite.js");
          const store = new SQLiteCheckpointStore(join(tmp, "ck.sqlite"));
          const rec = await store.load("stream::orders");
          await store.close();
          return rec?.totals.sourceCount === 1300;
        },
        60_000,
        250,
      );
      expect((await json<{ deleted: boolean }>("schedule", "delete", "orders-drain")).deleted).toBe(true);
      const bad = await cli("schedule", "create", "x", CONTRACT, "--every", "soon", ...common);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--every: "soon" is not a duration/);
    } finally {
      await stopProcess(worker, 10_000);
      await delay(100);
    }
  }, 300_000);
});
