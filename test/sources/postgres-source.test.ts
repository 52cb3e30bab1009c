/**
 * `{"type": "postgres", ...}`: the keyset backfill built from a JSON config (what `lakelogic run`,
 * a contract's `source:` block, `lakelogic start` and schedules hand to `createSource`), on a real
 * PostgreSQL server (test/support/postgres.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { streamInputOf } from "../../src/cli/temporal-flags.js";
import { loadContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { assertNoLiteralSecrets, createSource, sourceSpecs } from "../../src/sources/registry.js";
import type { CursorSource, Source } from "../../src/sources/core/types.js";
import { subqueryOf } from "../../src/sources/watermark/query-text.js";
import { startPostgres } from "../support/postgres.js";
import { requireService } from "../support/services.js";

const tmp = mkdtempSync(join(tmpdir(), "ll-pg-source-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Beyond 2^53: a JavaScript number would round it. */
const BIG = "9007199254740993";
const ENV = "LL_TEST_PG_SOURCE_URL";

const CONTRACT = `dataset: pg_orders
primary_key: [id]
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: updated_at, type: timestamp, required: true }
    - { name: amount, type: double, required: true }
    - { name: big, type: long }
quality:
  row_rules:
    - range: { field: amount, min: 0 }
materialization: { strategy: merge, format: duckdb }
quarantine: { enabled: true }
`;

async function refusal(config: Record<string, unknown>): Promise<ConfigError> {
  const err = await createSource({ type: "postgres", ...config }).then(
    (s: Source) => s,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe("postgres source: options", () => {
  const base = { url: `env:${ENV}`, watermarkField: "updated_at", tieBreakerField: "id" };
  beforeAll(() => void (process.env[ENV] = "postgres://app@127.0.0.1:1/db"));
  afterAll(() => void delete process.env[ENV]);

  it("is a registered source type with a spec", () => {
    const spec = sourceSpecs().find((s) => s.type === "postgres");
    expect(spec?.kind).toBe("cursor");
    expect(spec?.options["url"]?.secret).toBe(true);
  });

  it("needs exactly one of table and query", async () => {
    expect((await refusal(base)).message).toMatch(/source postgres: table.*one of "table".*"query"/);
    expect((await refusal({ ...base, table: "orders", query: "SELECT * FROM orders" })).message).toMatch(/not both/);
  });

  it("refuses a connection string written into the config, without echoing it", async () => {
    const literal = await refusal({ ...base, url: "postgres://app:hunter2@db.internal/orders", table: "orders" });
    expect(literal.message).toMatch(/source postgres: url.*env:POSTGRES_URL/);
    expect(literal.message).not.toMatch(/hunter2/);
    expect(() => assertNoLiteralSecrets({ type: "postgres", ...base, url: "postgres://app:hunter2@db/orders", table: "t" })).toThrow(/url/);
    // Even without a password: a URL is kept by reference (documented), or holds ${ENV:…} for the password.
    expect((await refusal({ ...base, url: "postgres://app@db/orders", table: "orders" })).message).toMatch(/env:/);
    await expect(createSource({ type: "postgres", ...base, url: "postgres://app:${ENV:" + ENV + "}@db/orders", table: "t" })).resolves.toBeDefined();
  });

  it("refuses paging on the watermark alone unless it is declared unique, and bad queries", async () => {
    expect((await refusal({ url: base.url, watermarkField: "updated_at", table: "orders" })).message).toMatch(/tieBreakerField.*uniqueWatermark/);
    expect((await refusal({ ...base, query: "SELECT 1; DROP TABLE orders" })).message).toMatch(/query.*one statement/);
    expect((await refusal({ ...base, query: "SELECT * FROM t) AS x, (SELECT 1" })).message).toMatch(/query.*parenthes/);
    expect((await refusal({ ...base, query: "SELECT * FROM t WHERE id > $1" })).message).toMatch(/query.*\$1/);
    expect((await refusal({ ...base, query: "DELETE FROM t" })).message).toMatch(/query.*SELECT/);
    expect((await refusal({ ...base, table: "orders", chunkSize: 0 })).message).toMatch(/chunkSize/);
    expect((await refusal({ ...base, url: "env:LL_TEST_PG_UNSET_VAR", table: "orders" })).message).toMatch(/LL_TEST_PG_UNSET_VAR.*not set/);
  });

  it("query check: parentheses, semicolons and $ inside quotes, dollar quotes and comments are text", () => {
    const ok = [
      "SELECT * FROM t WHERE note = ')' OR note = 'it''s;'",
      "SELECT * FROM t WHERE note = E'\\')' -- a ) comment",
      "SELECT $$ ); $1 $$ AS x, $tag$ ) $tag$ AS y, \"a)$1\" FROM t /* ) /* nested ; */ $1 */",
      "WITH r AS (SELECT * FROM t) SELECT * FROM r;  ;",
      "(SELECT * FROM t)",
    ];
    for (const query of ok) expect(subqueryOf(query), query).toMatch(/^\(\n[\s\S]*\n\) AS "lakelogic_rows"$/);
    expect(subqueryOf("SELECT 1; -- done\n")).toBe('(\nSELECT 1\n) AS "lakelogic_rows"');
    for (const query of ["SELECT 'open", "SELECT 1 /* open", "SELECT $x$ open", "SELECT (1", "SELECT 1) x", "SELECT 1; SELECT 2"]) {
      expect(() => subqueryOf(query), query).toThrow(ConfigError);
    }
  });

  it("start / schedules: the workflow input keeps the reference; a literal URL is refused before it is stored", async () => {
    const file = join(tmp, "pg_start.yaml");
    writeFileSync(file, `${CONTRACT}source: {type: postgres, url: "env:${ENV}", table: orders, watermark_field: updated_at, tie_breaker_field: id}\n`);
    const input = streamInputOf(file, {}, await loadContract(file), { fallback: "available_now", fromContract: true });
    expect(input.source).toMatchObject({ type: "postgres", url: `env:${ENV}` });
    expect(() => assertNoLiteralSecrets(input.source)).not.toThrow();
    expect(() => assertNoLiteralSecrets({ ...input.source, url: "postgres://app:pw@db/x" })).toThrow(/source postgres: url/);
  });
});

const server = await requireService("sources/postgres from JSON", () => startPostgres());
afterAll(async () => {
  await server?.stop();
});

describe.skipIf(!server)("postgres source on PostgreSQL", () => {
  let admin: pg.Client;
  let contractFile: string;
  beforeAll(async () => {
    process.env[ENV] = server!.url;
    admin = new pg.Client({ connectionString: server!.url });
    await admin.connect();
    await admin.query(`CREATE TABLE "Orders" (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, amount double precision NOT NULL, big bigint)`);
    // Ten rows, three watermark values: ties at every chunk boundary of chunkSize 3.
    const rows = Array.from({ length: 10 }, (_, i) => `(${i + 1}, '2026-01-01T00:00:0${Math.floor(i / 4)}Z', ${i === 6 ? -1 : i * 1.5}, ${i === 0 ? BIG : i})`);
    await admin.query(`INSERT INTO "Orders" VALUES ${rows.join(", ")}`);
    contractFile = join(tmp, "pg_orders.yaml");
    writeFileSync(contractFile, CONTRACT);
  });
  afterAll(async () => {
    delete process.env[ENV];
    await admin?.end();
  });

  const config = (extra: Record<string, unknown> = {}) => ({
    type: "postgres",
    url: `env:${ENV}`,
    table: "Orders",
    watermark_field: "updated_at",
    tie_breaker_field: "id",
    chunk_size: 3,
    ...extra,
  });

  async function lake(target: string) {
    const contract = await loadContract(contractFile);
    const good = await readTable(contract, { targetPath: target });
    const bad = await readQuarantine(contract, { targetPath: target });
    return { good, bad };
  }

  it("drains a table into the lake; a second run reads only the new rows, ties included", async () => {
    const contract = await loadContract(contractFile);
    const target = mkdtempSync(join(tmp, "lake-"));
    const checkpoint = join(tmp, "ck-table.sqlite");
    const run = async () => {
      const source = await createSource(config());
      return new StreamSink(contract, source, { targetPath: target, checkpoint, batchSize: 4 }).run("available_now");
    };
    const first = await run();
    expect(first).toMatchObject({ sourceCount: 10, goodCount: 9, badCount: 1 });
    const { good, bad } = await lake(target);
    const byId = new Map(good.map((r) => [String(r["id"]), r]));
    expect([...byId.keys()].sort((a, b) => Number(a) - Number(b))).toEqual(["1", "2", "3", "4", "5", "6", "8", "9", "10"]);
    expect(String(byId.get("1")!["big"])).toBe(BIG);
    expect(Number(byId.get("4")!["amount"])).toBe(4.5);
    expect(new Date(byId.get("9")!["updated_at"] as string | Date).toISOString()).toBe("2026-01-01T00:00:02.000Z");
    expect(bad.map((q) => Number((q.record as { id: unknown }).id))).toEqual([7]);

    // New rows: one tied with the last watermark read (a higher id), one later, one tied but with a lower id (never read: it sorts before the cursor).
    await admin.query(`INSERT INTO "Orders" VALUES (11, '2026-01-01T00:00:02Z', 1, 11), (12, '2026-01-01T00:00:05Z', 2, 12), (0, '2026-01-01T00:00:02Z', 3, 0)`);
    const second = await run();
    expect(second).toMatchObject({ sourceCount: 2, goodCount: 2, badCount: 0 });
    const after = await lake(target);
    expect(after.good.map((r) => Number(r["id"])).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12]);
    await admin.query(`DELETE FROM "Orders" WHERE id IN (0, 11, 12)`);
  });

  it("query form: the SELECT is paged as a subquery, comments and a trailing semicolon included", async () => {
    const contract = await loadContract(contractFile);
    const target = mkdtempSync(join(tmp, "lake-"));
    const query = `SELECT id, updated_at, amount, big FROM "Orders" WHERE amount >= 0 -- only the valid ones\n;`;
    const source = await createSource(config({ table: undefined, query }));
    const summary = await new StreamSink(contract, source, { targetPath: target, checkpoint: "memory" }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 9, goodCount: 9, badCount: 0 });
    expect((await lake(target)).good.map((r) => Number(r["id"])).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 8, 9, 10]);
  });

  it("the source is read-only and closes its connection with the source", async () => {
    const source = (await createSource(config({ table: undefined, query: "SELECT * FROM \"Orders\"" }))) as CursorSource;
    await source.seek(undefined);
    const it = source.read({ mode: "available_now", signal: new AbortController().signal })[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'lakelogic'`);
    expect(rows[0]).toEqual({ n: 1 });
    await it.return?.();
    await source.close?.();
    // The server ends the backend after the client said goodbye: wait for that, bounded.
    let left = 1;
    for (let i = 0; i < 200 && left > 0; i++) {
      const after = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'lakelogic'`);
      left = (after.rows[0] as { n: number }).n;
      if (left > 0) await new Promise((r) => setTimeout(r, 25));
    }
    expect(left).toBe(0);

    await admin.query("CREATE SEQUENCE orders_seq");
    const writer = (await createSource(config({ table: undefined, query: `SELECT id, updated_at, nextval('orders_seq') AS n FROM "Orders"` }))) as CursorSource;
    await writer.seek(undefined);
    const read = async () => {
      for await (const r of writer.read({ mode: "available_now", signal: new AbortController().signal })) void r;
    };
    await expect(read()).rejects.toThrow(/read-only transaction/);
    await writer.close?.();
    expect((await admin.query("SELECT last_value, is_called FROM orders_seq")).rows[0]).toMatchObject({ is_called: false });
  });

  it("settle is on by default from a JSON config: a row committed out of sequence order is not lost", async () => {
    await admin.query(`CREATE TABLE seq_orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text)`);
    await admin.query(`INSERT INTO seq_orders (note) VALUES ('one'), ('two'), ('three')`);
    const [a, b] = [new pg.Client(server!.url), new pg.Client(server!.url)];
    await Promise.all([a.connect(), b.connect()]);
    try {
      // A takes id 4 and stays open; B takes id 5 and commits first.
      await a.query("BEGIN");
      await a.query(`INSERT INTO seq_orders (note) VALUES ('late')`);
      await b.query(`INSERT INTO seq_orders (note) VALUES ('early')`);
      const source = (await createSource({ type: "postgres", url: `env:${ENV}`, table: "seq_orders", watermark_field: "id", unique_watermark: true })) as CursorSource;
      await source.seek(undefined);
      await source.endCursor?.();
      const ids: number[] = [];
      let done = false;
      const run = (async () => {
        for await (const r of source.read({ mode: "available_now", signal: new AbortController().signal })) ids.push(Number((r.value as { id: string }).id));
        done = true;
      })();
      // Until the source's connection has looked at the writers in flight (or the run ended without).
      const probed = async () =>
        (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'lakelogic' AND query LIKE '%pg_locks%'`)).rows.length > 0;
      while (!done && !(await probed())) await new Promise((r) => setTimeout(r, 10));
      await a.query("COMMIT");
      await run;
      await source.close?.();
      expect(ids).toEqual([1, 2, 3, 4, 5]);
      await expect(createSource({ type: "postgres", url: `env:${ENV}`, table: "t", watermark_field: "id", unique_watermark: true, settle: "never" })).rejects.toThrow(
        /settle.*auto, snapshot, time, off/,
      );
    } finally {
      await a.query("ROLLBACK");
      await Promise.all([a.end(), b.end()]);
    }
  });

  it("lakelogic run CONTRACT with the source in the contract", async () => {
    const file = join(tmp, "pg_orders_cli.yaml");
    writeFileSync(
      file,
      `${CONTRACT}source: {type: postgres, url: "env:${ENV}", table: Orders, watermark_field: updated_at, tie_breaker_field: id, chunk_size: 4}\n`,
    );
    let stdout = "";
    let stderr = "";
    const out = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t) };
    const target = join(tmp, "lake-cli");
    const checkpoint = join(tmp, "ck-cli.sqlite");
    const code = await main(["run", file, "--checkpoint", checkpoint, "--target-path", target, "--json"], out);
    // Nothing on stderr but the start line and the per-batch log lines.
    const lines = stderr.split("\n").filter((l) => l !== "");
    expect(lines.filter((l) => l.includes(" INFO  stream started "))).toHaveLength(1);
    expect(lines.filter((l) => !l.includes(" INFO  batch committed ") && !l.includes(" INFO  stream started "))).toEqual([]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ sourceCount: 10, goodCount: 9, badCount: 1 });
    stdout = "";
    expect(await main(["run", file, "--checkpoint", checkpoint, "--target-path", target, "--json"], out)).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ sourceCount: 0 });
  });
});
