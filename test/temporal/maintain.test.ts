/**
 * Scheduled lake maintenance on a real Temporal dev server with a real worker: a schedule made by
 * `lakelogic schedule create … --maintain`, triggered at once (no waiting for its cadence), runs
 * the maintenance workflow, which compacts the Delta table a stream wrote in small batches.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import { Worker } from "@temporalio/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderEvents } from "../../examples/orders.js";
import { main } from "../../src/cli/main.js";
import { loadContract } from "../../src/contract/index.js";
import type { MaintainReport } from "../../src/lake/maintain.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { StreamClient } from "../../src/temporal/client.js";
import { createLakeLogicWorker, type LakeLogicWorker } from "../../src/temporal/worker.js";
import { readDelta } from "../support/delta.js";
import { waitFor } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { ORDERS_CONTRACT, recordableHistory, workflowBundle } from "./support.js";

const temporal = await requireService("temporal: scheduled lake maintenance", () => startTemporal());
afterAll(() => temporal?.stop());

/** A maintenance workflow's history, recorded from the run below (LAKELOGIC_RECORD_HISTORIES=1), replayed on every run. */
const FIXTURE = fileURLToPath(new URL("../fixtures/histories/maintain/maintain.json", import.meta.url));

describe("the recorded maintenance history", () => {
  it("replays deterministically against the current workflow code", async () => {
    expect(readdirSync(join(FIXTURE, "..")).includes("maintain.json")).toBe(true);
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE, "utf8")));
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, "maintain");
  });
});

describe.skipIf(!temporal)("scheduled lake maintenance", () => {
  const TASK_QUEUE = "lakelogic-maintain-test";
  const dir = mkdtempSync(join(tmpdir(), "ll-maintain-"));
  let worker: LakeLogicWorker;
  let running: Promise<void>;
  let streams: StreamClient;

  beforeAll(async () => {
    worker = await createLakeLogicWorker({ address: temporal!.address, taskQueue: TASK_QUEUE, workflowBundle: await workflowBundle(), shutdownGraceTimeMs: 2000 });
    running = worker.run();
    streams = await StreamClient.connect({ address: temporal!.address, taskQueue: TASK_QUEUE });
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await streams?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = "";
    let stderr = "";
    const code = await main([...argv, "--address", temporal!.address, "--task-queue", TASK_QUEUE], {
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stderr += t),
    });
    return { code, stdout, stderr };
  }

  it("a triggered --maintain schedule runs maintenance once: the table is compacted, its rows intact", async () => {
    const contractFile = join(dir, "orders.yaml");
    writeFileSync(contractFile, readFileSync(ORDERS_CONTRACT, "utf8").replace("format: duckdb", "format: delta"));
    const targetPath = join(dir, "lake");
    const contract = await loadContract(contractFile);
    await new StreamSink(contract, new IterableSource([...orderEvents(1_000)], { replayable: true }), { targetPath, batchSize: 100 }).run("available_now");
    const rowsBefore = readDelta(join(targetPath, "orders")).rows.length;

    // Stream flags are refused with --maintain, before anything reaches the server.
    const refused = await cli("schedule", "create", "m", contractFile, "--every", "1h", "--maintain", "--batch-size", "5");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--batch-size describes a stream/);
    const badRetention = await cli("schedule", "create", "m", contractFile, "--every", "1h", "--maintain", "--retain-hours", "soon");
    expect(badRetention.code).toBe(2);
    expect(badRetention.stderr).toMatch(/--retain-hours must be a whole number of hours/);
    expect((await cli("schedule", "create", "m", contractFile, "--every", "1h", "--retain-hours", "5")).stderr).toMatch(/--retain-hours goes with schedule create --maintain/);

    const created = await cli("schedule", "create", "orders-maintain", contractFile, "--every", "1h", "--maintain", "--target-path", targetPath, "--json");
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toEqual({ schedule: "orders-maintain", everyMs: 3_600_000, overlap: "SKIP", maintain: true });
    expect((await cli("schedule", "trigger", "orders-maintain")).code).toBe(0);

    const schedule = streams.client.schedule.getHandle("orders-maintain");
    let workflowId = "";
    await waitFor(
      "the schedule's run",
      async () => {
        workflowId = (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId ?? "";
        return workflowId !== "";
      },
      60_000,
      250,
    );
    expect(workflowId).toMatch(/^lakelogic-maintain:orders-maintain/);
    const handle = streams.client.workflow.getHandle(workflowId);
    const report = (await handle.result()) as MaintainReport;
    const history = await handle.fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, workflowId);
    if (process.env.LAKELOGIC_RECORD_HISTORIES === "1") {
      mkdirSync(join(FIXTURE, ".."), { recursive: true });
      writeFileSync(FIXTURE, recordableHistory(history, dir));
    }
    expect(report).toMatchObject({ format: "delta", complete: true });
    const table = report.tables.find((t) => t.role === "table")!;
    expect(table.before.files).toBeGreaterThan(5);
    expect(table.after.files).toBe(1);
    expect(readDelta(join(targetPath, "orders")).rows).toHaveLength(rowsBefore);
    expect((await schedule.describe()).info.recentActions).toHaveLength(1);

    expect((await cli("schedule", "delete", "orders-maintain")).code).toBe(0);
  }, 300_000);
});
