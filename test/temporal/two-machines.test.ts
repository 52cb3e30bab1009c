/**
 * Two Temporal workers as two machines: each in its own mount namespace with a private disk at
 * the same path, sharing loopback with the Temporal dev server, Kafka and the S3 emulator. The
 * worker running a stream is SIGKILLed mid-run and the stream finishes on the other.
 *
 * - format delta on S3: one table holds every record exactly once, read by delta-rs.
 * - format duckdb on the private disk: the stream fails with LakeNotSharedError on the second
 *   machine — never two partial lakes, never a restart at batch 0.
 * - four streams on two machines write one Delta table at once.
 * - format ducklake, catalog in PostgreSQL and data on S3: the same move, and four streams
 *   writing one table; read back by DuckDB's DuckLake extension.
 */
import { execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { StreamClient, StreamFailedError } from "../../src/temporal/client.js";
import type { StreamWorkflowInput, StreamWorkflowResult } from "../../workflows/types.js";
import { readDelta } from "../support/delta.js";
import { queryDuckLake } from "../support/ducklake.js";
import { startKafka, type KafkaBroker } from "../support/kafka.js";
import { s3Environment, startS3, type ObjectStoreServer } from "../support/objectstores.js";
import { startPostgres, type PostgresServer } from "../support/postgres.js";
import { stopProcess, waitFor } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { ORDERS_CONTRACT, spawnWorker } from "./support.js";

const temporal = await requireService("temporal: two machines", () => startTemporal());
let kafka: KafkaBroker;
let s3: ObjectStoreServer;
let pg: PostgresServer;
let streams: StreamClient;
const workers: ChildProcess[] = [];
// The path every machine has, each with its own disk mounted there.
const disk = mkdtempSync(join(tmpdir(), "ll-machine-disk-"));

// The orders contract with its lake in Delta.
const DELTA_CONTRACT = join(mkdtempSync(join(tmpdir(), "ll-two-contract-")), "orders.yaml");
writeFileSync(DELTA_CONTRACT, readFileSync(ORDERS_CONTRACT, "utf8").replace(/format: duckdb/, "format: delta"));
// And in a DuckLake, whose catalog every machine reaches (DUCKLAKE_METADATA in the workers' environment).
const DUCKLAKE_CONTRACT = join(mkdtempSync(join(tmpdir(), "ll-two-contract-")), "orders.yaml");
writeFileSync(DUCKLAKE_CONTRACT, readFileSync(ORDERS_CONTRACT, "utf8").replace(/format: duckdb/, "format: ducklake"));

// One PostgreSQL database per lake: a DuckLake catalog has one data path.
const catalog = (db = "postgres"): string => `postgres:dbname=${db} host=127.0.0.1 port=${pg.port} user=postgres`;
const s3Env = (db?: string): NodeJS.ProcessEnv => ({ ...s3Environment(s3.endpoint), DUCKLAKE_METADATA: catalog(db) });
const duckLake = (dataPath: string, sql: string, db?: string) => queryDuckLake({ catalog: catalog(db), dataPath, s3: { endpoint: s3.endpoint } }, sql);

beforeAll(async () => {
  [kafka, s3, pg] = await Promise.all([startKafka(), startS3(), startPostgres()]);
  await s3.createBucket("lake");
  streams = await StreamClient.connect({ address: temporal!.address });
}, 180_000);

afterAll(async () => {
  for (const w of workers) await stopProcess(w);
  await streams?.close();
  await Promise.all([kafka?.stop(), s3?.stop(), pg?.stop()]);
  await temporal?.stop();
  rmSync(disk, { recursive: true, force: true });
});

function machine(queue = "lakelogic", db?: string): Promise<ChildProcess> {
  return spawnWorker(temporal!.address, queue, { privateDisk: disk, env: s3Env(db) }).then((w) => {
    workers.push(w);
    return w;
  });
}

async function produce(topic: string, from: number, count: number, create = true): Promise<void> {
  if (create) await kafka.createTopic(topic, 3);
  const client = new kafkajs.Kafka({ brokers: kafka.brokers, logLevel: kafkajs.logLevel.NOTHING });
  const producer = client.producer();
  await producer.connect();
  for (let i = from; i < from + count; i += 2_000) {
    const messages = [];
    for (let j = i; j < Math.min(i + 2_000, from + count); j++) messages.push({ key: String(j), value: JSON.stringify(orderEvent(j)) });
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

function input(topic: string, key: string, targetPath: string, extra: Partial<StreamWorkflowInput> = {}): StreamWorkflowInput {
  return {
    contract: targetPath.startsWith("s3://") ? DELTA_CONTRACT : ORDERS_CONTRACT,
    source: { type: "kafka", brokers: kafka.brokers, topic, groupId: `g-${key}`, logLevel: "error" },
    // Continuous: the stream is still running when it is paused and moved, however fast it read.
    mode: "continuous",
    checkpointKey: key,
    targetPath,
    batchSize: 500,
    maxWaitMs: 500,
    timeouts: { scheduleToStartMs: 3000, heartbeatMs: 5000, idleFetchMs: 1000 },
    ...extra,
  };
}

function expectedSplit(from: number, count: number): { good: number; bad: number } {
  let bad = 0;
  for (let i = from; i < from + count; i++) if (isBadOrder(i)) bad++;
  return { good: count - bad, bad };
}

/**
 * Runs a stream on machine A and moves it to machine B: paused after a few batches (so it is
 * mid-run whatever the machine's speed), B started, A SIGKILLed, the stream resumed.
 */
async function moveMidRun(wf: StreamWorkflowInput): Promise<{ a: ChildProcess; b: ChildProcess; killedAt: number }> {
  const key = wf.checkpointKey!;
  const a = await machine();
  await streams.start(wf);
  await waitFor("a few batches on machine A", async () => (await streams.status(key)).batchId >= 4, 120_000, 20);
  await streams.signal(key, "pause");
  await waitFor("the stream paused", async () => (await streams.status(key)).state === "paused", 60_000, 50);
  const b = await machine();
  const killedAt = (await streams.status(key)).batchId;
  a.kill("SIGKILL");
  await streams.signal(key, "resume");
  return { a, b, killedAt };
}

describe.skipIf(!temporal)("two workers, two machines", () => {
  it("delta on S3: the stream finishes on the other machine, one table holds every record once", async () => {
    const N = 12_000;
    await produce("orders-delta", 0, N);
    const wf = input("orders-delta", "two::delta", "s3://lake/shared");
    const { b } = await moveMidRun(wf);
    // Machine B reads on, including what arrives after the move.
    await produce("orders-delta", N, 2_000, false);
    await waitFor("every record committed on machine B", async () => (await streams.status(wf.checkpointKey!)).sourceCount >= N + 2_000, 300_000, 100);
    await streams.signal(wf.checkpointKey!, "stop");
    const result: StreamWorkflowResult = await streams.result(wf.checkpointKey!);
    expect(result.totals.sourceCount).toBe(N + 2_000);
    const { good, bad } = expectedSplit(0, N + 2_000);
    const rows = readDelta("s3://lake/shared/orders", s3Env()).rows;
    const ids = rows.map((r) => String(r["order_id"]));
    expect(new Set(ids).size, "no key twice").toBe(ids.length);
    expect(ids.length, "every good record").toBe(good);
    const q = readDelta("s3://lake/shared/orders_quarantine", s3Env()).rows;
    expect(q.length, "every bad record once").toBe(bad);
    await stopProcess(b);
  }, 600_000);

  it("duckdb on each machine's disk: the stream fails on the other machine, naming the shared formats", async () => {
    await produce("orders-local", 0, 12_000);
    const wf = input("orders-local", "two::duckdb", join(disk, "lake"), { checkpoint: "s3://lake/checkpoints/two-duckdb.json" });
    const { b, killedAt } = await moveMidRun(wf);
    // Records for machine B to write: its first batch finds its lake without the stream's batches.
    await produce("orders-local", 12_000, 500, false);
    const err = await streams.result(wf.checkpointKey!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamFailedError);
    expect((err as Error).message).toMatch(/LAKE_NOT_SHARED|on this worker holds none of its batches/);
    expect((err as Error).message).toMatch(/format delta on object storage/);
    const status = await streams.status(wf.checkpointKey!);
    expect(status.batchId, "never back to batch 0").toBe(killedAt);
    await stopProcess(b);
  }, 600_000);

  it("four streams on two machines write one Delta table at once", async () => {
    const PER = 3_000;
    await Promise.all([0, 1, 2, 3].map((s) => produce(`orders-four-${s}`, s * PER, PER)));
    await Promise.all([machine(), machine()]);
    const handles = await Promise.all(
      [0, 1, 2, 3].map((s) => streams.start(input(`orders-four-${s}`, `four::${s}`, "s3://lake/four", { batchSize: 250, mode: "available_now" }))),
    );
    const results = (await Promise.all(handles.map((h) => h.result()))) as StreamWorkflowResult[];
    for (const r of results) expect(r.totals.sourceCount).toBe(PER);
    const { good, bad } = expectedSplit(0, 4 * PER);
    const ids = readDelta("s3://lake/four/orders", s3Env()).rows.map((r) => String(r["order_id"]));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(good);
    expect(readDelta("s3://lake/four/orders_quarantine", s3Env()).rows).toHaveLength(bad);
  }, 600_000);

  it("ducklake (PostgreSQL catalog, data on S3): the stream finishes on the other machine, one table holds every record once", async () => {
    const N = 12_000;
    await produce("orders-ducklake", 0, N);
    const wf = input("orders-ducklake", "two::ducklake", "s3://lake/ducklake-move", { contract: DUCKLAKE_CONTRACT });
    const { b } = await moveMidRun(wf);
    await produce("orders-ducklake", N, 2_000, false);
    await waitFor("every record committed on machine B", async () => (await streams.status(wf.checkpointKey!)).sourceCount >= N + 2_000, 300_000, 100);
    await streams.signal(wf.checkpointKey!, "stop");
    const result: StreamWorkflowResult = await streams.result(wf.checkpointKey!);
    expect(result.totals.sourceCount).toBe(N + 2_000);
    const { good, bad } = expectedSplit(0, N + 2_000);
    const [rows] = await duckLake("s3://lake/ducklake-move/", "SELECT count(*) AS n, count(DISTINCT order_id) AS ids FROM lake.main.orders");
    expect(rows, "every good record, no key twice").toEqual({ n: good, ids: good });
    const [q] = await duckLake("s3://lake/ducklake-move/", "SELECT count(*) AS n FROM lake.main.orders_quarantine");
    expect(q!["n"], "every bad record once").toBe(bad);
    await stopProcess(b);
  }, 600_000);

  it("four streams on two machines write one DuckLake table at once", async () => {
    const PER = 3_000;
    await Promise.all([0, 1, 2, 3].map((s) => produce(`orders-dl-four-${s}`, s * PER, PER)));
    execFileSync(join(pg.binDir, "createdb"), ["-h", "127.0.0.1", "-p", String(pg.port), "-U", "postgres", "four"]);
    // Workers of their own queue, whose environment names the catalog of this lake.
    await Promise.all([machine("dl-four", "four"), machine("dl-four", "four")]);
    const four = await StreamClient.connect({ address: temporal!.address, taskQueue: "dl-four" });
    const handles = await Promise.all(
      [0, 1, 2, 3].map((s) =>
        four.start(input(`orders-dl-four-${s}`, `dl-four::${s}`, "s3://lake/ducklake-four", { contract: DUCKLAKE_CONTRACT, batchSize: 250, mode: "available_now" })),
      ),
    );
    const results = (await Promise.all(handles.map((h) => h.result()))) as StreamWorkflowResult[];
    await four.close();
    for (const r of results) expect(r.totals.sourceCount).toBe(PER);
    const { good, bad } = expectedSplit(0, 4 * PER);
    const [rows] = await duckLake("s3://lake/ducklake-four/", "SELECT count(*) AS n, count(DISTINCT order_id) AS ids FROM lake.main.orders", "four");
    expect(rows).toEqual({ n: good, ids: good });
    const [q] = await duckLake("s3://lake/ducklake-four/", "SELECT count(*) AS n FROM lake.main.orders_quarantine", "four");
    expect(q!["n"]).toBe(bad);
  }, 600_000);
});
