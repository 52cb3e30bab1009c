import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import type { FetchBatchInput, FetchBatchResult, StreamSpec } from "../../src/temporal/types.js";
import type { SourceRecord } from "../../src/sources/types.js";
import { ORDERS_CONTRACT, writeOrders } from "./support.js";

/** The worker side of a stream, without a server: which fetches a cached source may serve. */
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const runtimes: StreamRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

function setup(records: number, mode: StreamSpec["mode"] = "available_now") {
  const dir = mkdtempSync(join(tmpdir(), "ll-runtime-"));
  dirs.push(dir);
  const events = join(dir, "events.ndjson");
  writeOrders(events, 0, records);
  const spec: StreamSpec = {
    contract: ORDERS_CONTRACT,
    source: { type: "file", path: events },
    mode,
    checkpointKey: "k",
    batchSize: 1000,
    maxWaitMs: 200,
    targetPath: join(dir, "lake"),
  };
  const runtime = new StreamRuntime();
  runtimes.push(runtime);
  const never = new AbortController().signal;
  let endCursor: string | null | undefined;
  const fetch = async (cursor: string | null, extra: Partial<FetchBatchInput> = {}): Promise<FetchBatchResult> => {
    const r = await runtime.fetchBatch({ spec, key: "k", cursor, batchId: 0, endCursor, idleMs: 300, ...extra }, never);
    if (r.endCursor !== undefined) endCursor = r.endCursor;
    return r;
  };
  /** Source line numbers of a fetched batch, as the spool holds them. */
  const lines = (r: FetchBatchResult): number[] =>
    r.spool ? runtime.spool.get<{ records: SourceRecord[] }>(r.spool).records.map((x) => (x.position as { line: number }).line) : [];
  return { dir, events, spec, runtime, fetch, lines };
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i + 1);

describe("StreamRuntime source cache", () => {
  it("gives each available_now drain its own end snapshot, on the worker that ran the last one (I7)", async () => {
    const { lines, events, spec, runtime } = setup(1500);
    /** One drain as the workflow runs it: from the store's cursor, capturing a new end first. */
    const drain = async () => {
      const open = await runtime.openStream(spec);
      let previous = { cursor: open.cursor, batchId: open.batchId, totals: open.totals };
      let endCursor: string | null | undefined;
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) {
        const input = { spec, key: "k", cursor: previous.cursor, batchId: previous.batchId, endCursor, idleMs: 300 };
        const r = await runtime.fetchBatch(input, new AbortController().signal);
        if (r.endCursor !== undefined) endCursor = r.endCursor;
        seen.push(...lines(r));
        if (r.count > 0 || r.cursorMoved) {
          const validated = r.spool ? (await runtime.validateBatch({ spec, spool: r.spool })).validated : null;
          const w = await runtime.writeBatch({ spec, key: "k", writerId: "w", validated, fetched: r.spool, previous, cursor: r.cursor });
          previous = { cursor: r.cursor, batchId: w.batchId, totals: w.totals };
        }
        if (r.exhausted) break;
      }
      return seen;
    };
    expect(await drain()).toEqual(range(0, 1500));
    writeOrders(events, 1500, 1700, true);
    expect(await drain()).toEqual(range(1500, 1700));
    expect(await drain()).toEqual([]);
  });

  it("opens the source again when the stream comes back in another mode", async () => {
    const { fetch, lines, events, spec, runtime } = setup(1000, "continuous");
    const first = await fetch(null);
    expect(lines(first)).toEqual(range(0, 1000));
    writeOrders(events, 1000, 1200, true);
    const drain = await runtime.fetchBatch(
      { spec: { ...spec, mode: "available_now" }, key: "k", cursor: first.cursor, batchId: 1, idleMs: 300 },
      new AbortController().signal,
    );
    expect(lines(drain)).toEqual(range(1000, 1200));
    expect(drain.exhausted).toBe(true);
  });
});
