import { describe, expect, it } from "vitest";
import {
  WatermarkChunkSource,
  WatermarkOrderError,
  type FetchChunk,
} from "../../src/sources/watermark/source.js";

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
      .filter((r) => (after === undefined || r.wm > Number(after)) && (until === undefined || r.wm <= Number(until)))
      .slice(0, limit);
  };
  const fetchMax = async (): Promise<number | undefined> => sorted.at(-1)?.wm;
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
    const inclusive: FetchChunk = async (after, limit) => rows.filter((r) => after === undefined || r.wm >= Number(after)).slice(0, limit);
    const s = new WatermarkChunkSource(inclusive, { watermarkField: "wm", chunkSize: 3 });
    await expect(readAll(s)).rejects.toThrow(/strict ">"/);
  });
});

// ---------------------------------------------------------------------------------------------
// The Python form of the call: `fetch_chunk(after, limit)`, `after` the last watermark value.

type Wm = { id: number; name: string };

/** Rows 0..n-1, unique watermark `id`, ordered. */
function unique(n: number): Wm[] {
  return Array.from({ length: n }, (_, id) => ({ id, name: `row ${id}` }));
}

/** The fetch a user writes from the spec: rows with id > after (all at first), at most limit. */
function specFetch(rows: Wm[], calls: unknown[][] = []): FetchChunk {
  return async (after, limit, until) => {
    calls.push([after, limit, until]);
    return rows.filter((r) => after == null || r.id > (after as number)).slice(0, limit);
  };
}

async function readIds(s: WatermarkChunkSource): Promise<{ ids: number[]; error?: unknown }> {
  const ids: number[] = [];
  try {
    for await (const r of s.read({ mode: "available_now", signal: new AbortController().signal })) ids.push((r.value as Wm).id);
  } catch (error) {
    return { ids, error };
  }
  return { ids };
}

describe("WatermarkChunkSource in the Python form (after = the last watermark value)", () => {
  it("the spec's fetch(after, limit) with `>`: 250 unique ids, chunkSize 100 — every row exactly once", async () => {
    const rows = unique(250);
    const calls: unknown[][] = [];
    const s = new WatermarkChunkSource(specFetch(rows, calls), { watermarkField: "id", chunkSize: 100 });
    const { ids, error } = await readIds(s);
    expect(error).toBeUndefined();
    expect(ids).toEqual(rows.map((r) => r.id));
    expect(s.currentCursor()).toEqual({ watermark: 249 });
    // `after` is undefined on the first call, then a plain number — never an object.
    expect(calls[0]![0]).toBeUndefined();
    expect(calls.slice(1).every(([after]) => typeof after === "number")).toBe(true);
  });

  it("with uniqueWatermark, a resumed cursor and fetchMax: `after` and `until` are plain values too", async () => {
    const rows = unique(250);
    const calls: unknown[][] = [];
    const make = () =>
      new WatermarkChunkSource(specFetch(rows, calls), {
        watermarkField: "id",
        uniqueWatermark: true,
        chunkSize: 100,
        fetchMax: async () => rows.at(-1)!.id,
      });
    const first = make();
    await first.endCursor?.();
    const head: number[] = [];
    for await (const r of first.read({ mode: "available_now", signal: new AbortController().signal })) {
      head.push((r.value as Wm).id);
      if (head.length === 120) break;
    }
    const second = make();
    await second.seek(first.currentCursor());
    expect(await second.endCursor?.()).toEqual({ watermark: 249 });
    const { ids, error } = await readIds(second);
    expect(error).toBeUndefined();
    expect([...head, ...ids]).toEqual(rows.map((r) => r.id));
    expect(calls.every(([after, , until]) => (after === undefined || typeof after === "number") && (until === undefined || until === 249))).toBe(true);
  });

  it("the position form stays for callers who ask: fetchAfter \"position\" passes { watermark }", async () => {
    const rows = unique(250);
    const s = new WatermarkChunkSource(
      async (after, limit) => rows.filter((r) => after === undefined || r.id > Number(after.watermark)).slice(0, limit),
      { watermarkField: "id", chunkSize: 100, fetchAfter: "position" },
    );
    const { ids, error } = await readIds(s);
    expect(error).toBeUndefined();
    expect(ids).toEqual(rows.map((r) => r.id));
  });

  it("a fetchMax of the Python form returning a { watermark } object is refused, naming fetchAfter", async () => {
    const s = new WatermarkChunkSource(specFetch(unique(3)), {
      watermarkField: "id",
      fetchMax: (async () => ({ watermark: 2 })) as never,
    });
    await expect(s.endCursor!()).rejects.toThrow(/fetchMax\(\) result.*plain value.*fetchAfter: "position"/);
  });
});

describe("a chunk that cannot be right stops the read with a WatermarkOrderError, never ends it", () => {
  /** Answers the first call, then compares `after` the wrong way (an object where a value is, or the reverse). */
  const answersOnce = (rows: Wm[]) => {
    let first = true;
    return async (_after: unknown, limit: number) => {
      const page = first ? rows.slice(0, limit) : [];
      first = false;
      return page;
    };
  };

  it("ties allowed: an empty chunk after a full one whose tail was held back (the reported loss)", async () => {
    const s = new WatermarkChunkSource(answersOnce(unique(250)), { watermarkField: "id", chunkSize: 100 });
    const { ids, error } = await readIds(s);
    expect(error).toBeInstanceOf(WatermarkOrderError);
    expect(String(error)).toMatch(/fetchChunk\(98, 100\) returned no rows, but the chunk before held rows from \(99\) on/);
    expect(String(error)).toMatch(/`after` is a plain watermark value \(undefined on the first call\): the query must select the rows where id > after/);
    expect(ids).toHaveLength(99);
    expect(s.currentCursor()).toEqual({ watermark: 98 });
  });

  it("the position form fed to a value comparison: the same refusal, saying what `after` is", async () => {
    const rows = unique(250);
    // `r.id > after` with after an object is always false.
    const s = new WatermarkChunkSource(
      async (after, limit) => rows.filter((r) => after === undefined || r.id > (after as unknown as number)).slice(0, limit),
      { watermarkField: "id", chunkSize: 100, fetchAfter: "position" },
    );
    const { error } = await readIds(s);
    expect(error).toBeInstanceOf(WatermarkOrderError);
    expect(String(error)).toMatch(/`after` is \{ watermark \}: the query must select the rows where id > after.watermark/);
  });

  it("the one-row overlap: a chunk that does not start again with the last row handed out", async () => {
    const s = new WatermarkChunkSource(answersOnce(unique(250)), { watermarkField: "id", uniqueWatermark: true, chunkSize: 100 });
    const { ids, error } = await readIds(s);
    expect(error).toBeInstanceOf(WatermarkOrderError);
    expect(String(error)).toMatch(/fetchChunk\(98, 101\) was expected to start again with \(99\), the last row handed out .* but returned no rows/);
    expect(ids).toHaveLength(100);
  });

  it("the one-row overlap: a row that appears behind the cursor (committed late) is refused, not skipped", async () => {
    // Even ids; after the first chunk (0..198) the odd id 197 commits, between the last two rows read.
    const rows = Array.from({ length: 150 }, (_, i) => ({ id: i * 2, name: `row ${i * 2}` }));
    const fetch = specFetch(rows);
    let calls = 0;
    const s = new WatermarkChunkSource(
      async (after, limit, until, signal) => {
        if (calls++ === 1) rows.splice(99, 0, { id: 197, name: "late" });
        return fetch(after, limit, until, signal);
      },
      { watermarkField: "id", uniqueWatermark: true, chunkSize: 100 },
    );
    const { ids, error } = await readIds(s);
    expect(error).toBeInstanceOf(WatermarkOrderError);
    expect(String(error)).toMatch(/a row at \(197\) came back between \(196\) and \(198\).*starts with \(200\)/);
    expect(ids).toHaveLength(100);
  });

  it("the last row deleted between two chunks is no error: the rest is read, nothing refused", async () => {
    const rows = unique(250);
    const fetch = specFetch(rows);
    let calls = 0;
    const s = new WatermarkChunkSource(
      async (after, limit, until, signal) => {
        if (calls++ === 1) rows.splice(99, 1); // row 99, the last one handed out
        return fetch(after, limit, until, signal);
      },
      { watermarkField: "id", uniqueWatermark: true, chunkSize: 100 },
    );
    const { ids, error } = await readIds(s);
    expect(error).toBeUndefined();
    expect(ids).toEqual(Array.from({ length: 250 }, (_, i) => i));
  });

  it("watermarks going backwards, and more rows than the limit", async () => {
    const rows = unique(250);
    const backwards = new WatermarkChunkSource(async (_after, limit) => rows.slice(0, limit), { watermarkField: "id", chunkSize: 100 });
    const back = await readIds(backwards);
    expect(back.error).toBeInstanceOf(WatermarkOrderError);
    expect(String(back.error)).toMatch(/rows out of order: \(0\) came after \(98\)/);

    const descending = new WatermarkChunkSource(async () => [{ id: 5 }, { id: 3 }], { watermarkField: "id", chunkSize: 100 });
    expect((await readIds(descending)).error).toBeInstanceOf(WatermarkOrderError);

    const tooMany = new WatermarkChunkSource(async () => rows, { watermarkField: "id", chunkSize: 100 });
    const many = await readIds(tooMany);
    expect(many.error).toBeInstanceOf(WatermarkOrderError);
    expect(String(many.error)).toMatch(/returned 250 rows; expected at most 100/);
    expect(many.ids).toEqual([]);
  });
});
