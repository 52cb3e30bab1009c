/**
 * DuckDB alone for `bench:compare`, no LakeLogic: `duckdb-plain.ts <batches|file|ceiling>
 * <events.ndjson> <dir>` does in plain SQL what examples/orders.yaml asks — typed read, the same
 * rules, good rows merged on order_id, bad rows to a quarantine table — and prints
 * `{seconds, good, bad, stored, quarantined}`.
 *
 * - `batches`: the file read once, then merged 10,000 rows at a time (as a stream would);
 * - `file`: one merge of the whole file;
 * - `ceiling`: typed `read_json` + the rules with a plain insert (no merge): what DuckDB itself
 *   does on these two cores, the upper bound of any engine built on it.
 */
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

const [mode, input, dir] = process.argv.slice(2) as ["batches" | "file" | "ceiling", string, string];
const BATCH = 10_000;

const columns = `{order_id: 'BIGINT', customer_id: 'VARCHAR', amount: 'VARCHAR', currency: 'VARCHAR', status: 'VARCHAR', email: 'VARCHAR', quantity: 'VARCHAR', created_at: 'VARCHAR'}`;
// examples/orders.yaml: required fields, types, accepted values, the email regex, amount > 0, quantity 1..1000.
// `r.` names the text read; the bare names below are the typed columns.
const typed = `SELECT r.order_id, r.customer_id, TRY_CAST(r.amount AS DOUBLE) AS amount, r.currency, r.status, r.email,
  TRY_CAST(r.quantity AS INTEGER) AS quantity, TRY_CAST(r.created_at AS TIMESTAMPTZ) AS created_at,
  (r.amount IS NULL OR TRY_CAST(r.amount AS DOUBLE) IS NOT NULL) AND (r.quantity IS NULL OR TRY_CAST(r.quantity AS INTEGER) IS NOT NULL) AS typed_ok
  FROM read_json('${input.replace(/'/g, "''")}', format = 'newline_delimited', columns = ${columns}) r`;
const ok = `typed_ok AND order_id IS NOT NULL AND customer_id IS NOT NULL AND amount IS NOT NULL AND status IS NOT NULL
  AND (currency IS NULL OR currency IN ('EUR', 'USD', 'GBP'))
  AND status IN ('placed', 'paid', 'shipped', 'delivered', 'cancelled')
  AND (email IS NULL OR regexp_matches(email, '^[^@]+@[^@]+\\.[a-z]+$'))
  AND amount > 0 AND (quantity IS NULL OR quantity BETWEEN 1 AND 1000)`;
const cols = "order_id, customer_id, amount, currency, status, email, quantity, created_at";

const db = await DuckDBInstance.create(join(dir, "plain.duckdb"));
const conn = await db.connect();
const run = (sql: string) => conn.run(sql);
const one = async (sql: string) => Number((await conn.runAndReadAll(sql)).getRows()[0]![0]);

const key = mode === "ceiling" ? "" : " PRIMARY KEY";
await run(`CREATE TABLE orders (order_id BIGINT${key}, customer_id VARCHAR, amount DOUBLE, currency VARCHAR, status VARCHAR, email VARCHAR, quantity INTEGER, created_at TIMESTAMPTZ)`);
await run(`CREATE TABLE quarantine (order_id BIGINT, customer_id VARCHAR, amount DOUBLE, currency VARCHAR, status VARCHAR, email VARCHAR, quantity INTEGER, created_at TIMESTAMPTZ)`);

const started = performance.now();
if (mode === "batches") {
  await run(`CREATE TEMP TABLE staged AS SELECT row_number() OVER () AS rn, *, ${ok} AS good FROM (${typed})`);
  const total = await one("SELECT count(*) FROM staged");
  for (let from = 1; from <= total; from += BATCH) {
    const range = `rn BETWEEN ${from} AND ${from + BATCH - 1}`;
    await run("BEGIN");
    await run(`INSERT OR REPLACE INTO orders SELECT ${cols} FROM staged WHERE ${range} AND good`);
    await run(`INSERT INTO quarantine SELECT ${cols} FROM staged WHERE ${range} AND NOT good`);
    await run("COMMIT");
  }
} else {
  const insert = mode === "file" ? "INSERT OR REPLACE" : "INSERT";
  await run(`CREATE TEMP TABLE judged AS SELECT *, ${ok} AS good FROM (${typed})`);
  await run("BEGIN");
  await run(`${insert} INTO orders SELECT ${cols} FROM judged WHERE good`);
  await run(`INSERT INTO quarantine SELECT ${cols} FROM judged WHERE NOT good`);
  await run("COMMIT");
}
const seconds = (performance.now() - started) / 1000;
const stored = await one("SELECT count(*) FROM orders");
const quarantined = await one("SELECT count(*) FROM quarantine");
process.stdout.write(JSON.stringify({ seconds, good: stored, bad: quarantined, stored, quarantined }) + "\n");
conn.closeSync();
