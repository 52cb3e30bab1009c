import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Connection } from "@temporalio/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBadOrder } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { FileSource } from "../../src/sources/file/source.js";
import { StreamAlreadyRunningError, StreamClient, StreamFailedError } from "../../src/temporal/client.js";
import { main } from "../../src/cli/main.js";
import { createLakeLogicWorker, type LakeLogicWorker } from "../../src/temporal/worker.js";
import type { FetchBatchResult, StreamStatus, StreamWorkflowInput, StreamWorkflowResult, WriteBatchesResult } from "../../workflows/types.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { waitFor } from "../support/proc.js";
import { ORDERS_CONTRACT, workflowBundle, writeOrders } from "./support.js";

/** Bytes of the largest payload anywhere in a history. */
function largestPayload(node: unknown): number {
  if (node instanceof Uint8Array) return node.byteLength;
  if (!node || typeof node !== "object") return 0;
  let max = 0;
  for (const v of Object.values(node)) max = Math.max(max, largestPayload(v));
  return max;
}

/**
 * The stream workflow on a real Temporal dev server with a real worker: every path the
 * workflow has (drain, continuous with continue-as-new, pause/resume, stop, an activity retry,
 * a duplicate start), checked by counting rows in the lake.
 */
const temporal = await requireService("temporal: stream workflow", () => startTemporal());
afterAll(() => temporal?.stop());

describe.skipIf(!temporal)("stream workflow on a Temporal dev server", () => {
  const dirs: string[] = [];
  let worker: LakeLogicWorker;
  let running: Promise<void>;
  let streams: StreamClient;
  let client: Client;
  let connection: Connection;

  beforeAll(async () => {
    worker = await createLakeLogicWorker({ address: temporal!.address, workflowBundle: await workflowBundle(), shutdownGraceTimeMs: 2000 });
    running = worker.run();
    streams = await StreamClient.connect({ address: temporal!.address });
    connection = await Connection.connect({ address: temporal!.address });
    client = new Client({ connection });
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await streams?.close();
    await connection?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  function stream(name: string, records: number): { dir: string; events: string; input: StreamWorkflowInput } {
    const dir = mkdtempSync(join(tmpdir(), `ll-wf-${name}-`));
    dirs.push(dir);
    const events = join(dir, "events.ndjson");
    if (records >= 0) writeOrders(events, 0, records);
    return {
      dir,
      events,
      input: {
        contract: ORDERS_CONTRACT,
        source: { type: "file", path: events },
        mode: "available_now",
        checkpointKey: `test::${name}`,
        targetPath: join(dir, "lake"),
        checkpoint: join(dir, "checkpoints.sqlite"),
        batchSize: 500,
        maxWaitMs: 200,
        timeouts: { idleFetchMs: 300 },
      },
    };
  }

  /** The lake holds exactly records [0, records): each good one once, each bad one once in quarantine. */
  async function expectExactLake(dir: string, records: number) {
    const contract = await loadContract(ORDERS_CONTRACT);
    const good = await readTable(contract, { targetPath: join(dir, "lake") });
    const bad = await readQuarantine(contract, { targetPath: join(dir, "lake") });
    let expectedBad = 0;
    for (let i = 0; i < records; i++) if (isBadOrder(i)) expectedBad++;
    const ids = good.map((r) => Number(r.order_id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(records - expectedBad);
    expect(Math.max(-1, ...ids)).toBeLessThan(records);
    expect(new Set(bad.map((b) => JSON.stringify(b.position))).size).toBe(bad.length);
    expect(bad.length).toBe(expectedBad);
  }

  /** The committed cursor (status and checkpoint store agree) as a line count. */
  async function committedLine(s: { input: StreamWorkflowInput }, status?: StreamStatus): Promise<number> {
    const store = new SQLiteCheckpointStore(s.input.checkpoint!);
    const rec = await store.load(s.input.checkpointKey!);
    await store.close();
    if (status) expect(status.cursor).toEqual(rec?.cursor);
    return (rec?.cursor as { line: number }).line;
  }

  it("drains available_now to the end snapshot, batch by batch, with rows never in history", async () => {
    const s = stream("drain", 3000);
    const handle = await streams.start(s.input);
    const result = (await handle.result()) as StreamWorkflowResult;
    expect(result).toMatchObject({ sourceCount: 3000, stoppedBy: "end" });
    expect(result.goodCount + result.badCount).toBe(3000);
    expect(result.cursor).toMatchObject({ line: 3000 });
    await expectExactLake(s.dir, 3000);
    // Every record was checked by each declared rule; the bad ones failed at least one.
    const orderId = result.rules.rows.find((r) => r.ruleId === "not_null:order_id")!;
    expect(orderId.failed + orderId.passed).toBe(3000);
    const failedErrors = result.rules.rows.filter((r) => r.severity === "error").reduce((n, r) => n + r.failed, 0);
    expect(failedErrors).toBeGreaterThanOrEqual(result.badCount);
    expect(result.rules.dataset.find((d) => d.kind === "unique")).toMatchObject({ passedBatches: result.batches, failedBatches: 0 });

    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const types = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
    // fetchBatch through the worker's own queue; writeBatches (which validates) as a local activity
    // (one marker per fetch). A fetch hands over its first batch plus those the worker read ahead
    // meanwhile, so one round trip serves several batches, and every batch is written on its own.
    // After a fetch that left the worker reading ahead, the next is first tried as a local activity
    // (takeReadAhead), which hands over what the worker holds, or null (then the fetch goes
    // through the server).
    const decode = (d: Uint8Array) => JSON.parse(new TextDecoder().decode(d)) as unknown;
    const remoteFetches = events
      .map((e) => e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data)
      .filter((d): d is Uint8Array => d instanceof Uint8Array)
      .map((d) => decode(d) as FetchBatchResult)
      .filter((r) => "spool" in r);
    expect(remoteFetches.length).toBe(types.filter((t) => t === "fetchBatch").length);
    const markers = events
      .map((e) => e.markerRecordedEventAttributes)
      .filter((m) => m?.markerName === "core_local_activity")
      .map((m) => ({
        type: (decode(m!.details!.data!.payloads![0]!.data!) as { activity_type: string }).activity_type,
        result: m!.details!.result?.payloads?.[0]?.data,
      }));
    const localFetches = markers
      .filter((m) => m.type === "takeReadAhead")
      .map((m) => decode(m.result!) as FetchBatchResult | null)
      .filter((r): r is FetchBatchResult => r !== null);
    const fetches = [...remoteFetches, ...localFetches];
    expect(fetches.reduce((n, f) => n + (f.count > 0 ? 1 : 0) + (f.more?.length ?? 0), 0)).toBe(result.batches);
    expect(remoteFetches.length).toBeLessThan(result.batches);
    expect(Math.max(...fetches.map((f) => f.more?.length ?? 0))).toBeLessThanOrEqual(3); // batchesPerFetch 4
    expect(markers[0]!.type).toBe("getWorkerQueue");
    // One writeBatches per fetch writes every batch it handed over, each committed on its own.
    const writes = markers.filter((m) => m.type === "writeBatches").map((m) => (decode(m.result!) as WriteBatchesResult).written);
    expect(writes.length).toBe(fetches.filter((f) => f.count > 0 || f.cursorMoved).length);
    expect(writes.flat().map((w) => w.batchId)).toEqual(Array.from({ length: result.batches }, (_, i) => i + 1));
    expect(markers.slice(1).filter((m) => m.type !== "writeBatches" && m.type !== "takeReadAhead")).toEqual([]);
    expect(events.length / result.batches).toBeLessThanOrEqual(12);
    // I4: no payload in history carries rows — the largest is the input, a cursor or a spool reference.
    expect(largestPayload(history)).toBeLessThan(4000);
  });

  it("takes turns with StreamSink on one checkpoint: each starts where the other committed", async () => {
    const s = stream("turns", 2000);
    const sink = new StreamSink(ORDERS_CONTRACT, new FileSource(s.events), {
      checkpoint: s.input.checkpoint,
      checkpointKey: s.input.checkpointKey,
      targetPath: s.input.targetPath,
      batchSize: 500,
    });
    const first = await sink.run("available_now", { maxBatches: 2 });
    expect(first.sourceCount).toBe(1000);
    const result = (await (await streams.start(s.input)).result()) as StreamWorkflowResult;
    expect(result.resumedFrom).toMatchObject({ line: 1000 });
    expect(result.sourceCount).toBe(1000);
    await expectExactLake(s.dir, 2000);
  });

  it("refuses a second start of the same stream (one writer per key)", async () => {
    const s = stream("dup", 100);
    await streams.start({ ...s.input, mode: "continuous" });
    await expect(streams.start({ ...s.input, mode: "continuous" })).rejects.toBeInstanceOf(StreamAlreadyRunningError);
    await streams.signal(s.input.checkpointKey!, "stop");
    await streams.result(s.input.checkpointKey!);
  });

  it("runs continuous with continue-as-new, pauses, resumes, and stops gracefully", async () => {
    const s = stream("continuous", 1000);
    const key = s.input.checkpointKey!;
    const handle = await streams.start({ ...s.input, mode: "continuous", continueAsNewEvery: 2 });
    const firstRunId = handle.firstExecutionRunId;
    await waitFor("first 1000 records", async () => (await streams.status(key)).sourceCount === 1000, 60_000);

    await streams.signal(key, "pause");
    await waitFor("paused", async () => (await streams.status(key)).state === "paused", 30_000);
    const pausedAt = (await streams.status(key)).batchId;
    writeOrders(s.events, 1000, 1500, true);
    // While paused nothing is fetched: give it several idle periods, then look again.
    await new Promise((r) => setTimeout(r, 1500));
    const stillPaused: StreamStatus = await streams.status(key);
    expect(stillPaused.state).toBe("paused");
    expect(stillPaused.batchId).toBe(pausedAt);

    const listed = await streams.list();
    expect(listed.find((l) => l.key === key)).toBeDefined();

    await streams.signal(key, "resume");
    await waitFor("all 1500 records", async () => (await streams.status(key)).sourceCount === 1500, 60_000);
    const status = await streams.status(key);
    expect(status.rules.rows.find((r) => r.ruleId === "not_null:order_id")).toMatchObject({ failed: 0, passed: 1500 });
    await streams.signal(key, "stop");
    const result = await streams.result(key);
    expect(result.stoppedBy).toBe("stop");
    expect(result.totals.sourceCount).toBe(1500);
    await expectExactLake(s.dir, 1500);
    // The rule results are carried over continue-as-new: every record counted once by each rule.
    const orderId = result.rules.rows.find((r) => r.ruleId === "not_null:order_id")!;
    expect(orderId.failed + orderId.passed).toBe(1500);

    // continue-as-new happened: the run that finished is not the first one.
    const described = await client.workflow.getHandle(`lakelogic:${key}`).describe();
    expect(described.runId).not.toBe(firstRunId);
  });

  it("loses and repeats nothing when a pause or stop lands while the worker reads the next batch ahead", async () => {
    // Each fetch of a running stream lets the worker collect the next batch ahead. A pause or
    // stop that arrives meanwhile leaves that batch unused on the worker: nothing of it may be
    // written, the cursor stays after the last committed batch, and whoever continues (the
    // resumed loop, or a new run of the stream on the same worker) reads on from that cursor.
    const RECORDS = 40_000;
    const s = stream("readahead", RECORDS);
    const key = s.input.checkpointKey!;
    const input: StreamWorkflowInput = { ...s.input, mode: "continuous", batchSize: 500 };
    await streams.start(input);
    await waitFor("a few batches", async () => (await streams.status(key)).batchId >= 4, 60_000, 20);

    await streams.signal(key, "pause");
    await waitFor("paused", async () => (await streams.status(key)).state === "paused", 30_000, 20);
    const paused = await streams.status(key);
    const pausedAt = await committedLine(s, paused);
    expect(pausedAt).toBe(paused.sourceCount);
    expect(pausedAt).toBeLessThan(RECORDS);
    await expectExactLake(s.dir, pausedAt);
    // The fetch before the pause was told the loop would go on: the next batch is held ahead.
    expect(worker.runtime.hasReadAhead(key)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect((await streams.status(key)).batchId).toBe(paused.batchId);

    await streams.signal(key, "resume");
    await waitFor("more batches", async () => (await streams.status(key)).batchId >= paused.batchId + 3, 60_000, 20);
    await streams.signal(key, "stop");
    const stopped = await streams.result(key);
    expect(stopped.stoppedBy).toBe("stop");
    const stoppedAt = await committedLine(s);
    expect(stopped.cursor).toMatchObject({ line: stoppedAt });
    expect(stoppedAt).toBe(stopped.totals.sourceCount);
    expect(stoppedAt).toBeLessThan(RECORDS);
    await expectExactLake(s.dir, stoppedAt);
    expect(worker.runtime.hasReadAhead(key)).toBe(true);

    // A new run of the stream on the same worker, which still holds the batch it read ahead
    // before the stop: the run starts from the committed cursor, where that batch begins.
    await streams.start(input);
    await waitFor("the rest", async () => (await streams.status(key)).sourceCount === RECORDS, 120_000, 50);
    await streams.signal(key, "stop");
    const rest = await streams.result(key);
    expect(rest.resumedFrom).toMatchObject({ line: stoppedAt });
    expect(rest.cursor).toMatchObject({ line: RECORDS });
    expect(rest.sourceCount).toBe(RECORDS - stoppedAt);
    await expectExactLake(s.dir, RECORDS);
  });

  it("retries a failed activity and loses nothing (the source file appears after the first attempt)", async () => {
    const s = stream("retry", -1);
    const handle = await streams.start(s.input);
    // Let the first fetch fail on the missing file, then create it for the retry.
    await waitFor(
      "a failed fetch attempt",
      async () => ((await handle.describe()).raw.pendingActivities ?? []).some((a) => a.lastFailure),
      30_000,
      50,
    );
    writeOrders(s.events, 0, 800);
    const result = (await handle.result()) as StreamWorkflowResult;
    expect(result.sourceCount).toBe(800);
    await expectExactLake(s.dir, 800);
    const history = await handle.fetchHistory();
    const retried = (history.events ?? []).some((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
    expect(retried).toBe(true);
  });

  it("mirrors every commit to the checkpoint store", async () => {
    const s = stream("mirror", 1200);
    const result = (await (await streams.start(s.input)).result()) as StreamWorkflowResult;
    const store = new SQLiteCheckpointStore(s.input.checkpoint!);
    const rec = await store.load(s.input.checkpointKey!);
    await store.close();
    expect(rec?.cursor).toEqual(result.cursor);
    expect(rec?.writerId).toBe(`temporal:lakelogic:${s.input.checkpointKey}`);
    expect(rec?.totals.sourceCount).toBe(1200);
  });

  it("reports contract errors without retrying them", async () => {
    const s = stream("badcontract", 10);
    const broken = join(s.dir, "broken.yaml");
    writeFileSync(broken, "dataset: x\nmodel:\n  fields:\n    - {name: a, type: nonsense}\n");
    const handle = await streams.start({ ...s.input, contract: broken });
    await expect(handle.result()).rejects.toThrow();
    const history = await handle.fetchHistory();
    const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 1);
    expect(Math.max(...attempts)).toBe(1);
  });

  it("says why a stream failed: its result, its status and the CLI give the cause, not the SDK's wrapper", async () => {
    const s = stream("failed", 10);
    const broken = join(s.dir, "broken.yaml");
    writeFileSync(broken, "dataset: x\nmodel:\n  fields:\n    - {name: a, type: nonsense}\n");
    await streams.start({ ...s.input, contract: broken });
    const key = s.input.checkpointKey!;
    const failed = await streams.result(key).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StreamFailedError);
    expect((failed as Error).message).toMatch(/^stream workflow lakelogic:test::failed failed: ContractError: .*broken\.yaml.*nonsense/s);
    const status = await streams.status(key).catch((e: unknown) => e);
    expect(status).toBeInstanceOf(StreamFailedError);
    expect((status as Error).message).toMatch(/lakelogic:test::failed failed: ContractError: .*nonsense/s);

    let stderr = "";
    const code = await main(["status", key, "--address", temporal!.address], { stdout: () => undefined, stderr: (t) => void (stderr += t) });
    expect(code).toBe(1);
    expect(stderr).toMatch(/failed: ContractError: .*nonsense/s);
    expect(stderr).not.toMatch(/internal error|QueryNotRegistered|WorkflowFailedError/);
  });
});
