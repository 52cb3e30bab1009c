import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent, orderEvents } from "../../examples/orders.js";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import { MemoryCheckpointStore } from "../../src/checkpoint/memory.js";
import type { CheckpointStore } from "../../src/checkpoint/types.js";
import { loadContract } from "../../src/contract/index.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine } from "../../src/engine/types.js";
import { ConfigError } from "../../src/errors.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamRunError, StreamSink, type BatchReport } from "../../src/sink/index.js";
import { IterableSource, NotReplayableError } from "../../src/sources/index.js";
import type { SourceRecord } from "../../src/sources/core/types.js";
import { MemoryQueue } from "../support/memory-queue.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function lakeDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ll-sink-"));
  dirs.push(d);
  return d;
}

async function lakeCounts(targetPath: string) {
  const contract = await loadContract(CONTRACT);
  const good = await readTable(contract, { targetPath });
  const bad = await readQuarantine(contract, { targetPath });
  return { good: good.length, distinct: new Set(good.map((r) => String(r.order_id))).size, bad: bad.length, quarantine: bad };
}

function expectedSplit(n: number) {
  let bad = 0;
  for (let i = 0; i < n; i++) if (isBadOrder(i)) bad++;
  return { good: n - bad, bad };
}

describe("StreamSink options", () => {
  it("rejects a bad mode, a batch size or read-ahead below 1, naming the option", async () => {
    expect(() => new StreamSink(CONTRACT, [], { batchSize: 0 })).toThrow(ConfigError);
    expect(() => new StreamSink(CONTRACT, [], { batchSize: 0 })).toThrow(/batchSize: expected a whole number >= 1/);
    expect(() => new StreamSink(CONTRACT, [], { readAhead: 0 })).toThrow(/readAhead: expected a whole number >= 1; got 0/);
    expect(() => new StreamSink(CONTRACT, [], { readAhead: 1.5 })).toThrow(ConfigError);
    const sink = new StreamSink(CONTRACT, [], { checkpoint: "memory", targetPath: lakeDir() });
    await expect(sink.run("sometimes" as never)).rejects.toThrow(/mode: expected one of available_now, continuous/);
  });

  it("refuses checkpoint \"target\" for a parquet lake", async () => {
    const contract = await loadContract(CONTRACT);
    const parquet = { ...contract, materialization: { ...contract.materialization, format: "parquet" as const } };
    const err = await new StreamSink(parquet, [orderEvent(1)], { checkpoint: "target", targetPath: lakeDir() })
      .run("available_now")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamRunError);
    expect((err as StreamRunError).cause).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/needs materialization.format duckdb/);
  });
});

describe("StreamSink runs", () => {
  it("drains, splits good from bad, derives the checkpoint key, and summarises", async () => {
    const target = lakeDir();
    const reports: BatchReport[] = [];
    const summary = await new StreamSink(CONTRACT, orderEvents(2500), {
      targetPath: target,
      batchSize: 1000,
      onBatch: (b) => void reports.push(b),
    }).run("available_now");
    const split = expectedSplit(2500);
    expect(summary).toMatchObject({
      checkpointKey: "stream::orders",
      sourceCount: 2500,
      goodCount: split.good,
      badCount: split.bad,
      stoppedBy: "end",
      resumedFrom: null,
      cursor: { offset: 2500, exhausted: true },
    });
    expect(summary.finishedAt.getTime()).toBeGreaterThanOrEqual(summary.startedAt.getTime());
    expect(reports.map((r) => r.sourceCount)).toEqual([1000, 1000, 500]);
    expect(reports.map((r) => r.batchId)).toEqual([1, 2, 3]);
    const counts = await lakeCounts(target);
    expect(counts).toMatchObject({ good: split.good, distinct: split.good, bad: split.bad });
    // Quarantine keeps the record, the reasons and the source position.
    const q = counts.quarantine[0]!;
    expect(q.ruleIds.length).toBeGreaterThan(0);
    expect(q.reasons.length).toBe(q.ruleIds.length);
    expect(typeof q.position).not.toBe("undefined");
  });

  it("stops after maxBatches and resumes a replayable source where it stopped", async () => {
    const target = lakeDir();
    const make = () =>
      new StreamSink(CONTRACT, new IterableSource(() => orderEvents(3000), { replayable: true }), {
        targetPath: target,
        batchSize: 1000,
      });
    const first = await make().run("available_now", { maxBatches: 1 });
    expect(first).toMatchObject({ batches: 1, sourceCount: 1000, stoppedBy: "max-batches" });
    const second = await make().run("available_now");
    expect(second).toMatchObject({ sourceCount: 2000, resumedFrom: { offset: 1000, exhausted: false } });
    expect(second.totals.sourceCount).toBe(3000);
    const split = expectedSplit(3000);
    expect(await lakeCounts(target)).toMatchObject({ good: split.good, distinct: split.good, bad: split.bad });
  });

  it("refuses to resume a plain iterable after a partial run instead of skipping records", async () => {
    const target = lakeDir();
    await new StreamSink(CONTRACT, [...orderEvents(300)], { targetPath: target, batchSize: 100 }).run("available_now", {
      maxBatches: 1,
    });
    const err = await new StreamSink(CONTRACT, [...orderEvents(300)], { targetPath: target, batchSize: 100 })
      .run("available_now")
      .catch((e: unknown) => e);
    expect((err as StreamRunError).cause).toBeInstanceOf(NotReplayableError);
    expect((err as StreamRunError).summary.batches).toBe(0);
  });

  it("quarantines records that cannot be decoded, with their raw payload, and keeps going (I6)", async () => {
    const target = lakeDir();
    const records: SourceRecord[] = [
      { value: orderEvent(1), position: 1 },
      { value: undefined, raw: "{not json", decodeError: "invalid JSON", position: 2 },
      { value: orderEvent(3), position: 3 },
    ];
    let i = 0;
    const source = {
      kind: "cursor" as const,
      description: "decode test",
      async seek() {},
      currentCursor: () => i,
      async *read() {
        for (; i < records.length; ) yield records[i++]!;
      },
    };
    const summary = await new StreamSink(CONTRACT, source, { targetPath: target, checkpoint: "memory" }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 3, badCount: 1 });
    const { quarantine } = await lakeCounts(target);
    expect(quarantine).toHaveLength(1);
    expect(quarantine[0]).toMatchObject({ raw: "{not json", ruleIds: ["decode"], reasons: ["invalid JSON"] });
  });

  it("flushes a quiet continuous stream on its timer and stops gracefully on abort", async () => {
    const target = lakeDir();
    const stop = new AbortController();
    const reports: BatchReport[] = [];
    async function* quiet() {
      yield orderEvent(0);
      yield orderEvent(1);
      await new Promise(() => undefined); // then nothing, ever
    }
    const summary = await new StreamSink(CONTRACT, quiet(), {
      targetPath: target,
      batchSize: 100,
      maxWaitMs: 100,
      signal: stop.signal,
      onBatch: (b) => {
        reports.push(b);
        stop.abort();
      },
    }).run("continuous");
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ sourceCount: 2, cut: "time" });
    expect(summary).toMatchObject({ stoppedBy: "signal", sourceCount: 2 });
  });

  it("stops on SIGTERM in continuous mode after committing the in-flight batch", async () => {
    const target = lakeDir();
    async function* endless() {
      for (let i = 0; ; i++) {
        yield orderEvent(i);
        if (i % 50 === 49) await new Promise((r) => setTimeout(r, 5));
      }
    }
    let batches = 0;
    const summary = await new StreamSink(CONTRACT, endless(), {
      targetPath: target,
      batchSize: 100,
      onBatch: () => {
        if (++batches === 2) process.emit("SIGTERM");
      },
    }).run("continuous");
    expect(summary.stoppedBy).toBe("signal");
    expect(summary.batches).toBeGreaterThanOrEqual(2);
    expect(summary.sourceCount).toBe(summary.batches * 100 - (summary.sourceCount % 100 === 0 ? 0 : 100 - (summary.sourceCount % 100)));
    expect(process.listenerCount("SIGTERM")).toBe(0);
    const counts = await lakeCounts(target);
    expect(counts.good + counts.bad).toBe(summary.sourceCount);
  });

  it("validates the next batch while one is written, yet commits in order, each cursor after its rows (I1)", async () => {
    const target = lakeDir();
    const contract = await loadContract(CONTRACT);
    const events: string[] = [];
    const engine = await createEngine("duckdb");
    const observed: Engine = {
      name: engine.name,
      validate: async (records, c) => {
        events.push(`validate ${(records[0] as { order_id: number }).order_id}`);
        return engine.validate(records, c);
      },
      close: () => engine.close(),
    };
    const inner = new MemoryCheckpointStore();
    const store: CheckpointStore = {
      load: (key) => inner.load(key),
      commit: async (record) => {
        // Every row of this batch and the ones before it is already in the table.
        const rows = await readTable(contract, { targetPath: target });
        const quarantined = await readQuarantine(contract, { targetPath: target });
        expect(rows.length + quarantined.length).toBe(record.totals.sourceCount);
        events.push(`commit ${record.batchId}`);
        return inner.commit(record);
      },
      close: () => inner.close(),
    };
    const summary = await new StreamSink(CONTRACT, new IterableSource(() => orderEvents(1000), { replayable: true }), {
      targetPath: target,
      engine: observed,
      checkpoint: store,
      batchSize: 100,
    }).run("available_now");
    await engine.close();
    // Ten batches of records, then the empty one that marks the iterable as read to the end.
    expect(summary).toMatchObject({ batches: 11, sourceCount: 1000 });
    const commits = events.filter((e) => e.startsWith("commit")).map((e) => Number(e.split(" ")[1]));
    expect(commits).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // Batch N+1 (records from 100N) was validated before batch N committed.
    const overlapped = commits.filter((n) => n < 10 && events.indexOf(`validate ${n * 100}`) < events.indexOf(`commit ${n}`));
    expect(overlapped.length).toBeGreaterThan(0);
  });

  it("validates up to readAhead batches ahead of the one being written, never more", async () => {
    const contract = await loadContract(CONTRACT);
    const engine = await createEngine("duckdb");
    for (const readAhead of [1, 2, 3]) {
      let validating = 0; // asked for, not yet committed
      let most = 0;
      const observed: Engine = {
        name: engine.name,
        validate: (records, c) => {
          most = Math.max(most, ++validating);
          return engine.validate(records, c);
        },
        close: async () => undefined,
      };
      const summary = await new StreamSink(contract, new IterableSource(() => orderEvents(2000), { replayable: true }), {
        targetPath: lakeDir(),
        engine: observed,
        checkpoint: "memory",
        batchSize: 100,
        readAhead,
        onBatch: () => {
          validating--;
        },
      }).run("available_now");
      expect(summary).toMatchObject({ batches: 21, sourceCount: 2000 });
      // Fed as fast as it is read, the pipeline fills up to its bound: readAhead + the one written.
      expect(most).toBe(readAhead + 1);
    }
    await engine.close();
  });

  it("commits the batches before one whose validation fails, and nothing after it", async () => {
    const target = lakeDir();
    const contract = await loadContract(CONTRACT);
    const engine = await createEngine("duckdb");
    const failing: Engine = {
      name: engine.name,
      validate: async (records, c) => {
        if ((records[0] as { order_id: number }).order_id === 300) throw new Error("engine lost its mind");
        return engine.validate(records, c);
      },
      close: async () => undefined,
    };
    const inner = new MemoryCheckpointStore();
    const err = await new StreamSink(contract, new IterableSource(() => orderEvents(1000), { replayable: true }), {
      targetPath: target,
      engine: failing,
      checkpoint: inner,
      batchSize: 100,
      readAhead: 3,
    })
      .run("available_now")
      .catch((e: unknown) => e);
    await engine.close();
    expect(err).toBeInstanceOf(StreamRunError);
    expect((err as StreamRunError).message).toMatch(/engine lost its mind/);
    // Batches 1-3 (records 0-299) were committed; the batches read after the failed one were not written.
    expect((err as StreamRunError).summary).toMatchObject({ batches: 3, sourceCount: 300 });
    expect((await inner.load("stream::orders"))?.totals.sourceCount).toBe(300);
    const counts = await lakeCounts(target);
    expect(counts.good + counts.bad).toBe(300);
  });

  it("ends a continuous run promptly when a write fails, even if the source has gone quiet", async () => {
    const target = lakeDir();
    async function* thenQuiet() {
      for (let i = 0; i < 150; i++) yield orderEvent(i);
      await new Promise(() => undefined);
    }
    const inner = new MemoryCheckpointStore();
    const store: CheckpointStore = {
      load: (key) => inner.load(key),
      commit: async (record) => {
        if (record.batchId === 2) throw new Error("checkpoint store is down");
        return inner.commit(record);
      },
      close: () => inner.close(),
    };
    const started = Date.now();
    const err = await new StreamSink(CONTRACT, thenQuiet(), {
      targetPath: target,
      checkpoint: store,
      batchSize: 100,
      maxWaitMs: 50,
      handleSignals: false,
    })
      .run("continuous")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamRunError);
    expect((err as Error).message).toMatch(/after 1 committed batches.*checkpoint store is down/);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);

  it("stores each bad record once when a run dies between write and commit and the next cuts other batches", async () => {
    const target = lakeDir();
    const checkpoint = join(target, "cp.sqlite");
    const source = () => new IterableSource(() => orderEvents(1000), { replayable: true });
    const dying = new StreamSink(CONTRACT, source(), {
      targetPath: target,
      checkpoint,
      batchSize: 200,
      hooks: {
        afterWrite: (batchId) => {
          if (batchId === 3) throw new Error("killed after the write of batch 3");
        },
      },
    });
    await expect(dying.run("available_now")).rejects.toThrow(/killed after the write of batch 3/);
    const partial = await lakeCounts(target);
    expect(partial.good + partial.bad).toBe(600); // batch 3 is in the lake, its cursor is not

    // Batch 3's records come again as batches 3..9 of 30 records; the quarantine rows batch 3
    // left behind are replaced, not kept beside the new ones.
    const summary = await new StreamSink(CONTRACT, source(), { targetPath: target, checkpoint, batchSize: 30 }).run("available_now");
    expect(summary.resumedFrom).toMatchObject({ offset: 400 });
    const { good, distinct, quarantine } = await lakeCounts(target);
    const expected = expectedSplit(1000);
    expect({ good, distinct, bad: quarantine.length }).toEqual({ good: expected.good, distinct: expected.good, bad: expected.bad });
    expect(new Set(quarantine.map((r) => JSON.stringify(r.position))).size).toBe(expected.bad);
    expect(new Set(quarantine.map((r) => r.streamKey))).toEqual(new Set(["stream::orders"]));
  });

  it("lets only one writer commit on a checkpoint key (I3)", async () => {
    const store = new MemoryCheckpointStore();
    const make = (dir: string) =>
      new StreamSink(CONTRACT, new IterableSource(() => orderEvents(400), { replayable: true }), {
        targetPath: dir,
        checkpoint: store,
        checkpointKey: "shared",
        batchSize: 100,
      });
    const results = await Promise.allSettled([make(lakeDir()).run("available_now"), make(lakeDir()).run("available_now")]);
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(failed.length).toBeGreaterThanOrEqual(1);
    expect((failed[0]!.reason as StreamRunError).cause).toBeInstanceOf(CheckpointConflictError);
    expect((failed[0]!.reason as Error).message).toMatch(/checkpoint "shared"/);
  });
});

/** A queue whose acknowledgements record the batch committed when they came. */
function queueOf(messages: unknown[], store: MemoryCheckpointStore): MemoryQueue & { events: string[] } {
  const events: string[] = [];
  const queue = new MemoryQueue(messages, async (tokens) => {
    const committed = await store.load("stream::orders");
    events.push(`ack ${tokens.length} after batch ${committed?.batchId ?? 0}`);
  });
  return Object.assign(queue, { events });
}

describe("StreamSink with an ack source", () => {
  it("acknowledges each batch only after its commit (I8)", async () => {
    const store = new MemoryCheckpointStore();
    const queue = queueOf([...orderEvents(250)], store);
    const summary = await new StreamSink(CONTRACT, queue, { targetPath: lakeDir(), checkpoint: store, batchSize: 100, maxWaitMs: 50 }).run(
      "available_now",
    );
    expect(summary.sourceCount).toBe(250);
    expect(queue.events).toEqual(["ack 100 after batch 1", "ack 100 after batch 2", "ack 50 after batch 3"]);
    expect(queue.acked).toHaveLength(250);
  });

  it("gives messages back, unacknowledged, when the batch cannot be committed", async () => {
    const store = new MemoryCheckpointStore();
    // A store whose disk is full: the write succeeds, the commit fails.
    store.commit = async () => {
      throw new Error("disk full");
    };
    const queue = queueOf([...orderEvents(10)], store);
    const sink = new StreamSink(CONTRACT, queue, { targetPath: lakeDir(), checkpoint: store, batchSize: 100, maxWaitMs: 50 });
    const err = await sink.run("available_now").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamRunError);
    expect((err as Error).message).toMatch(/disk full/);
    expect(queue.acked).toEqual([]);
    expect(queue.nacked).toHaveLength(10);
  });
});
