/**
 * `npm run example:e2e` — the streaming guide's end-to-end walk, offline, on local servers:
 *
 *  1. lint the contracts;
 *  2. SSE → bronze through StreamSink (`lakelogic run`), SIGKILLed part-way and resumed from the
 *     feed's Last-Event-ID;
 *  3. an NDJSON file → bronze;
 *  4. a keyset backfill → bronze: a PostgreSQL table when PostgreSQL is provisioned, else an
 *     in-memory table through WatermarkChunkSource;
 *  5. Kafka → bronze through a Temporal worker (`lakelogic worker` + `lakelogic start --wait`),
 *     when Kafka and Temporal are provisioned;
 *  6. bronze → silver, reading the bronze table's committed batches;
 *  7. the count: every event in = good + quarantined, no order twice.
 *
 * Every source owns a range of order ids, so each count is known in advance. Nothing reaches the
 * internet; a missing server only leaves its step out (and is an error in CI).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { lakelogic, lakelogicOk } from "./cli.js";
import { expected, ndjson, range, serveSse } from "./feed.js";
import { startServers, type Servers } from "./servers.js";

const repo = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const BRONZE_CONTRACT = repo("contracts/bronze_orders.yaml");
const SILVER_CONTRACT = repo("contracts/silver_orders.yaml");

/** Order ids per step: [from, to). */
const SSE = [0, 6_000] as const;
const FILE = [6_000, 9_000] as const;
const BACKFILL = [9_000, 12_000] as const;
const KAFKA = [12_000, 15_000] as const;

const work = process.env.LAKELOGIC_E2E_DIR ?? mkdtempSync(join(tmpdir(), "lakelogic-e2e-"));
const bronzeLake = join(work, "lake", "bronze");
const silverLake = join(work, "lake", "silver");
const n = (x: number) => x.toLocaleString("en");
const step = (i: number, title: string) => console.log(`\n${i}. ${title}`);
const note = (text: string) => console.log(`   ${text}`);

/** Flags every bronze run shares: the walk's own lake, batches small enough to watch. */
const bronzeFlags = (key: string) => ["--target-path", bronzeLake, "--checkpoint-key", key, "--batch-size", "500"];

async function committedBatches(key: string): Promise<number> {
  const store = new SQLiteCheckpointStore(join(bronzeLake, "_lakelogic", "checkpoints.sqlite"));
  try {
    return (await store.load(key))?.batchId ?? 0;
  } finally {
    await store.close();
  }
}

async function sseStep(): Promise<void> {
  step(2, `SSE → bronze through StreamSink: ${n(SSE[1] - SSE[0])} order events from a local feed with event ids`);
  const feed = await serveSse(SSE[0], SSE[1]);
  try {
    const args = ["run", BRONZE_CONTRACT, "--source", JSON.stringify({ type: "sse", url: feed.url }), ...bronzeFlags("sse::orders")];
    const first = lakelogic(args, work);
    // Killed once two batches are committed: the third is somewhere between read and commit.
    for (;;) {
      if ((await committedBatches("sse::orders")) >= 2) break;
      const exited = await Promise.race([first.done.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 100))]);
      if (exited) throw new Error(`the first SSE run ended before it could be killed:\n${(await first.done).output.slice(-2000)}`);
    }
    first.child.kill("SIGKILL");
    await first.done;
    const at = await committedBatches("sse::orders");
    note(`SIGKILL after batch ${at} was committed; the run resumes from that batch's Last-Event-ID:`);
    await lakelogicOk(args, work);
    note(`drained: ${await committedBatches("sse::orders")} batches committed in all`);
  } finally {
    await feed.close();
  }
}

async function fileStep(): Promise<void> {
  step(3, `NDJSON file → bronze: ${n(FILE[1] - FILE[0])} orders`);
  const path = join(work, "orders.ndjson");
  writeFileSync(path, ndjson(FILE[0], FILE[1]));
  await lakelogicOk(["run", BRONZE_CONTRACT, "--source", JSON.stringify({ type: "file", path }), ...bronzeFlags("file::orders")], work);
}

/** The backfill table in PostgreSQL: text columns as an export would have them, items as jsonb. */
async function loadHistory(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP TABLE IF EXISTS order_history`);
    await client.query(
      `CREATE TABLE order_history (order_id text PRIMARY KEY, customer_id text, amount text, currency text, status text, email text, created_at text, items jsonb)`,
    );
    const rows = [...range(BACKFILL[0], BACKFILL[1])];
    for (let i = 0; i < rows.length; i += 500) {
      const slice = rows.slice(i, i + 500);
      const values = slice.map((_, j) => `(${Array.from({ length: 8 }, (_, c) => `$${j * 8 + c + 1}`).join(", ")})`);
      const params = slice.flatMap((o) => [o.order_id, o.customer_id, String(o.amount), o.currency, o.status, o.email, o.created_at, JSON.stringify(o.items)]);
      await client.query(`INSERT INTO order_history VALUES ${values.join(", ")}`, params);
    }
  } finally {
    await client.end();
  }
}

async function backfillStep(servers: Servers): Promise<void> {
  const count = n(BACKFILL[1] - BACKFILL[0]);
  if (servers.postgres) {
    step(4, `PostgreSQL backfill → bronze: ${count} historical orders, paged by keyset on (created_at, order_id)`);
    await loadHistory(servers.postgres.url);
    const source = { type: "postgres", url: "env:E2E_POSTGRES_URL", table: "order_history", watermarkField: "created_at", tieBreakerField: "order_id", chunkSize: 1000 };
    note("the connection string is passed by reference (env:E2E_POSTGRES_URL), never written into the config");
    await lakelogicOk(["run", BRONZE_CONTRACT, "--source", JSON.stringify(source), ...bronzeFlags("backfill::orders")], work, {
      E2E_POSTGRES_URL: servers.postgres.url,
    });
    return;
  }
  step(4, `Keyset backfill → bronze: ${count} historical orders from an in-memory table (PostgreSQL is not provisioned)`);
  note('new WatermarkChunkSource(fetchChunk, { watermarkField: "created_at", tieBreakerField: "order_id", chunkSize: 1000 }) — examples/e2e/backfill.ts');
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), here("./backfill.ts"), BRONZE_CONTRACT, bronzeLake, String(BACKFILL[0]), String(BACKFILL[1])], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("close", (c) => resolve({ code: c, output: out }));
  });
  if (code !== 0) throw new Error(`the backfill exited with ${code}:\n${output.slice(-3000)}`);
  note(output.trim().split("\n").pop() ?? "");
}

async function kafkaStep(servers: Servers): Promise<void> {
  if (!servers.kafka || !servers.temporal) {
    step(5, "Kafka → bronze through Temporal: left out (" + [...servers.missing].map(([k, why]) => `${k}: ${why}`).join("; ") + ")");
    return;
  }
  step(5, `Kafka → bronze through a Temporal worker: ${n(KAFKA[1] - KAFKA[0])} orders on topic "orders"`);
  await servers.kafka.createTopic("orders", 3);
  const { Kafka, logLevel } = await import("kafkajs");
  const producer = new Kafka({ brokers: servers.kafka.brokers, logLevel: logLevel.NOTHING }).producer();
  await producer.connect();
  const orders = [...range(KAFKA[0], KAFKA[1])];
  for (let i = 0; i < orders.length; i += 1000) {
    await producer.send({ topic: "orders", messages: orders.slice(i, i + 1000).map((o) => ({ key: o.order_id, value: JSON.stringify(o) })) });
  }
  await producer.disconnect();
  const temporal = ["--address", servers.temporal.address, "--task-queue", "e2e"];
  const worker = lakelogic(["worker", ...temporal], work);
  try {
    const source = { type: "kafka", brokers: servers.kafka.brokers, topic: "orders", groupId: "e2e-bronze" };
    await lakelogicOk(["start", BRONZE_CONTRACT, "--source", JSON.stringify(source), "--mode", "available_now", ...bronzeFlags("kafka::orders"), ...temporal, "--wait"], work);
  } finally {
    // The worker holds the bronze lake open; silver reads it next.
    worker.child.kill("SIGTERM");
    await worker.done;
  }
}

async function silverStep(): Promise<void> {
  step(6, "bronze → silver: the silver contract reads the bronze table's committed batches");
  const source = { type: "lake", path: bronzeLake, table: "bronze_orders" };
  await lakelogicOk(["run", SILVER_CONTRACT, "--source", JSON.stringify(source), "--target-path", silverLake, "--checkpoint-key", "silver::orders"], work);
}

async function count(servers: Servers): Promise<void> {
  step(7, "Count");
  const ranges = [SSE, FILE, BACKFILL, ...(servers.kafka && servers.temporal ? [KAFKA] : [])];
  const want = ranges.map(([a, b]) => expected(a, b)).reduce((x, y) => ({ good: x.good + y.good, bad: x.bad + y.bad }));
  const events = ranges.reduce((s, [a, b]) => s + b - a, 0);
  const bronze = await loadContract(BRONZE_CONTRACT);
  const rows = await readTable(bronze, { targetPath: bronzeLake });
  const quarantined = await readQuarantine(bronze, { targetPath: bronzeLake });
  const ids = new Set(rows.map((r) => String(r["order_id"])));
  const quarantinedIds = new Set(quarantined.map((q) => JSON.stringify(q.record)));
  const silver = await loadContract(SILVER_CONTRACT);
  const silverRows = await readTable(silver, { targetPath: silverLake });
  const silverBad = await readQuarantine(silver, { targetPath: silverLake });
  note(`bronze: ${n(rows.length)} orders, ${n(quarantined.length)} quarantined; in = ${n(events)}`);
  note(`silver: ${n(silverRows.length)} orders, ${n(silverBad.length)} quarantined`);
  const problems = [
    ids.size !== rows.length && `${rows.length - ids.size} orders are in bronze twice`,
    rows.length !== want.good && `bronze holds ${rows.length} orders, expected ${want.good}`,
    quarantined.length !== want.bad && `bronze quarantine holds ${quarantined.length} records, expected ${want.bad}`,
    quarantinedIds.size !== quarantined.length && "a record is in the bronze quarantine twice",
    silverRows.length + silverBad.length !== rows.length && `silver read ${silverRows.length + silverBad.length} of bronze's ${rows.length} orders`,
  ].filter((p): p is string => typeof p === "string");
  if (problems.length > 0) throw new Error(`the count does not add up:\n- ${problems.join("\n- ")}`);
  console.log(`\nProved: in = good + quarantined = ${n(want.good)} + ${n(want.bad)} = ${n(events)}, no order twice, silver holds every bronze order.`);
}

async function main(): Promise<void> {
  console.log(`LakeLogic end to end, in ${work}`);
  step(1, "Lint the contracts");
  await lakelogicOk(["lint", repo("contracts")], work);
  console.log("\n   starting the local servers that are provisioned…");
  const servers = await startServers();
  for (const [name, why] of servers.missing) note(`${name}: not used (${why})`);
  try {
    await sseStep();
    await fileStep();
    await backfillStep(servers);
    await kafkaStep(servers);
    await silverStep();
    await count(servers);
  } finally {
    await servers.stop();
    if (process.env.LAKELOGIC_E2E_DIR === undefined) rmSync(work, { recursive: true, force: true });
  }
}

await main();
