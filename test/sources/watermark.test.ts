import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../../src/checkpoint/codec.js";
import { ConfigError } from "../../src/errors.js";
import { postgresChunkFetcher, postgresWatermarkSource, quoteIdent } from "../../src/sources/watermark/postgres.js";
import type { ReadOptions, RunMode } from "../../src/sources/core/types.js";
import {
  WatermarkChunkSource,
  WatermarkOrderError,
  type FetchChunk as FetchValue,
  type FetchChunkByPosition as FetchChunk,
  type FetchMax,
  type WatermarkPositionOptions,
  type WatermarkPosition,
  type WatermarkValue,
} from "../../src/sources/watermark/source.js";
import { startPostgres } from "../support/postgres.js";
import { requireService } from "../support/services.js";

// ---------------------------------------------------------------------------------------------
// helpers

type Row = Record<string, unknown>;

/** Through the checkpoint stores' typed JSON, as a committed cursor travels. */
function roundTrip(cursor: unknown): unknown {
  return decodeCursor(encodeCursor(cursor));
}

function opts(mode: RunMode, signal = new AbortController().signal): ReadOptions {
  return { mode, signal };
}

/** Read everything (or the first `limit` records) and return the row values. */
async function drain(source: WatermarkChunkSource, mode: RunMode = "available_now", limit = Infinity): Promise<Row[]> {
  const out: Row[] = [];
  if (limit <= 0) return out;
  for await (const record of source.read(opts(mode))) {
    out.push(record.value as Row);
    if (out.length >= limit) break;
  }
  return out;
}

function num(v: WatermarkValue | undefined): number {
  if (v instanceof Date) return v.getTime();
  return Number(v);
}

/**
 * An in-memory table with a correct keyset fetcher over numeric (wm, id), to test the source
 * without a database. `calls` counts fetches.
 */
function memoryTable(rows: Row[], wm = "wm", tbOrNull: string | null = "id") {
  const tb = tbOrNull ?? undefined;
  const key = (r: Row | WatermarkPosition, isPos: boolean): [number, number] => {
    const w = isPos ? (r as WatermarkPosition).watermark : (r as Row)[wm];
    const t = tb === undefined ? 0 : isPos ? (r as WatermarkPosition).tieBreaker : (r as Row)[tb];
    return [num(w as WatermarkValue), num(t as WatermarkValue)];
  };
  const cmp = (a: [number, number], b: [number, number]) => a[0] - b[0] || a[1] - b[1];
  const table = {
    rows,
    calls: 0,
    /** The Python form: `after` and `until` are plain watermark values. */
    fetchValue: ((after, limit, until, signal) =>
      table.fetchChunk(
        after === undefined ? undefined : { watermark: after },
        limit,
        until === undefined ? undefined : { watermark: until },
        signal,
      )) as FetchValue,
    maxValue: (async () => (await table.fetchMax())?.watermark) as FetchMax,
    fetchChunk: (async (after, limit, until) => {
      table.calls++;
      return [...table.rows]
        .filter((r) => r[wm] !== null && r[wm] !== undefined)
        .sort((a, b) => cmp(key(a, false), key(b, false)))
        .filter((r) => after === undefined || cmp(key(r, false), key(after, true)) > 0)
        .filter((r) => until === undefined || cmp(key(r, false), key(until, true)) <= 0)
        .slice(0, limit);
    }) as FetchChunk,
    fetchMax: async (): Promise<WatermarkPosition | undefined> => {
      const sorted = [...table.rows].sort((a, b) => cmp(key(a, false), key(b, false)));
      const last = sorted.at(-1);
      if (!last) return undefined;
      return tb === undefined
        ? { watermark: last[wm] as WatermarkValue }
        : { watermark: last[wm] as WatermarkValue, tieBreaker: last[tb] as WatermarkValue };
    },
  };
  return table;
}

/** `n` rows, ids shuffled against `groups` watermark values so ties are spread everywhere. */
function tiedRows(n: number, groups: number): Row[] {
  return Array.from({ length: n }, (_, i) => ({ id: i + 1, wm: ((i + 1) * 7919) % groups }));
}

function expectExactlyOnce(ids: unknown[], expected: number[]): void {
  const seen = ids.map((x) => Number(x));
  expect(seen.length).toBe(expected.length);
  expect(new Set(seen).size).toBe(seen.length);
  expect([...seen].sort((a, b) => a - b)).toEqual([...expected].sort((a, b) => a - b));
}

function source(table: ReturnType<typeof memoryTable>, extra: Partial<WatermarkPositionOptions> = {}) {
  return new WatermarkChunkSource(table.fetchChunk, {
    watermarkField: "wm",
    tieBreakerField: "id",
    chunkSize: 10,
    fetchMax: table.fetchMax,
    ...extra,
  });
}

// ---------------------------------------------------------------------------------------------
// unit tests: no database

describe("WatermarkChunkSource (in memory)", () => {
  it("rejects bad options with the option's name", () => {
    const t = memoryTable([]);
    expect(() => source(t, { chunkSize: 0 })).toThrow(ConfigError);
    expect(() => source(t, { chunkSize: 1.5 })).toThrow(/chunkSize/);
    expect(() => source(t, { idleBackoffMs: { initial: 100, max: 10 } })).toThrow(/idleBackoffMs/);
    expect(
      () => new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", tieBreakerField: "id", uniqueWatermark: true }),
    ).toThrow(/uniqueWatermark/);
    expect(
      () => new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", tieBreakerField: "id", fetchAfter: "value" } as never),
    ).toThrow(/fetchAfter.*cannot carry the tie-breaker/);
    expect(
      () => new WatermarkChunkSource(t.fetchChunk, { watermarkField: "wm", fetchAfter: "id" } as never),
    ).toThrow(/fetchAfter/);
  });

  it("empty table: available_now with a snapshot reads nothing and never fetches a chunk", async () => {
    const t = memoryTable([]);
    const s = source(t);
    await s.seek(undefined);
    expect(await s.endCursor?.()).toBeUndefined();
    expect(await drain(s)).toEqual([]);
    expect(t.calls).toBe(0);
    expect(s.currentCursor()).toBeUndefined();
  });

  it("empty table: available_now without fetchMax ends at the first short chunk", async () => {
    const t = memoryTable([]);
    const s = source(t, { fetchMax: undefined });
    expect(s.endCursor).toBeUndefined();
    expect(await drain(s)).toEqual([]);
    expect(t.calls).toBe(1);
  });

  it("chunkSize 1 with ties: every row exactly once, positions strictly increasing", async () => {
    const rows = tiedRows(300, 7);
    const t = memoryTable(rows);
    const s = source(t, { chunkSize: 1 });
    await s.endCursor?.();
    const positions: WatermarkPosition[] = [];
    const ids: unknown[] = [];
    for await (const r of s.read(opts("available_now"))) {
      positions.push(r.position as WatermarkPosition);
      ids.push((r.value as Row).id);
    }
    expectExactlyOnce(ids, rows.map((r) => r.id as number));
    for (let i = 1; i < positions.length; i++) {
      const a = positions[i - 1]!;
      const b = positions[i]!;
      expect(num(a.watermark) < num(b.watermark) || (a.watermark === b.watermark && num(a.tieBreaker) < num(b.tieBreaker))).toBe(true);
    }
  });

  it("all rows share one watermark: the tie-breaker pages through the group", async () => {
    const rows = Array.from({ length: 95 }, (_, i) => ({ id: (i * 37) % 95, wm: 42 }));
    const t = memoryTable(rows);
    const ids = (await drain(source(t, { chunkSize: 7 }))).map((r) => r.id);
    expectExactlyOnce(ids, rows.map((r) => r.id));
  });

  it("uniqueWatermark on a unique column reads everything", async () => {
    const rows = Array.from({ length: 57 }, (_, i) => ({ id: i, wm: i * 3 }));
    const t = memoryTable(rows, "wm", null);
    const s = new WatermarkChunkSource(t.fetchValue, { watermarkField: "wm", uniqueWatermark: true, chunkSize: 4, fetchMax: t.maxValue });
    await s.endCursor?.();
    expectExactlyOnce((await drain(s)).map((r) => r.id), rows.map((r) => r.id));
    expect(s.currentCursor()).toEqual({ watermark: 56 * 3 });
  });

  it("uniqueWatermark with ties inside a chunk: refuses instead of losing rows", async () => {
    const rows = Array.from({ length: 20 }, (_, i) => ({ id: i, wm: 5 }));
    const t = memoryTable(rows, "wm", null);
    const s = new WatermarkChunkSource(t.fetchValue, { watermarkField: "wm", uniqueWatermark: true, chunkSize: 4 });
    await expect(drain(s)).rejects.toThrow(WatermarkOrderError);
    await expect(drain(s)).rejects.toThrow(/not unique: set tieBreakerField/);
  });

  it("uniqueWatermark with a single tie exactly at a chunk boundary: the one-row overlap catches it", async () => {
    // wm 0..19 unique except rows 7 and 8, which share wm 7: with chunks of 4 the pair is split
    // between the 2nd chunk (…, 7) and the 3rd (7, …). Strict ">" alone would skip one of them.
    const rows = Array.from({ length: 20 }, (_, i) => ({ id: i, wm: i === 8 ? 7 : i }));
    const t = memoryTable(rows, "wm", null);
    const s = new WatermarkChunkSource(t.fetchValue, { watermarkField: "wm", uniqueWatermark: true, chunkSize: 4 });
    const seen: unknown[] = [];
    const err = await (async () => {
      try {
        for await (const r of s.read(opts("available_now"))) seen.push((r.value as Row).id);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(WatermarkOrderError);
    expect(String(err)).toMatch(/two rows share the position \(7\)/);
    // Nothing past the tie was handed out, so nothing was silently skipped.
    expect(seen.length).toBeLessThanOrEqual(8);
  });

  it("resumes from a cursor in the middle of a tie group with exactly the remainder", async () => {
    const rows = tiedRows(500, 9);
    const t = memoryTable(rows);
    const first = source(t, { chunkSize: 13 });
    await first.endCursor?.();
    const head = await drain(first, "available_now", 123);
    const cursor = roundTrip(first.currentCursor());
    const second = source(t, { chunkSize: 13 });
    await second.seek(cursor);
    await second.endCursor?.();
    const tail = await drain(second);
    expectExactlyOnce([...head, ...tail].map((r) => r.id), rows.map((r) => r.id as number));
    expect(tail.length).toBe(500 - 123);
  });

  it("currentCursor covers only records already yielded, not the rest of the fetched chunk", async () => {
    const rows = Array.from({ length: 30 }, (_, i) => ({ id: i, wm: Math.floor(i / 4) }));
    const t = memoryTable(rows);
    const s = source(t, { chunkSize: 10 });
    const it = s.read(opts("available_now"))[Symbol.asyncIterator]();
    expect(s.currentCursor()).toBeUndefined();
    await it.next();
    await it.next();
    const third = await it.next();
    expect(t.calls).toBe(1);
    expect(third.value.position).toEqual({ watermark: 0, tieBreaker: 2 });
    expect(s.currentCursor()).toEqual({ watermark: 0, tieBreaker: 2 });
    await it.return?.();
  });

  it("Date, bigint and bigint-as-string cursor values round-trip through a checkpoint", async () => {
    const base = Date.UTC(2024, 0, 1);
    const rows = Array.from({ length: 40 }, (_, i) => ({
      id: String(9_007_199_254_740_993n + BigInt(i)), // as pg returns int8
      seq: 10n ** 18n + BigInt(i),
      ts: new Date(base + Math.floor(i / 5) * 1000),
    }));
    // Keyset over (ts, id) where id is a digit string of constant width: string order = numeric order.
    const fetchChunk: FetchChunk = async (after, limit) =>
      rows
        .filter((r) => !after || r.ts.getTime() > num(after.watermark) || (r.ts.getTime() === num(after.watermark) && r.id > String(after.tieBreaker)))
        .slice(0, limit);
    const a = new WatermarkChunkSource(fetchChunk, { watermarkField: "ts", tieBreakerField: "id", chunkSize: 3 });
    const head = await drain(a, "available_now", 17);
    const cursor = roundTrip(a.currentCursor()) as WatermarkPosition;
    expect(cursor.watermark).toBeInstanceOf(Date);
    expect(cursor.tieBreaker).toBe(rows[16]!.id);
    const b = new WatermarkChunkSource(fetchChunk, { watermarkField: "ts", tieBreakerField: "id", chunkSize: 3 });
    await b.seek(cursor);
    const tail = await drain(b);
    expect([...head, ...tail].map((r) => r.id)).toEqual(rows.map((r) => r.id));

    // bigint as the watermark itself
    const fetchBig: FetchValue = async (after, limit) => rows.filter((r) => after === undefined || r.seq > (after as bigint)).slice(0, limit);
    const c = new WatermarkChunkSource(fetchBig, { watermarkField: "seq", uniqueWatermark: true, chunkSize: 6 });
    await drain(c, "available_now", 9);
    const big = roundTrip(c.currentCursor()) as WatermarkPosition;
    expect(big.watermark).toBe(10n ** 18n + 8n);
    const d = new WatermarkChunkSource(fetchBig, { watermarkField: "seq", uniqueWatermark: true, chunkSize: 6 });
    await d.seek(big);
    expect((await drain(d)).length).toBe(31);
  });

  it("refuses a fetcher that repeats the cursor row (>= instead of >)", async () => {
    const rows = tiedRows(50, 5);
    const t = memoryTable(rows);
    const inclusive: FetchChunk = async (after, limit, until, signal) => {
      const page = await t.fetchChunk(after, limit, until, signal);
      const current = after && rows.find((r) => r.id === after.tieBreaker);
      return current ? [current, ...page].slice(0, limit) : page;
    };
    const s = new WatermarkChunkSource(inclusive, { watermarkField: "wm", tieBreakerField: "id", chunkSize: 10 });
    await expect(drain(s)).rejects.toThrow(/strict ">"/);
  });

  it("refuses a chunk that brings back rows already yielded at the cursor's watermark (lossy cursor)", async () => {
    // Watermarks that lost precision on the way to JS: the database sees distinct values, the
    // source sees one. Tie-breakers are digit strings (as pg returns int8), which JS cannot order.
    const rows = Array.from({ length: 40 }, (_, i) => ({ id: String(i + 1), exact: i + 1, wm: new Date(0) }));
    const lossy: FetchChunk = async (after, limit) =>
      rows.filter((r) => !after || r.exact > 0 /* "after .000" is everything */).slice(0, limit);
    const s = new WatermarkChunkSource(lossy, { watermarkField: "wm", tieBreakerField: "id", chunkSize: 10 });
    const seen: unknown[] = [];
    await expect(
      (async () => {
        for await (const r of s.read(opts("available_now"))) seen.push((r.value as Row).id);
      })(),
    ).rejects.toThrow(/again after the cursor/);
    expect(seen.length).toBe(10); // the first chunk only; nothing was handed out twice
  });

  it("refuses rows out of keyset order", async () => {
    const unordered: FetchChunk = async (after) => (after ? [] : [{ id: 2, wm: 1 }, { id: 1, wm: 1 }]);
    const s = new WatermarkChunkSource(unordered, { watermarkField: "wm", tieBreakerField: "id", chunkSize: 10 });
    await expect(drain(s)).rejects.toThrow(/out of order/);
  });

  it("refuses rows without a watermark value, naming the field", async () => {
    const s = new WatermarkChunkSource(async () => [{ id: 1, wm: null }], {
      watermarkField: "wm",
      tieBreakerField: "id",
      chunkSize: 10,
    });
    await expect(drain(s)).rejects.toThrow(/no "wm" value/);
  });

  it("rejects a cursor of the wrong shape", async () => {
    const t = memoryTable([]);
    await expect(source(t).seek({ watermark: 1 })).rejects.toThrow(/tieBreaker/);
    await expect(source(t).seek(7)).rejects.toThrow(ConfigError);
    const unique = new WatermarkChunkSource(t.fetchValue, { watermarkField: "wm", uniqueWatermark: true, chunkSize: 1 });
    await expect(unique.seek({ watermark: 1, tieBreaker: 2 })).rejects.toThrow(/no tieBreakerField/);
  });

  it("stops at the snapshot row even when fetchChunk ignores `until`", async () => {
    const rows = tiedRows(100, 10);
    const t = memoryTable(rows);
    const ignoresUntil: FetchChunk = (after, limit, _until, signal) => t.fetchChunk(after, limit, undefined, signal);
    const s = new WatermarkChunkSource(ignoresUntil, {
      watermarkField: "wm",
      tieBreakerField: "id",
      chunkSize: 30,
      // (4, 96) is the last row of the wm-4 group: ids ≡ 6 (mod 10) have wm 4.
      fetchMax: async () => ({ watermark: 4, tieBreaker: 96 }),
    });
    await s.endCursor?.();
    const got = await drain(s);
    expect(s.currentCursor()).toEqual({ watermark: 4, tieBreaker: 96 });
    expectExactlyOnce(got.map((r) => r.id), rows.filter((r) => (r.wm as number) <= 4).map((r) => r.id as number));
  });

  it("continuous on an empty table backs off, and abort ends the read in the middle of a long sleep", async () => {
    const t = memoryTable([]);
    const s = source(t, { idleBackoffMs: { initial: 10, max: 60_000 } });
    const ac = new AbortController();
    const reading = (async () => {
      const out: unknown[] = [];
      for await (const r of s.read({ mode: "continuous", signal: ac.signal })) out.push(r);
      return out;
    })();
    // 10 + 20 + 40 + … ms: after ~600 ms at most 7 polls; a busy loop would make thousands.
    await new Promise((r) => setTimeout(r, 600));
    expect(t.calls).toBeGreaterThanOrEqual(2);
    expect(t.calls).toBeLessThanOrEqual(8);
    const before = t.calls;
    // Now asleep for seconds; abort must cut the sleep short (the guard fails the test otherwise).
    ac.abort();
    const guard = new Promise<"stuck">((r) => setTimeout(() => r("stuck"), 5_000).unref());
    expect(await Promise.race([reading, guard])).toEqual([]);
    expect(t.calls).toBe(before);
  });

  it("abort ends the read while a fetch is still in flight", async () => {
    let release!: () => void;
    const hanging: FetchChunk = () => new Promise((resolve) => (release = () => resolve([]))) ;
    const s = new WatermarkChunkSource(hanging, { watermarkField: "wm", tieBreakerField: "id", chunkSize: 5 });
    const ac = new AbortController();
    const reading = (async () => {
      for await (const _ of s.read({ mode: "continuous", signal: ac.signal })) {
        // nothing arrives
      }
      return "ended";
    })();
    await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    expect(await reading).toBe("ended");
    release();
  });

  it("one reader at a time", async () => {
    const t = memoryTable(tiedRows(30, 3));
    const s = source(t);
    const it1 = s.read(opts("continuous"))[Symbol.asyncIterator]();
    await it1.next();
    await expect(drain(s)).rejects.toThrow(/already running/);
    await it1.return?.();
  });
});

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a real server (test/support/postgres.ts), 100,000 rows, 1,000 distinct timestamps

const SUITE = "sources/watermark on PostgreSQL";
const server = await requireService(SUITE, () => startPostgres());
afterAll(async () => {
  await server?.stop();
});

const N = 100_000;
const GROUPS = 1_000; // 100 rows share each timestamp
const CHUNK = 977; // prime: tie groups straddle almost every chunk boundary
const BASE = Date.UTC(2024, 0, 1);

describe.skipIf(!server)("WatermarkChunkSource on PostgreSQL", () => {
  let client: pg.Client;
  let other: pg.Client;
  const allIds = Array.from({ length: N }, (_, i) => i + 1);

  async function createTable(name: string, rows: number): Promise<void> {
    const t = quoteIdent(name);
    await client.query(`DROP TABLE IF EXISTS ${t}`);
    await client.query(`CREATE TABLE ${t} (id bigint PRIMARY KEY, ts timestamptz NOT NULL, payload text NOT NULL)`);
    // id and ts are scrambled against each other, so each tie group holds ids from all over.
    await client.query(
      `INSERT INTO ${t} SELECT g, to_timestamp($1::double precision / 1000) + ((g * 7919) % $2) * interval '1 second', 'row ' || g
         FROM generate_series(1, $3::int) g`,
      [BASE, GROUPS, rows],
    );
    await client.query(`CREATE INDEX ON ${t} (ts, id)`);
    await client.query(`ANALYZE ${t}`);
  }

  beforeAll(async () => {
    client = new pg.Client(server!.url);
    other = new pg.Client(server!.url);
    await client.connect();
    await other.connect();
    await createTable("events", N);
  });

  afterAll(async () => {
    await client?.end();
    await other?.end();
  });

  it("the data set has ties at chunk boundaries: strict '>' on the watermark alone loses rows (shortcoming 9)", async () => {
    let after: Date | undefined;
    let total = 0;
    for (;;) {
      const { rows } = await client.query<{ ts: Date }>(
        after
          ? `SELECT ts FROM events WHERE ts > $1 ORDER BY ts LIMIT ${CHUNK}`
          : `SELECT ts FROM events ORDER BY ts LIMIT ${CHUNK}`,
        after ? [after] : [],
      );
      if (rows.length === 0) break;
      total += rows.length;
      after = rows.at(-1)!.ts;
    }
    expect(total).toBeLessThan(N);
  });

  it("full drain returns every row exactly once", async () => {
    const s = postgresWatermarkSource(client, {
      table: "events",
      watermarkColumn: "ts",
      tieBreakerColumn: "id",
      chunkSize: CHUNK,
    });
    await s.seek(undefined);
    const end = (await s.endCursor?.()) as WatermarkPosition;
    expect(end.watermark).toEqual(new Date(BASE + (GROUPS - 1) * 1000));
    const rows = await drain(s);
    expectExactlyOnce(rows.map((r) => r.id), allIds);
    expect(s.currentCursor()).toEqual(end);
  });

  it("resume from a mid-way cursor (inside a tie group) returns exactly the remainder", async () => {
    const make = () =>
      postgresWatermarkSource(client, { table: "events", watermarkColumn: "ts", tieBreakerColumn: "id", chunkSize: CHUNK });
    const first = make();
    await first.endCursor?.();
    const head = await drain(first, "available_now", 43_210);
    const cursor = roundTrip(first.currentCursor()) as WatermarkPosition;
    expect(cursor.watermark).toBeInstanceOf(Date);
    expect(typeof cursor.tieBreaker).toBe("string"); // int8 comes back from pg as a string
    // The cut is inside a group of 100 equal timestamps.
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE ts = $1 AND id > $2`, [
      cursor.watermark,
      cursor.tieBreaker,
    ]);
    expect(Number(rows[0]!.n)).toBeGreaterThan(0);

    const second = make();
    await second.seek(cursor);
    await second.endCursor?.();
    const tail = await drain(second);
    expect(tail.length).toBe(N - 43_210);
    expectExactlyOnce([...head, ...tail].map((r) => r.id), allIds);
  });

  it("uniqueWatermark on the non-unique timestamp is refused; on the unique id it drains exactly", async () => {
    const wrong = postgresWatermarkSource(client, { table: "events", watermarkColumn: "ts", chunkSize: CHUNK });
    await expect(drain(wrong)).rejects.toThrow(WatermarkOrderError);
    const byId = postgresWatermarkSource(client, { table: "events", watermarkColumn: "id", chunkSize: 4_999 });
    await byId.endCursor?.();
    expectExactlyOnce((await drain(byId)).map((r) => r.id), allIds);
  });

  it("available_now stops at the snapshot while another connection inserts; the next run reads those rows", async () => {
    await createTable("events_live", N);
    const fetcher = postgresChunkFetcher(client, { table: "events_live", watermarkColumn: "ts", tieBreakerColumn: "id" });
    const make = () => new WatermarkChunkSource(fetcher.fetchChunk, { ...fetcher.sourceOptions, fetchMax: fetcher.fetchMax, chunkSize: CHUNK });
    const lastTs = BASE + (GROUPS - 1) * 1000;
    const inserted: number[] = [];
    let nextId = 1_000_001;
    const insert = async (count: number, sameTsAsEnd: boolean) => {
      const values: unknown[] = [];
      const tuples: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = nextId++;
        // Some rows tie with the snapshot's last timestamp (larger id: after the snapshot), the rest are newer.
        const ts = new Date(sameTsAsEnd ? lastTs : lastTs + (id - 1_000_000) * 10);
        values.push(id, ts);
        tuples.push(`($${values.length - 1}, $${values.length}, 'late')`);
        inserted.push(id);
      }
      await other.query(`INSERT INTO events_live (id, ts, payload) VALUES ${tuples.join(", ")}`, values);
    };

    const run1 = make();
    await run1.seek(undefined);
    await run1.endCursor?.();
    // A producer keeps inserting on its own connection while the drain runs.
    let producing = true;
    const producer = (async () => {
      let round = 0;
      while (producing) {
        await insert(25, round++ % 3 === 0);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const seen1: Row[] = [];
    for await (const r of run1.read(opts("available_now"))) {
      seen1.push(r.value as Row);
      if (seen1.length === 10_000 || seen1.length === 60_000) await insert(50, seen1.length === 10_000);
    }
    producing = false;
    await producer;
    expect(inserted.length).toBeGreaterThan(100);
    expectExactlyOnce(seen1.map((r) => r.id), allIds);

    const run2 = make();
    await run2.seek(roundTrip(run1.currentCursor()));
    await run2.endCursor?.();
    const seen2 = await drain(run2);
    expectExactlyOnce(seen2.map((r) => r.id), inserted);
    expect(seen2.every((r) => r.payload === "late")).toBe(true);
  });

  it("continuous: backs off while idle (bounded fetch calls), resets on new rows, abort ends it", async () => {
    await createTable("events_cont", 5_000);
    const fetcher = postgresChunkFetcher(client, { table: "events_cont", watermarkColumn: "ts", tieBreakerColumn: "id" });
    let calls = 0;
    const counted: FetchChunk = (...args) => {
      calls++;
      return fetcher.fetchChunk(...args);
    };
    const s = new WatermarkChunkSource(counted, {
      ...fetcher.sourceOptions,
      chunkSize: 500,
      idleBackoffMs: { initial: 20, max: 200 },
    });
    const ac = new AbortController();
    const ids: number[] = [];
    const reading = (async () => {
      for await (const r of s.read({ mode: "continuous", signal: ac.signal })) ids.push(Number((r.value as Row).id));
    })();
    const waitFor = async (n: number) => {
      for (let i = 0; i < 600 && ids.length < n; i++) await new Promise((r) => setTimeout(r, 50));
      expect(ids.length).toBe(n);
    };
    await waitFor(5_000);
    const atIdle = calls;
    await new Promise((r) => setTimeout(r, 1_500));
    // Sleeps 20, 40, 80, 160, then 200 ms: about 11 polls in 1.5 s. A busy loop would make thousands.
    const idleCalls = calls - atIdle;
    expect(idleCalls).toBeGreaterThanOrEqual(2);
    expect(idleCalls).toBeLessThanOrEqual(20);

    // An hour old: well behind the settle horizon (settleMs, 10 s by default), after every row there.
    await other.query(
      `INSERT INTO events_cont SELECT g, date_trunc('milliseconds', now()) - interval '1 hour' + g * interval '1 millisecond', 'new'
         FROM generate_series(10001, 10100) g`,
    );
    await waitFor(5_100);
    ac.abort();
    const guard = new Promise<"stuck">((r) => setTimeout(() => r("stuck"), 5_000).unref());
    expect(await Promise.race([reading.then(() => "ended"), guard])).toBe("ended");
    expect(new Set(ids).size).toBe(5_100);
  });

  describe("timestamps with microseconds", () => {
    beforeAll(async () => {
      await client.query(`DROP TABLE IF EXISTS events_us`);
      await client.query(`CREATE TABLE events_us (id bigint PRIMARY KEY, ts timestamptz NOT NULL)`);
      // 7 µs apart: ~143 rows share each millisecond, which a JS Date cannot tell apart.
      await client.query(
        `INSERT INTO events_us SELECT g, timestamptz '2024-01-01 00:00:00+00' + (g * 7) * interval '1 microsecond'
           FROM generate_series(1, 3000) g`,
      );
    });

    it("read as JS Dates they are refused with an explanation, not repeated or skipped", async () => {
      const s = postgresWatermarkSource(client, { table: "events_us", watermarkColumn: "ts", tieBreakerColumn: "id", chunkSize: 100 });
      await expect(drain(s)).rejects.toThrow(/again after the cursor had passed it.*microseconds/);
    });

    it("a run resumed in the middle of such a millisecond is refused before it yields anything", async () => {
      const s = postgresWatermarkSource(client, { table: "events_us", watermarkColumn: "ts", tieBreakerColumn: "id", chunkSize: 500 });
      // Row 50 sits at 00:00:00.000350: the Date cursor says .000, so "after it" re-reads rows 1..49.
      const { rows } = await client.query<{ ts: Date; id: string }>(`SELECT ts, id FROM events_us WHERE id = 50`);
      await s.seek({ watermark: rows[0]!.ts, tieBreaker: rows[0]!.id });
      const seen: unknown[] = [];
      await expect(
        (async () => {
          for await (const r of s.read(opts("available_now"))) seen.push(r);
        })(),
      ).rejects.toThrow(WatermarkOrderError);
      expect(seen).toEqual([]);
    });

    it("read as text (a per-client type parser) they page exactly", async () => {
      const TIMESTAMPTZ_OID = 1184;
      const textClient = new pg.Client({
        connectionString: server!.url,
        types: {
          getTypeParser: ((oid: number, format?: "text" | "binary") =>
            oid === TIMESTAMPTZ_OID ? (value: string) => value : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
        },
      });
      await textClient.connect();
      try {
        const s = postgresWatermarkSource(textClient, { table: "events_us", watermarkColumn: "ts", tieBreakerColumn: "id", chunkSize: 100 });
        await s.endCursor?.();
        const rows = await drain(s);
        expectExactlyOnce(rows.map((r) => r.id), Array.from({ length: 3000 }, (_, i) => i + 1));
        expect(typeof (s.currentCursor() as WatermarkPosition).watermark).toBe("string");
      } finally {
        await textClient.end();
      }
    });
  });
});
