/**
 * The settle horizon of the PostgreSQL keyset source on a real server (test/support/postgres.ts):
 * transactions that commit out of watermark order lose no row with the defaults. Every step is
 * driven by events (a transaction held open on its own connection, the source's queries seen
 * through a client wrapper), never by sleeping; the timestamp horizon uses values hours apart.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import type { ReadOptions, RunMode } from "../../src/sources/core/types.js";
import type { WatermarkChunkSource } from "../../src/sources/watermark/source.js";
import { postgresWatermarkSource, type PostgresWatermarkSourceOptions, type SqlQueryable } from "../../src/sources/watermark/postgres.js";
import { startPostgres } from "../support/postgres.js";
import { requireService } from "../support/services.js";

const server = await requireService("sources/postgres settle horizon", () => startPostgres());
afterAll(async () => {
  await server?.stop();
});

type Row = Record<string, unknown>;

function opts(mode: RunMode, signal = new AbortController().signal): ReadOptions {
  return { mode, signal };
}

async function drain(source: WatermarkChunkSource): Promise<number[]> {
  const ids: number[] = [];
  for await (const r of source.read(opts("available_now"))) ids.push(Number((r.value as Row).id));
  return ids;
}

/**
 * A client that tells the test what the source asked: `next(test)` resolves with the rows of the
 * next query (from now on) whose text passes `test`.
 */
function watched(client: pg.Client) {
  const waiting: Array<{ test: (sql: string, rows: Row[]) => boolean; resolve: (rows: Row[]) => void }> = [];
  const queryable: SqlQueryable = {
    async query(text, values) {
      const result = await client.query<Row>(text, values);
      for (const w of [...waiting]) {
        if (w.test(text, result.rows)) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve(result.rows);
        }
      }
      return result;
    },
  };
  const next = (test: (sql: string, rows: Row[]) => boolean) => new Promise<Row[]>((resolve) => waiting.push({ test, resolve }));
  /** A probe of the horizon that saw a transaction writing the table. */
  const probeSeesWriter = () => next((sql, rows) => sql.includes("pg_locks") && ((rows[0]?.["lakelogic_writers"] as unknown[]) ?? []).length > 0);
  /** `n` chunk queries (not probes) answered from now on. */
  const chunks = (n: number) => {
    let left = n;
    return next((sql) => sql.includes("ORDER BY") && sql.includes("LIMIT $") && !sql.includes("pg_locks") && --left === 0);
  };
  return { queryable, probeSeesWriter, chunks };
}

describe.skipIf(!server)("postgres source: settle horizon", () => {
  let reader: pg.Client;
  let txnA: pg.Client;
  let txnB: pg.Client;

  beforeAll(async () => {
    [reader, txnA, txnB] = [new pg.Client(server!.url), new pg.Client(server!.url), new pg.Client(server!.url)];
    await Promise.all([reader.connect(), txnA.connect(), txnB.connect()]);
  });
  afterAll(async () => {
    await Promise.all([reader?.end(), txnA?.end(), txnB?.end()]);
  });

  // A test that failed half-way must not leave a transaction holding the tables.
  afterEach(async () => {
    await Promise.all([txnA.query("ROLLBACK"), txnB.query("ROLLBACK")]);
  });

  beforeEach(async () => {
    await reader.query("DROP TABLE IF EXISTS orders, audit");
    await reader.query("CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL)");
    await reader.query("CREATE TABLE audit (note text)");
    await reader.query("INSERT INTO orders (payload) VALUES ('one'), ('two'), ('three')");
  });

  /** Txn A takes id 4 and stays open; txn B takes id 5 and commits first. */
  async function outOfOrder(options: { bWritesFirst?: boolean } = {}): Promise<void> {
    await txnB.query("BEGIN");
    // B writes elsewhere first, so it has the older transaction id although it draws the larger value.
    if (options.bWritesFirst) await txnB.query("INSERT INTO audit VALUES ('b was here')");
    await txnA.query("BEGIN");
    expect((await txnA.query("INSERT INTO orders (payload) VALUES ('A, late') RETURNING id")).rows).toEqual([{ id: "4" }]);
    expect((await txnB.query("INSERT INTO orders (payload) VALUES ('B, early') RETURNING id")).rows).toEqual([{ id: "5" }]);
    await txnB.query("COMMIT");
  }

  const make = (client: SqlQueryable, extra: Partial<PostgresWatermarkSourceOptions> = {}) =>
    postgresWatermarkSource(client, { table: "orders", watermarkColumn: "id", chunkSize: 100, idleBackoffMs: { initial: 5, max: 20 }, ...extra });

  it("continuous, the default: a batch read while id 4 is in flight stops before id 5; once 4 commits, 4 and 5 follow", async () => {
    const w = watched(reader);
    const source = make(w.queryable);
    await source.seek(undefined);
    const ac = new AbortController();
    const ids: number[] = [];
    let arrived: () => void = () => undefined;
    const reading = (async () => {
      for await (const r of source.read(opts("continuous", ac.signal))) {
        ids.push(Number((r.value as Row).id));
        arrived();
      }
    })();
    const rows = (n: number) =>
      new Promise<void>((resolve) => {
        arrived = () => void (ids.length >= n && resolve());
        arrived();
      });

    await rows(3);
    expect(ids).toEqual([1, 2, 3]);
    await outOfOrder();
    // Two chunks answered after B's commit: the second was asked after the rows of the first were
    // taken, so whatever a poll could see of id 5 has arrived by then.
    await w.chunks(2);
    expect(ids).toEqual([1, 2, 3]);
    expect(source.currentCursor()).toEqual({ watermark: "3" });

    const more = rows(5);
    await txnA.query("COMMIT");
    await more;
    ac.abort();
    await reading;
    expect(ids).toEqual([1, 2, 3, 4, 5]);
  });

  it("available_now, the default: the run waits for the transaction writing when it started; B's older transaction id does not fool it", async () => {
    await outOfOrder({ bWritesFirst: true });
    const w = watched(reader);
    const source = make(w.queryable);
    await source.seek(undefined);
    expect(await source.endCursor?.()).toEqual({ watermark: "5" });
    const run = drain(source);
    await Promise.race([w.probeSeesWriter(), run]); // the first chunk waits for A (a run without a horizon ends here)
    await txnA.query("COMMIT");
    expect(await run).toEqual([1, 2, 3, 4, 5]);

    // Why not the rows' xmin against the snapshot's oldest transaction: B's row has the older one.
    const { rows } = await reader.query<{ id: string; xid: string }>("SELECT id, xmin::text AS xid FROM orders WHERE id IN (4, 5) ORDER BY id");
    expect(BigInt(rows[1]!.xid)).toBeLessThan(BigInt(rows[0]!.xid));
  });

  it("settle: \"off\" reads what is visible: id 5 passes the cursor and id 4, committed after, is lost", async () => {
    await outOfOrder();
    const first = make(reader, { settle: "off" });
    await first.endCursor?.();
    expect(await drain(first)).toEqual([1, 2, 3, 5]);
    await txnA.query("COMMIT");
    const second = make(reader, { settle: "off" });
    await second.seek(first.currentCursor());
    await second.endCursor?.();
    expect(await drain(second)).toEqual([]);
  });

  it("a sequence with CACHE > 1 cannot be settled: refused, naming the option; settle: \"time\" needs a timestamp", async () => {
    await reader.query("ALTER TABLE orders ALTER COLUMN id SET CACHE 20");
    const cached = make(reader);
    await cached.seek(undefined);
    const err = await drain(cached).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(String(err)).toMatch(/settle.*CACHE 20/);
    expect(await drain(make(reader, { settle: "off" }))).toEqual([1, 2, 3]);
    await expect(drain(make(reader, { settle: "time" }))).rejects.toThrow(/settle.*"time" needs a timestamp watermark; "id" is bigint/);
  });

  describe("timestamp watermarks: settleMs", () => {
    beforeEach(async () => {
      await reader.query("DROP TABLE IF EXISTS events");
      await reader.query("CREATE TABLE events (id bigint PRIMARY KEY, ts timestamptz(3) NOT NULL)");
      await reader.query("INSERT INTO events SELECT g, now() - interval '2 hours' + g * interval '1 second' FROM generate_series(1, 3) g");
      // A stamps 30 minutes ago and stays open; B stamps 20 minutes ago and commits first.
      await txnA.query("BEGIN");
      await txnA.query("INSERT INTO events VALUES (4, now() - interval '30 minutes')");
      await txnB.query("INSERT INTO events VALUES (5, now() - interval '20 minutes')");
    });

    const events = (settleMs?: number, settle?: "off") =>
      postgresWatermarkSource(reader, {
        table: "events",
        watermarkColumn: "ts",
        tieBreakerColumn: "id",
        ...(settleMs !== undefined ? { settleMs } : {}),
        ...(settle ? { settle } : {}),
      });

    it("rows younger than settleMs wait; a later run (a shorter horizon stands for time passing) reads the late one too", async () => {
      const first = events(3_600_000);
      await first.endCursor?.();
      expect(await drain(first)).toEqual([1, 2, 3]);
      await txnA.query("COMMIT");
      const second = events(60_000);
      await second.seek(first.currentCursor());
      await second.endCursor?.();
      expect(await drain(second)).toEqual([4, 5]);
    });

    it("settle: \"off\" reads B's row at once, and A's, committed after, is behind the cursor", async () => {
      const first = events(undefined, "off");
      await first.endCursor?.();
      expect(await drain(first)).toEqual([1, 2, 3, 5]);
      await txnA.query("COMMIT");
      const second = events(undefined, "off");
      await second.seek(first.currentCursor());
      await second.endCursor?.();
      expect(await drain(second)).toEqual([]);
    });

    it("the horizon is on by default: a row stamped an hour ahead stays out of the run", async () => {
      await txnA.query("COMMIT");
      await reader.query("INSERT INTO events VALUES (6, now() + interval '1 hour')");
      const s = events();
      await s.endCursor?.();
      expect(await drain(s)).toEqual([1, 2, 3, 4, 5]);
    });
  });
});
