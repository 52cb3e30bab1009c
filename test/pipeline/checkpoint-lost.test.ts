import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { orderEvents } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { isRetriable } from "../../src/errors.js";
import { readTable } from "../../src/lake/index.js";
import { CheckpointLostError } from "../../src/pipeline/errors.js";
import { StreamRunError, StreamSink, type StreamSinkOptions } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import type { StreamSpec } from "../../workflows/types.js";
import { writeFetched, writeOrders } from "../temporal/support.js";
import { MemoryQueue } from "../support/memory-queue.js";
import { main } from "../../src/cli/main.js";
import { openLake } from "../../src/lake/index.js";
import { cursorDigest } from "../../src/lake/commit-log.js";

/**
 * A checkpoint store that lost a stream's record (file deleted, truncated, restored from an old
 * copy) while the lake holds the stream's batches: the stream must not silently start over.
 */
const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ll-lost-"));
  dirs.push(d);
  return d;
}
afterEach(() => vi.restoreAllMocks());

const checkpointFile = (target: string) => join(target, "_lakelogic", "checkpoints.sqlite");

function removeCheckpoint(target: string): void {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(checkpointFile(target) + suffix, { force: true });
}

function truncateCheckpoint(target: string): void {
  for (const suffix of ["-wal", "-shm", "-journal"]) rmSync(checkpointFile(target) + suffix, { force: true });
  writeFileSync(checkpointFile(target), "");
}

async function variant(format: "duckdb" | "parquet"): Promise<Contract> {
  const c = await loadContract(CONTRACT);
  return { ...c, materialization: { ...c.materialization, format, strategy: "append" } };
}

function sink(contract: Contract, target: string, options: StreamSinkOptions = {}): StreamSink {
  return new StreamSink(contract, new IterableSource(() => orderEvents(3000), { replayable: true }), {
    targetPath: target,
    batchSize: 1000,
    ...options,
  });
}

async function failure(run: Promise<unknown>): Promise<StreamRunError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StreamRunError);
  return err as StreamRunError;
}

describe.each(["duckdb", "parquet"] as const)("a lost SQLite checkpoint, %s append target", (format) => {
  it.each([
    ["deleted", removeCheckpoint],
    ["truncated", truncateCheckpoint],
  ] as const)("refuses to start over when the checkpoint file is %s, naming the reset", async (_how, lose) => {
    const contract = await variant(format);
    const target = tempDir();
    const first = await sink(contract, target).run("available_now");
    expect(first).toMatchObject({ sourceCount: 3000 });
    // Three batches of records, and one that moves the cursor to the iterable's end.
    const n = first.batches;
    expect(n).toBe(4);
    const rows = (await readTable(contract, { targetPath: target })).length;
    expect(existsSync(checkpointFile(target))).toBe(true);
    lose(target);

    const err = await failure(sink(contract, target).run("available_now"));
    expect(err.cause).toBeInstanceOf(CheckpointLostError);
    const lost = err.cause as CheckpointLostError;
    expect(lost).toMatchObject({ code: "CHECKPOINT_LOST", retriable: false, key: "stream::orders", lakeBatchId: n, storedBatchId: undefined });
    expect(isRetriable(lost)).toBe(false);
    expect(lost.message).toMatch(/"stream::orders"/);
    expect(lost.message).toMatch(/has no checkpoint for this stream/);
    expect(lost.message).toContain(`holds batch ${n} `);
    expect(lost.message).toMatch(/resetCheckpoint: true/);
    expect(err.summary).toMatchObject({ batches: 0, sourceCount: 0 });
    // Nothing was written again.
    expect((await readTable(contract, { targetPath: target })).length).toBe(rows);
  });

  it("starts over with resetCheckpoint, says so, and resumes normally afterwards", async () => {
    const contract = await variant(format);
    const target = tempDir();
    const n = (await sink(contract, target).run("available_now")).batches;
    const rows = (await readTable(contract, { targetPath: target })).length;
    removeCheckpoint(target);

    const warnings: string[] = [];
    vi.spyOn(process, "emitWarning").mockImplementation((w: string | Error) => void warnings.push(String(w)));
    const again = await sink(contract, target, { resetCheckpoint: true }).run("available_now");
    expect(again).toMatchObject({ resumedFrom: null, batches: n, sourceCount: 3000 });
    expect(again.totals.sourceCount).toBe(3000);
    expect(warnings.some((w) => /stream::orders/.test(w) && /starting over/.test(w) && w.includes(`batch ${n} `))).toBe(true);
    // Append: written twice, as asked.
    expect((await readTable(contract, { targetPath: target })).length).toBe(2 * rows);

    // The lake's log follows the reset: the next run resumes without the option.
    const next = await sink(contract, target).run("available_now");
    expect(next).toMatchObject({ batches: 0, sourceCount: 0, resumedFrom: { offset: 3000 } });
  });

  it("refuses a checkpoint restored from an older copy, naming both batch ids", async () => {
    const contract = await variant(format);
    const target = tempDir();
    await sink(contract, target).run("available_now", { maxBatches: 1 });
    const saved = tempDir();
    const files = ["", "-wal", "-shm"].filter((x) => existsSync(checkpointFile(target) + x));
    for (const x of files) copyFileSync(checkpointFile(target) + x, join(saved, `ckpt${x}`));
    const n = (await sink(contract, target).run("available_now")).batches + 1;
    removeCheckpoint(target);
    for (const x of files) copyFileSync(join(saved, `ckpt${x}`), checkpointFile(target) + x);

    const err = await failure(sink(contract, target).run("available_now"));
    expect(err.cause).toMatchObject({ code: "CHECKPOINT_LOST", lakeBatchId: n, storedBatchId: 1 });
    expect((err.cause as Error).message).toMatch(/says batch 1 was committed last/);
    expect((err.cause as Error).message).toContain(`holds batch ${n} `);
  });

  it("resumes normally, including after a batch written but not committed", async () => {
    const contract = await variant(format);
    const target = tempDir();
    expect(await sink(contract, target).run("available_now", { maxBatches: 1 })).toMatchObject({ batches: 1 });
    const crash = sink(contract, target, {
      hooks: {
        afterWrite: (batchId) => {
          if (batchId === 2) throw new Error("crash between write and commit");
        },
      },
    });
    await failure(crash.run("available_now"));
    // The lake holds batch 2, the store batch 1: a replay of one batch, not a lost checkpoint.
    const rest = await sink(contract, target).run("available_now");
    expect(rest).toMatchObject({ sourceCount: 2000, resumedFrom: { offset: 1000 } });
  });
});

describe("what the lake logs", () => {
  it.each(["duckdb", "parquet"] as const)("%s: lastCommit names the stream's newest batch and its cursor", async (format) => {
    const contract = await variant(format);
    const target = tempDir();
    const summary = await sink(contract, target).run("available_now", { maxBatches: 2 });
    const lake = await openLake(contract, { targetPath: target });
    try {
      expect(await lake.lastCommit!("stream::orders")).toEqual({ batchId: 2, cursorDigest: cursorDigest(summary.cursor) });
      expect(await lake.lastCommit!("stream::other")).toBeUndefined();
    } finally {
      await lake.close();
    }
  });

  it("a queue's stream is not held to it: its position is its acknowledgements", async () => {
    const contract = await variant("duckdb");
    const target = tempDir();
    const messages = [...orderEvents(300)];
    const options: StreamSinkOptions = { targetPath: target, checkpoint: "memory", batchSize: 100, maxWaitMs: 50 };
    expect(await new StreamSink(contract, new MemoryQueue(messages.slice(0, 200)), options).run("available_now")).toMatchObject({ sourceCount: 200 });
    // A fresh (memory) checkpoint each run: the next messages are new ones, nothing replays.
    expect(await new StreamSink(contract, new MemoryQueue(messages.slice(200)), options).run("available_now")).toMatchObject({ sourceCount: 100 });
  });
});

describe("lakelogic run", () => {
  it("fails on a lost checkpoint naming --reset-checkpoint, and starts over with it", async () => {
    const dir = tempDir();
    const events = join(dir, "events.ndjson");
    writeOrders(events, 0, 1500);
    const target = join(dir, "lake");
    const args = ["run", CONTRACT, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", target, "--batch-size", "500", "--json"];
    const cli = async (...extra: string[]) => {
      let stdout = "";
      let stderr = "";
      const code = await main([...args, ...extra], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
      return { code, stdout, stderr };
    };
    expect((await cli()).code).toBe(0);
    removeCheckpoint(target);
    const refused = await cli();
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--reset-checkpoint/);
    vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    const reset = await cli("--reset-checkpoint");
    expect(reset.code).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ resumedFrom: null, sourceCount: 1500 });
  });
});

describe("checkpoint kept in the lake", () => {
  it('"target" runs and resumes as before', async () => {
    const contract = await variant("duckdb");
    const target = tempDir();
    expect(await sink(contract, target, { checkpoint: "target" }).run("available_now", { maxBatches: 2 })).toMatchObject({ batches: 2 });
    const rest = await sink(contract, target, { checkpoint: "target" }).run("available_now");
    expect(rest).toMatchObject({ sourceCount: 1000, resumedFrom: { offset: 2000 } });
    expect(rest.totals.sourceCount).toBe(3000);
  });
});

describe("Temporal runtime: openStream", () => {
  it("refuses a stream whose SQLite checkpoint was deleted while the lake holds its batches", async () => {
    const dir = tempDir();
    const events = join(dir, "events.ndjson");
    writeOrders(events, 0, 2500);
    const spec: StreamSpec = {
      contract: CONTRACT,
      source: { type: "file", path: events },
      mode: "available_now",
      checkpointKey: "k",
      batchSize: 1000,
      maxWaitMs: 120_000,
      targetPath: join(dir, "lake"),
    };
    const runtime = new StreamRuntime();
    let held = 0;
    try {
      const open = await runtime.openStream(spec);
      let previous = { cursor: open.cursor, batchId: open.batchId, totals: open.totals };
      let endCursor: string | null | undefined;
      for (let i = 0; i < 10; i++) {
        const input = { spec, key: "k", cursor: previous.cursor, batchId: previous.batchId, endCursor, idleMs: 120_000 };
        const r = await runtime.fetchBatch(input, new AbortController().signal);
        if (r.endCursor !== undefined) endCursor = r.endCursor;
        if (r.count > 0 || r.cursorMoved) {
          const w = await writeFetched(runtime, { spec, key: "k", writerId: "w", previous }, r);
          previous = { cursor: r.cursor, batchId: w.batchId, totals: w.totals };
        }
        if (r.exhausted) break;
      }
      held = previous.batchId;
      expect(held).toBeGreaterThanOrEqual(3);
      // Reopening with the checkpoint in place resumes where it stands.
      expect(await runtime.openStream(spec)).toMatchObject({ batchId: held });
    } finally {
      await runtime.close();
    }
    removeCheckpoint(join(dir, "lake"));
    const fresh = new StreamRuntime();
    try {
      const err = await fresh.openStream(spec).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CheckpointLostError);
      expect(err).toMatchObject({ key: "k", lakeBatchId: held, storedBatchId: undefined });
      expect((err as Error).message).toMatch(/"k".*has no checkpoint.*holds batch \d+ .*resetCheckpoint/s);
      // A workflow started with resetCheckpoint starts over on purpose.
      expect(await fresh.openStream({ ...spec, resetCheckpoint: true })).toMatchObject({ batchId: 0, cursor: null });
    } finally {
      await fresh.close();
    }
  });
});
