/**
 * Counts that reconcile on the Temporal side, without a server: the worker's runtime fetches and
 * writes a merge stream whose batches repeat keys and carry a null key, and the workflow's own
 * state functions turn the write results into its status and result. Every record is counted
 * once: source = good + bad + superseded, in each batch, the totals, the status and the result.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Counts } from "../../src/checkpoint/types.js";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import { decodeCursorForDisplay } from "../../workflows/display.js";
import { afterCommit, initialCarry, resultOf, statusOf } from "../../workflows/state.js";
import type { StreamSpec } from "../../workflows/types.js";
import { writeFetched } from "./support.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const CONTRACT = `
version: "1.0"
dataset: rides
primary_key: [ride_id]
model:
  fields:
    - { name: ride_id, type: long }
    - { name: status, type: string }
materialization:
  strategy: merge
  format: duckdb
`;

const EVENTS = [
  { ride_id: 1, status: "completed" },
  { ride_id: 1, status: "refunded" },
  { ride_id: null, status: "x" },
  { ride_id: 2, status: "a" },
  { ride_id: 3, status: "a" },
  { ride_id: 3, status: "b" },
];

const reconciles = (c: Counts) => expect(c.sourceCount).toBe(c.goodCount + c.badCount + c.supersededCount);

describe("the Temporal runtime and workflow state with superseded records", () => {
  it("reconciles every batch, the totals, the status and the result", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ll-superseded-temporal-"));
    dirs.push(dir);
    writeFileSync(join(dir, "rides.yaml"), CONTRACT);
    writeFileSync(join(dir, "rides.ndjson"), EVENTS.map((e) => JSON.stringify(e) + "\n").join(""));
    const spec: StreamSpec = {
      contract: join(dir, "rides.yaml"),
      source: { type: "file", path: join(dir, "rides.ndjson") },
      mode: "available_now",
      batchSize: 3,
      maxWaitMs: 120_000,
      targetPath: join(dir, "lake"),
    };
    const runtime = new StreamRuntime();
    try {
      const open = await runtime.openStream(spec);
      let carry = initialCarry(open, "2026-01-01T00:00:00.000Z");
      const never = new AbortController().signal;
      let endCursor: string | null | undefined;
      const batches: Counts[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await runtime.fetchBatch({ spec, key: carry.key, cursor: carry.cursor, batchId: carry.batchId, endCursor, idleMs: 120_000 }, never);
        if (r.endCursor !== undefined) endCursor = r.endCursor;
        if (r.count > 0 || r.cursorMoved) {
          const previous = { cursor: carry.cursor, batchId: carry.batchId, totals: carry.totals };
          const w = await writeFetched(runtime, { spec, key: carry.key, writerId: "w", previous }, r);
          batches.push(w.batch);
          reconciles(w.batch);
          reconciles(w.totals);
          carry = afterCommit(carry, r.cursor, w);
        }
        if (r.exhausted) break;
      }
      expect(batches.filter((b) => b.sourceCount > 0)).toEqual([
        { sourceCount: 3, goodCount: 1, badCount: 1, supersededCount: 1 },
        { sourceCount: 3, goodCount: 2, badCount: 0, supersededCount: 1 },
      ]);
      const status = statusOf(carry, "running", "available_now", null, decodeCursorForDisplay);
      expect(status).toMatchObject({ sourceCount: 6, goodCount: 3, badCount: 1, supersededCount: 2 });
      const result = resultOf(carry, "end", "2026-01-01T00:00:01.000Z", decodeCursorForDisplay);
      expect(result).toMatchObject({ sourceCount: 6, goodCount: 3, badCount: 1, supersededCount: 2 });
      reconciles(result);
      reconciles(result.totals);
    } finally {
      await runtime.close();
    }
  });
});
