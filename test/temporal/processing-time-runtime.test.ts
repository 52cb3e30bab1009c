/**
 * The worker side of a processing_time trigger: fetchBatch reads the source as a continuous
 * stream, and a trigger that finds nothing comes back empty after the batch wait (maxWaitMs) —
 * not after the 30 s idle fetch of continuous mode — so the activity never waits out the
 * interval; the workflow's timer does. A trigger takes what the source has at hand, so the
 * first ones may find nothing while the file is still being opened: the test fetches until the
 * records it wrote have arrived, never waiting for a time.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import type { StreamSpec } from "../../workflows/types.js";
import { ORDERS_CONTRACT, writeOrders } from "./support.js";

const dirs: string[] = [];
const runtimes: StreamRuntime[] = [];
afterAll(async () => {
  for (const r of runtimes) await r.close();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

describe("StreamRuntime, processing_time", () => {
  it("hands a trigger what has arrived, and an empty trigger nothing, without the continuous idle wait", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ll-ptime-runtime-"));
    dirs.push(dir);
    const events = join(dir, "events.ndjson");
    writeOrders(events, 0, 5);
    const spec: StreamSpec = { contract: ORDERS_CONTRACT, source: { type: "file", path: events }, mode: "processing_time", checkpointKey: "k", maxWaitMs: 50, targetPath: join(dir, "lake") };
    const runtime = new StreamRuntime();
    runtimes.push(runtime);
    const never = new AbortController().signal;
    let cursor: string | null = null;
    /** Triggers, as the workflow asks in processing_time (no idleMs, no read-ahead, one batch), until `want` records came. */
    const triggers = async (want: number) => {
      const counts: number[] = [];
      while (counts.reduce((a, b) => a + b, 0) < want) {
        const got = await runtime.fetchBatch({ spec, key: "k", cursor, batchId: 0, readAhead: false }, never);
        expect(got.exhausted).toBe(false); // a file read as a stream does not end
        counts.push(got.count);
        cursor = got.cursor;
      }
      return counts.reduce((a, b) => a + b, 0);
    };
    expect(await triggers(5)).toBe(5);
    // Nothing more has arrived: the trigger comes back empty after the batch wait.
    const empty = await runtime.fetchBatch({ spec, key: "k", cursor, batchId: 1, readAhead: false }, never);
    expect(empty).toMatchObject({ count: 0, spool: null, cursorMoved: false, exhausted: false });
    expect(runtime.hasReadAhead("k")).toBe(false);
    writeOrders(events, 5, 8, true);
    expect(await triggers(3)).toBe(3);
  });
});
