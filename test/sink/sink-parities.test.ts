import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent, orderEvents } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { Cursor } from "../../src/checkpoint/types.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { ConfigError } from "../../src/errors.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { runModeOfTrigger as modeOfTrigger } from "../../src/contract/index.js";
import { StreamPipeline } from "../../src/pipeline/pipeline.js";
import { StreamRunError, StreamSink } from "../../src/sink/index.js";
import { createSource } from "../../src/sources/registry.js";
import { WebhookSource } from "../../src/sources/webhook/source.js";
import type { CursorSource, ReadOptions, RunMode, SourceRecord } from "../../src/sources/core/types.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function lakeDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ll-parity-"));
  dirs.push(d);
  return d;
}

function split(from: number, to: number) {
  let bad = 0;
  for (let i = from; i < to; i++) if (isBadOrder(i)) bad++;
  return { good: to - from - bad, bad };
}

describe("StreamSink refuses options it does not know", () => {
  it("names the option, suggests the closest one and lists them all", () => {
    const err = (() => {
      try {
        new StreamSink(CONTRACT, [], { cursor_fn: (r: unknown) => r } as never);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).option).toBe("StreamSink: cursor_fn");
    expect((err as Error).message).toMatch(/unknown option; did you mean "cursorFn"\? Known options: .*batchSize.*checkpointKey.*cursorFn/);
    expect(() => new StreamSink(CONTRACT, [], { flushEvery: 10 } as never)).toThrow(/StreamSink: flushEvery: unknown option\. Known options: batchSize, /);
    expect(() => new StreamSink(CONTRACT, [], { batchsize: 10 } as never)).toThrow(/StreamSink: batchsize: unknown option; did you mean "batchSize"/);
    expect(() => new StreamSink(CONTRACT, [], { window_seconds: 5 } as never)).toThrow(/StreamSink: window_seconds: unknown option; use "maxWaitMs" \(milliseconds\)\. Known options/);
  });

  it("refuses an unknown run option too", async () => {
    const sink = new StreamSink(CONTRACT, [], { checkpoint: "memory", targetPath: lakeDir() });
    await expect(sink.run("available_now", { max_batches: 1 } as never)).rejects.toThrow(/run: max_batches: unknown option; did you mean "maxBatches"/);
  });
});

/** Orders after `after` (an order id), as a query `WHERE order_id > $after` would give them. */
function ordersAfter(total: number, calls: Array<Cursor | undefined>) {
  return function* (after: Cursor | undefined) {
    calls.push(after);
    for (let i = after === undefined ? 0 : (after as number) + 1; i < total; i++) yield orderEvent(i);
  };
}

describe("StreamSink cursorFn", () => {
  it("stores cursorFn(last record) after each batch and hands it to the source after a crash", async () => {
    const target = lakeDir();
    const checkpoint = join(target, "cp.sqlite");
    const calls: Array<Cursor | undefined> = [];
    const cursorFn = (r: unknown) => (r as { order_id: number }).order_id;
    const dying = new StreamSink(CONTRACT, ordersAfter(1000, calls), {
      targetPath: target,
      checkpoint,
      batchSize: 100,
      cursorFn,
      // The crash: batch 3 is written, its cursor never committed.
      hooks: {
        afterWrite: (id) => {
          if (id === 3) throw new Error("killed after the write of batch 3");
        },
      },
    });
    await expect(dying.run("available_now")).rejects.toThrow(/killed after the write of batch 3/);
    const store = new SQLiteCheckpointStore(checkpoint);
    expect(await store.load("stream::orders")).toMatchObject({ batchId: 2, cursor: 199 });
    await store.close();

    const summary = await new StreamSink(CONTRACT, ordersAfter(1000, calls), { targetPath: target, checkpoint, batchSize: 100, cursorFn }).run(
      "available_now",
    );
    expect(calls).toEqual([undefined, 199]);
    expect(summary).toMatchObject({ resumedFrom: 199, cursor: 999, sourceCount: 800, batches: 8 });
    const contract = await loadContract(CONTRACT);
    const good = await readTable(contract, { targetPath: target });
    const bad = await readQuarantine(contract, { targetPath: target });
    const expected = split(0, 1000);
    expect({ good: good.length, distinct: new Set(good.map((r) => String(r.order_id))).size, bad: bad.length }).toEqual({
      good: expected.good,
      distinct: expected.good,
      bad: expected.bad,
    });
    // A quarantined record sits at its own cursor.
    expect(bad.map((r) => r.position).sort((a, b) => (a as number) - (b as number))).toEqual(
      [...Array(1000).keys()].filter((i) => isBadOrder(i)),
    );
  });

  it("fails the run, before that batch commits, when cursorFn gives no cursor", async () => {
    const target = lakeDir();
    const checkpoint = join(target, "cp.sqlite");
    const err = await new StreamSink(CONTRACT, () => orderEvents(250), {
      targetPath: target,
      checkpoint,
      batchSize: 100,
      cursorFn: (r) => ((r as { order_id: number }).order_id < 150 ? (r as { order_id: number }).order_id : undefined),
    })
      .run("available_now")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamRunError);
    expect((err as StreamRunError).cause).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/cursorFn: returned undefined for record 151 of this run/);
    expect((err as StreamRunError).summary).toMatchObject({ batches: 1, cursor: 99 });
  });

  it("needs a function that resumes after a cursor, and refuses it without cursorFn", () => {
    expect(() => new StreamSink(CONTRACT, orderEvents(3), { cursorFn: () => 1 })).toThrow(
      /source: with cursorFn, expected a function \(after\) => iterable/,
    );
    expect(() => new StreamSink(CONTRACT, () => orderEvents(3))).toThrow(/cursorFn: .*needs cursorFn/);
    const cursorSource = { kind: "cursor", description: "c", seek: async () => {}, currentCursor: () => null, read: async function* () {} };
    expect(() => new StreamSink(CONTRACT, cursorSource as CursorSource, { cursorFn: () => 1 })).toThrow(/cursorFn: .*c has a cursor of its own/);
  });
});

/** A cursor source that records the mode it was read in. */
function modeProbe(seen: RunMode[], modes?: readonly RunMode[]): CursorSource {
  return {
    kind: "cursor",
    description: "probe",
    ...(modes ? { modes } : {}),
    seek: async () => {},
    currentCursor: () => null,
    read(options: ReadOptions): AsyncIterable<SourceRecord> {
      seen.push(options.mode);
      return (async function* () {})();
    },
  };
}

describe("run() without a mode", () => {
  it("maps the contract's trigger", () => {
    expect(modeOfTrigger("available_now")).toBe("available_now");
    expect(modeOfTrigger("once")).toBe("available_now");
    expect(modeOfTrigger(undefined)).toBe("available_now");
    expect(modeOfTrigger("continuous")).toBe("continuous");
    expect(modeOfTrigger("processing_time")).toBe("continuous");
    expect(modeOfTrigger("micro_batch")).toBe("continuous");
  });

  it("runs in the mode the contract's trigger asks for, else available_now", async () => {
    const contract = await loadContract(CONTRACT);
    const seen: RunMode[] = [];
    const run = (c: Contract) =>
      new StreamSink(c, modeProbe(seen), { checkpoint: "memory", targetPath: lakeDir(), handleSignals: false }).run();
    await run({ ...contract, trigger: "processing_time" });
    await run({ ...contract, trigger: "once" });
    await run({ ...contract, trigger: undefined });
    expect(seen).toEqual(["continuous", "available_now", "available_now"]);
  });
});

describe("a source that runs only continuously", () => {
  it("refuses available_now at once, before the webhook listens", async () => {
    const source = new WebhookSource({ port: 0 });
    const sink = new StreamSink(CONTRACT, source, { checkpoint: "memory", targetPath: lakeDir() });
    const err = await sink.run("available_now").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /^mode: webhook 127\.0\.0\.1:0\/ cannot run available_now \(it runs continuous only\): it receives only what is pushed to it while it runs/,
    );
    expect(() => source.url).toThrow(/not started|start/i);
    await source.close();
  });

  it("is refused by the pipeline both runtimes open (the Temporal runtime's path), for eventgrid-push too", async () => {
    const source = await createSource({ type: "eventgrid-push", port: 0 });
    const pipeline = new StreamPipeline({ source, mode: "available_now", limits: { maxRecords: 1, maxBytes: 1, maxWaitMs: 1 }, validate: () => { throw new Error("unused"); } });
    const err = await pipeline.open(undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).retriable).toBe(false);
    expect((err as Error).message).toMatch(/cannot run available_now/);
    await pipeline.close();
    // A declared mode it can serve opens as before.
    const seen: RunMode[] = [];
    await new StreamSink(CONTRACT, modeProbe(seen, ["continuous"]), { checkpoint: "memory", targetPath: lakeDir(), handleSignals: false }).run("continuous");
    expect(seen).toEqual(["continuous"]);
  });
});

describe("a connector that declares continuousOnly", () => {
  /** A live feed that never ends: yields one event, then waits until it is closed. */
  function liveFeed(flags: Record<string, unknown>) {
    let streamed = 0;
    let stop: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (stop = resolve));
    return {
      ...flags,
      get streamed() {
        return streamed;
      },
      async *stream() {
        streamed++;
        yield orderEvent(1);
        await closed;
      },
      async close() {
        stop();
      },
    };
  }

  it.each([["continuousOnly"], ["continuous_only"]])("refuses available_now at once when it says %s, before stream() is called", async (flag) => {
    const feed = liveFeed({ [flag]: true });
    const sink = new StreamSink(CONTRACT, feed, { checkpoint: "memory", targetPath: lakeDir(), handleSignals: false });
    const err = await sink.run("available_now").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).retriable).toBe(false);
    expect((err as Error).message).toMatch(/^mode: connector cannot run available_now \(it runs continuous only\): it declares continuousOnly/);
    expect(feed.streamed).toBe(0);
  });

  it("runs continuous, and a connector's drain flag tells it the mode (the Python sink's contract)", async () => {
    const feed = { ...liveFeed({ continuousOnly: true }), drain: undefined as boolean | undefined };
    const result = await new StreamSink(CONTRACT, feed, { checkpoint: "memory", targetPath: lakeDir(), handleSignals: false, batchSize: 1 }).run("continuous", { maxBatches: 1 });
    expect(result.sourceCount).toBe(1);
    expect(feed.drain).toBe(false);
    const drained = { drain: undefined as boolean | undefined, async *stream() { yield orderEvent(2); } };
    await new StreamSink(CONTRACT, drained, { checkpoint: "memory", targetPath: lakeDir(), handleSignals: false }).run("available_now");
    expect(drained.drain).toBe(true);
  });
});
