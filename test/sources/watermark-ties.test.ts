import { describe, expect, it } from "vitest";
import {
  WatermarkChunkSource,
  WatermarkOrderError,
  type FetchChunk,
  type WatermarkPosition,
} from "../../src/sources/watermark/chunk-source.js";

// The spec's call — `WatermarkChunkSource(fetch_chunk, watermark_field="id", chunk_size=1000)` —
// names neither a tie-breaker nor uniqueWatermark. That default pages on the watermark alone and
// must neither lose nor stall on rows that share a watermark value.

type Row = { id: number; wm: number };

/** A correct watermark-only keyset fetcher (`wm > after`, `wm <= until`, ORDER BY wm, LIMIT). */
function table(rows: Row[]) {
  const sorted = [...rows].sort((a, b) => a.wm - b.wm || a.id - b.id);
  const limits: number[] = [];
  const fetchChunk: FetchChunk = async (after, limit, until) => {
    limits.push(limit);
    return sorted
      .filter((r) => (after === undefined || r.wm > Number(after.watermark)) && (until === undefined || r.wm <= Number(until.watermark)))
      .slice(0, limit);
  };
  const fetchMax = async (): Promise<WatermarkPosition | undefined> => (sorted.length ? { watermark: sorted.at(-1)!.wm } : undefined);
  return { fetchChunk, fetchMax, limits, rows: sorted };
}

async function readAll(s: WatermarkChunkSource, take = Infinity): Promise<{ ids: number[]; cursors: unknown[] }> {
  const ids: number[] = [];
  const cursors: unknown[] = [];
  if (take <= 0) return { ids, cursors };
  for await (const r of s.read({ mode: "available_now", signal: new AbortController().signal })) {
    ids.push((r.value as Row).id);
    cursors.push(s.currentCursor());
    if (ids.length >= take) break;
  }
  return { ids, cursors };
}

/** Rows with heavy ties: ids 0..n-1, watermark = floor(id / group). */
function tied(n: number, group: number): Row[] {
  return Array.from({ length: n }, (_, id) => ({ id, wm: Math.floor(id / group) }));
}

describe("WatermarkChunkSource with the spec's options (watermarkField only)", () => {
  it("constructs with watermarkField alone: chunkSize defaults to 1000", async () => {
    const t = table(tied(2500, 1));
    const s = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm" });
    const { ids } = await readAll(s);
    expect(ids).toEqual(t.rows.map((r) => r.id));
    expect(t.limits[0]).toBe(1000);
  });

  it("ties cut by a chunk boundary: every row exactly once, in order", async () => {
    // Groups of 3 with chunks of 4: every chunk ends inside a group.
    const t = table(tied(100, 3));
    const s = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", chunkSize: 4 });
    const { ids } = await readAll(s);
    expect(ids).toEqual(t.rows.map((r) => r.id));
  });

  it("one group larger than a chunk: the limit grows until the group fits", async () => {
    const rows = [...tied(5, 1), ...Array.from({ length: 23 }, (_, i) => ({ id: 100 + i, wm: 50 })), { id: 200, wm: 60 }];
    const t = table(rows);
    const s = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", chunkSize: 4 });
    const { ids } = await readAll(s);
    expect(ids.sort((a, b) => a - b)).toEqual(t.rows.map((r) => r.id).sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(Math.max(...t.limits)).toBeGreaterThanOrEqual(24);
  });

  it("the cursor never passes a watermark before all its rows were read, so a resume mid-group re-reads the group", async () => {
    const t = table(tied(30, 4));
    const a = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", chunkSize: 5 });
    // Stop after 10 rows: ids 0-9; wm 2 (ids 8-11) is only half read.
    const first = await readAll(a, 10);
    expect(first.ids).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(first.cursors[3]).toEqual({ watermark: 0 });
    expect(first.cursors[2]).toBeUndefined();
    expect(a.currentCursor()).toEqual({ watermark: 1 });
    // Resume from the committed cursor in a new source: the whole wm-2 group comes again.
    const b = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", chunkSize: 5 });
    await b.seek(a.currentCursor());
    const rest = await readAll(b);
    expect(rest.ids).toEqual(t.rows.filter((r) => r.wm >= 2).map((r) => r.id));
  });

  it("available_now with fetchMax stops after the last row of the snapshot's group", async () => {
    const t = table(tied(40, 5));
    const s = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", chunkSize: 3, fetchMax: t.fetchMax });
    await s.endCursor?.();
    const { ids } = await readAll(s);
    expect(ids).toEqual(t.rows.map((r) => r.id));
    expect(s.currentCursor()).toEqual({ watermark: 7 });
  });

  it("more than 100,000 rows on one watermark: a clear error naming tieBreakerField", async () => {
    const big = Array.from({ length: 100_001 }, (_, id) => ({ id, wm: 1 }));
    const t = table(big);
    const s = new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", chunkSize: 1000 });
    const err = await readAll(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatermarkOrderError);
    expect(String(err)).toMatch(/more than 100000 rows share \(1\) in "wm".*Set tieBreakerField/);
  });

  it("a query that does not resume strictly after the cursor is refused, not looped on", async () => {
    const rows = tied(10, 2);
    const inclusive: FetchChunk = async (after, limit) => rows.filter((r) => after === undefined || r.wm >= Number(after.watermark)).slice(0, limit);
    const s = new WatermarkChunkSource(inclusive, { watermarkField: "wm", chunkSize: 3 });
    await expect(readAll(s)).rejects.toThrow(/strict ">"/);
  });
});
