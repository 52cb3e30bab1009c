/**
 * `npx tsx bench/merge.ts [--batches N] [--rows N] [--updates F]` — the merge strategies a DuckDB
 * target can use, on the lake's workload: batches of `--rows` (10,000) order rows, `--updates`
 * (0.25) of them re-writing keys already stored, each batch in its own transaction, the table
 * growing batch by batch. DuckDB alone, with the batch already in a temp table, so only the merge
 * is timed:
 *
 *   anti-join   DELETE … USING batch, then INSERT (no index): what the lake does today
 *   art         a PRIMARY KEY (ART index) and INSERT OR REPLACE
 *   merge-into  a PRIMARY KEY and DuckDB's MERGE INTO … WHEN MATCHED UPDATE … WHEN NOT MATCHED INSERT
 *   append      INSERT only, with the batch id; readers take the last version of each key, and the
 *               table is compacted every 20 batches (its cost counted here)
 *
 * Every strategy must end with the same rows (count and checksum) and stay the same when the last
 * batch is replayed (a crash between write and commit); one JSON line per strategy, then a summary.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";

const { values: flags } = parseArgs({
  options: { batches: { type: "string", default: "100" }, rows: { type: "string", default: "10000" }, updates: { type: "string", default: "0.25" } },
});
const BATCHES = Number(flags.batches);
const ROWS = Number(flags.rows);
const UPDATES = Number(flags.updates);
const COMPACT_EVERY = 20;
const STRATEGIES = ["anti-join", "art", "merge-into", "append"] as const;
type Strategy = (typeof STRATEGIES)[number];

const COLUMNS = "order_id BIGINT, customer_id VARCHAR, amount DECIMAL(12,2), currency VARCHAR, status VARCHAR, email VARCHAR, quantity INTEGER, created_at TIMESTAMPTZ";
const NAMES = "order_id, customer_id, amount, currency, status, email, quantity, created_at";

/**
 * Batch b: new keys continue from the last batch's, and `UPDATES` of the rows re-write keys
 * spread over everything stored so far (a deterministic hash, so every strategy gets the same).
 */
function batchSql(b: number): string {
  const fresh = Math.round(ROWS * (1 - UPDATES));
  const firstNew = b * fresh;
  return `SELECT CASE WHEN i < ${fresh} THEN ${firstNew} + i ELSE (hash(i * 7919 + ${b}) % greatest(${firstNew}, 1))::BIGINT END AS order_id,
    'c-' || (i % 5000) AS customer_id, ((i * 37 + ${b}) % 100000 / 100.0)::DECIMAL(12,2) AS amount,
    ['EUR','USD','GBP'][1 + i % 3] AS currency, ['placed','paid','shipped'][1 + (i + ${b}) % 3] AS status,
    'user' || i || '@example.com' AS email, (1 + i % 9)::INTEGER AS quantity,
    TIMESTAMPTZ '2026-01-01' + to_seconds(${b} * ${ROWS} + i) AS created_at
    FROM range(${ROWS}) r(i)`;
}

async function setUp(conn: DuckDBConnection, s: Strategy): Promise<void> {
  const pk = s === "art" || s === "merge-into" ? ", PRIMARY KEY (order_id)" : "";
  const batchCol = s === "append" ? ", __batch BIGINT" : "";
  await conn.run(`CREATE TABLE t (${COLUMNS}${batchCol}${pk})`);
}

async function mergeBatch(conn: DuckDBConnection, s: Strategy, b: number): Promise<void> {
  await conn.run("BEGIN");
  switch (s) {
    case "anti-join":
      await conn.run("DELETE FROM t USING batch s WHERE t.order_id = s.order_id");
      await conn.run(`INSERT INTO t SELECT ${NAMES} FROM batch`);
      break;
    case "art":
      await conn.run(`INSERT OR REPLACE INTO t SELECT ${NAMES} FROM batch`);
      break;
    case "merge-into":
      await conn.run(
        `MERGE INTO t USING batch s ON t.order_id = s.order_id
         WHEN MATCHED THEN UPDATE SET customer_id = s.customer_id, amount = s.amount, currency = s.currency, status = s.status,
           email = s.email, quantity = s.quantity, created_at = s.created_at
         WHEN NOT MATCHED THEN INSERT VALUES (s.order_id, s.customer_id, s.amount, s.currency, s.status, s.email, s.quantity, s.created_at)`,
      );
      break;
    case "append":
      await conn.run(`INSERT INTO t SELECT ${NAMES}, ${b} FROM batch`);
      if ((b + 1) % COMPACT_EVERY === 0) await compact(conn);
      break;
  }
  await conn.run("COMMIT");
}

/** The last version of every key: what readers of an append-and-compact table must select. */
const latest = `SELECT ${NAMES} FROM t QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY __batch DESC) = 1`;

async function compact(conn: DuckDBConnection): Promise<void> {
  await conn.run(`CREATE OR REPLACE TEMP TABLE compacted AS SELECT *, 0 AS __batch FROM (${latest})`);
  await conn.run("DELETE FROM t");
  await conn.run(`INSERT INTO t SELECT * FROM compacted`);
}

async function fingerprint(conn: DuckDBConnection, s: Strategy): Promise<{ rows: number; checksum: string }> {
  const from = s === "append" ? `(${latest})` : "t";
  const r = await conn.runAndReadAll(`SELECT count(*), sum(hash(${NAMES}))::VARCHAR FROM ${from}`);
  const [rows, checksum] = r.getRows()[0]!;
  return { rows: Number(rows), checksum: String(checksum) };
}

async function run(s: Strategy) {
  const dir = mkdtempSync(join(tmpdir(), `ll-merge-${s}-`));
  const db = await DuckDBInstance.create(join(dir, "t.duckdb"));
  const conn = await db.connect();
  try {
    await setUp(conn, s);
    const perBatch: number[] = [];
    for (let b = 0; b < BATCHES; b++) {
      await conn.run(`CREATE OR REPLACE TEMP TABLE batch AS SELECT * FROM (${batchSql(b)}) QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY created_at DESC) = 1`);
      const t0 = performance.now();
      await mergeBatch(conn, s, b);
      perBatch.push(performance.now() - t0);
    }
    const before = await fingerprint(conn, s);
    // The last batch again, as after a crash between its write and its commit.
    await mergeBatch(conn, s, BATCHES - 1);
    const replayed = await fingerprint(conn, s);
    const sorted = [...perBatch].sort((a, b) => a - b);
    const total = perBatch.reduce((a, b) => a + b, 0);
    return {
      bench: "merge-strategy",
      strategy: s,
      batches: BATCHES,
      rowsPerBatch: ROWS,
      updates: UPDATES,
      msPerBatch: Number((total / BATCHES).toFixed(1)),
      p50: Number(sorted[Math.floor(BATCHES / 2)]!.toFixed(1)),
      p95: Number(sorted[Math.floor(BATCHES * 0.95)]!.toFixed(1)),
      lastTenMs: Number((perBatch.slice(-10).reduce((a, b) => a + b, 0) / 10).toFixed(1)),
      rowsPerSec: Math.round((BATCHES * ROWS) / (total / 1000)),
      rows: before.rows,
      checksum: before.checksum,
      replaySafe: replayed.rows === before.rows && replayed.checksum === before.checksum,
    };
  } finally {
    conn.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Array<Awaited<ReturnType<typeof run>>> = [];
for (const s of STRATEGIES) {
  const r = await run(s);
  console.log(JSON.stringify(r));
  results.push(r);
}
const agree = results.every((r) => r.rows === results[0]!.rows && r.checksum === results[0]!.checksum && r.replaySafe);
const fastest = [...results].sort((a, b) => a.msPerBatch - b.msPerBatch)[0]!;
console.log(JSON.stringify({ bench: "merge-strategies", sameRows: agree, fastest: fastest.strategy, msPerBatch: Object.fromEntries(results.map((r) => [r.strategy, r.msPerBatch])) }));
if (!agree) process.exitCode = 1;
