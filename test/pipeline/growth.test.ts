/**
 * Batches that grow under a backlog, through StreamSink and a real file (and a keyset-paged
 * source over an array): the sizes each batch
 * report says (`sourceCount`) and the bytes its cursor moved over. No timing is asserted: the
 * drains set `maxWaitMs` out of reach, and the continuous case only needs its head to be noticed.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import { FileSource, type FileCursor } from "../../src/sources/file/source.js";
import { WatermarkChunkSource } from "../../src/sources/watermark/source.js";
import type { StreamOverrides } from "../../src/pipeline/settings.js";

const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ll-growth-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let runs = 0;

const lines = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => JSON.stringify(orderEvent(from + i)) + "\n").join("");

/** Drain `count` order events from a file with these options; each batch's size, bytes and cut. */
async function drain(count: number, options: StreamOverrides) {
  const run = join(dir, `run-${++runs}`);
  const path = join(dir, `events-${runs}.ndjson`);
  writeFileSync(path, lines(0, count));
  const batches: BatchReport[] = [];
  const summary = await new StreamSink(contractPath, new FileSource(path), {
    targetPath: join(run, "lake"),
    checkpoint: join(run, "ck.sqlite"),
    maxWaitMs: 600_000,
    ...options,
    onBatch: (b) => void batches.push(b),
  }).run("available_now");
  let offset = 0;
  const sized = batches.map((b) => {
    const end = (b.cursor as FileCursor).offset;
    const bytes = end - offset;
    offset = end;
    expect(b.bytes).toBe(bytes); // the report's bytes: the lines' (with their newlines)
    return { records: b.sourceCount, bytes, cut: b.cut };
  });
  return { summary, sized, lake: join(run, "lake") };
}

async function expectAllOnce(lake: string, count: number): Promise<void> {
  const contract = await loadContract(contractPath);
  const ids = (await readTable(contract, { targetPath: lake })).map((r) => Number(r["order_id"]));
  const bad = await readQuarantine(contract, { targetPath: lake });
  const wantGood = Array.from({ length: count }, (_, i) => i).filter((i) => !isBadOrder(i));
  expect(ids.sort((a, b) => a - b)).toEqual(wantGood);
  expect(bad).toHaveLength(count - wantGood.length);
}

describe("batch sizes under a backlog (keyset-paged source)", () => {
  it("double while the pages come back full, with a drain's end snapshot", async () => {
    const rows: Array<Record<string, unknown> & { order_id: number }> = Array.from({ length: 20_000 }, (_, i) => ({ ...orderEvent(i) }));
    // The Python form over an array ordered by order_id: the rows after `after`, `limit` of them.
    const fetchChunk = async (after: unknown, limit: number) => rows.filter((r) => after === undefined || r.order_id > (after as number)).slice(0, limit);
    const source = new WatermarkChunkSource(fetchChunk, { watermarkField: "order_id", chunkSize: 1000, fetchMax: async () => rows.at(-1)!.order_id });
    const run = join(dir, "keyset");
    const batches: BatchReport[] = [];
    const summary = await new StreamSink(contractPath, source, {
      targetPath: join(run, "lake"),
      checkpoint: join(run, "ck.sqlite"),
      maxWaitMs: 600_000,
      onBatch: (b) => void batches.push(b),
    }).run("available_now");
    expect(batches.map((b) => b.sourceCount)).toEqual([1000, 2000, 4000, 8000, 5000]);
    expect(summary.sourceCount).toBe(20_000);
    await expectAllOnce(join(run, "lake"), 20_000);
  });
});

describe("batch sizes under a backlog (file source)", () => {
  it("double while the file holds another base batch after the one cut, from the default 1000", async () => {
    const { summary, sized, lake } = await drain(20_000, {});
    expect(sized.map((b) => b.records)).toEqual([1000, 2000, 4000, 8000, 5000]);
    expect(sized.map((b) => b.cut)).toEqual(["records", "records", "records", "records", "end"]);
    expect(summary.sourceCount).toBe(20_000);
    await expectAllOnce(lake, 20_000);
  });

  it("never exceed a batchSize the user set", async () => {
    const { summary, sized } = await drain(10_000, { batchSize: 3000 });
    expect(sized.map((b) => b.records)).toEqual([3000, 3000, 3000, 1000]);
    expect(summary.sourceCount).toBe(10_000);
  });

  it("keep every batch's bytes within maxBatchBytes while they grow", async () => {
    const budget = 1_000_000; // about 5,600 order events
    const { summary, sized, lake } = await drain(30_000, { maxBatchBytes: budget });
    for (const b of sized) expect(b.bytes).toBeLessThanOrEqual(budget);
    expect(sized.slice(0, 3).map((b) => b.records)).toEqual([1000, 2000, 4000]);
    // From the fourth the budget binds: each batch ends before the record that would pass it.
    const bound = sized.slice(3, -1);
    expect(bound.length).toBeGreaterThan(2);
    for (const b of bound) {
      expect(b.cut).toBe("bytes");
      expect(b.bytes).toBeGreaterThan(budget - 1000);
    }
    expect(summary.sourceCount).toBe(30_000);
    await expectAllOnce(lake, 30_000);
  });

  it("shrink back to the base size at the head of a continuous stream, and grow again with a new backlog", async () => {
    const run = join(dir, "continuous");
    const path = join(dir, "continuous.ndjson");
    writeFileSync(path, lines(0, 20_000));
    const stop = new AbortController();
    const batches: BatchReport[] = [];
    let appended = false;
    let sum = 0;
    const summary = await new StreamSink(contractPath, new FileSource(path, { idleBackoffMs: { initial: 20, max: 100 } }), {
      targetPath: join(run, "lake"),
      checkpoint: join(run, "ck.sqlite"),
      maxWaitMs: 2000,
      signal: stop.signal,
      handleSignals: false,
      onBatch: (b) => {
        batches.push(b);
        sum += b.sourceCount;
        // At the head: every line read. Then a backlog again, in one write.
        if (sum === 20_000 && !appended) {
          appended = true;
          appendFileSync(path, lines(20_000, 7000));
        }
        if (sum === 27_000) stop.abort();
      },
    }).run("continuous");
    expect(summary.sourceCount).toBe(27_000);
    const sizes = batches.map((b) => b.sourceCount);
    const head = batches.findIndex((_, i) => sizes.slice(0, i + 1).reduce((a, b) => a + b, 0) === 20_000);
    expect(sizes[0]).toBe(1000);
    expect(Math.max(...sizes.slice(0, head + 1))).toBeGreaterThan(1000);
    // The batch that reached the head found nothing more within maxWaitMs: cut by time.
    expect(batches[head]!.cut).toBe("time");
    const after = sizes.slice(head + 1);
    expect(after[0]).toBeLessThanOrEqual(1000);
    expect(Math.max(...after)).toBeGreaterThan(1000);
    await expectAllOnce(join(run, "lake"), 27_000);
  });
});
