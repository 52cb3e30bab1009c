/**
 * format: ducklake, read back by DuckDB's own DuckLake extension on a fresh connection: strategies,
 * deletes, exact 64-bit values, quarantine as a catalog table, the stream's checkpoint row in the
 * batch's transaction (compare-and-set), and — on a PostgreSQL catalog with data on an S3
 * server — three processes advancing one stream at once: every batch exactly once.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";
import { ConfigError } from "../../src/errors.js";
import { openLake, readQuarantine, readTable, resolveLakeConfig, TableContractError, type LakeWriter } from "../../src/lake/index.js";
import { queryDuckLake } from "../support/ducklake.js";
import { s3Environment, startS3, type ObjectStoreServer } from "../support/objectstores.js";
import { startPostgres, type PostgresServer } from "../support/postgres.js";
import { badRow, byKey, checkpointRecord, makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();
const KEY = "stream::orders";
const BIG = 9_007_199_254_740_993n; // 2^53 + 1: a double cannot hold it
const child = fileURLToPath(new URL("./ducklake-child.ts", import.meta.url));

const record = (batchId: number, cursor: unknown, writerId?: string): CheckpointRecord => checkpointRecord(KEY, batchId, cursor, writerId);
const bad = badRow;
const fields = [["id", "integer"], ["name", "string"], ["amount", "decimal", 12, 2], ["at", "timestamp"], ["tags", "json"]] as const;
const merge = makeContract({ strategy: "merge", primaryKey: ["id"], format: "ducklake", fields: fields.map((f) => [...f]) as never });

function storeOf(w: LakeWriter) {
  if (!w.checkpointStore) throw new Error("writer has no checkpoint store");
  return w.checkpointStore();
}

const local = (targetPath: string) => ({ catalog: join(targetPath, "lakelogic.ducklake"), dataPath: `${targetPath}/` });

describe("format ducklake (catalog file)", () => {
  it("merges on the key, deletes keys, keeps 64-bit ids and the types, as DuckDB's DuckLake reads them", async () => {
    const targetPath = lakeDir("ducklake-merge");
    const w = await openLake(merge, { targetPath });
    await w.write({
      batchId: 1,
      good: [
        { id: 1, name: "a", amount: "10.50", at: "2024-05-01T10:00:00.000Z", tags: { k: [1, 2] } },
        { id: BIG, name: "big", amount: "0.01", at: "2024-05-01T10:00:00.123456Z", tags: null },
        { id: 3, name: "c", amount: null, at: null, tags: ["x"] },
      ],
      bad: [],
    });
    const second = await w.write({ batchId: 2, good: [{ id: 1, name: "A", amount: "11.00", at: null, tags: null }], bad: [], deletes: [{ id: 3 }] });
    expect(second.goodWritten).toBe(1);
    await w.close();

    const rows = await queryDuckLake(local(targetPath), "SELECT id, name, amount::VARCHAR AS amount FROM lake.main.orders ORDER BY id");
    expect(rows).toEqual([
      { id: 1, name: "A", amount: "11.00" },
      { id: BIG, name: "big", amount: "0.01" },
    ]);
    expect(byKey(await readTable(merge, { targetPath }))).toEqual([
      { id: 1, name: "A", amount: "11.00", at: null, tags: null },
      { id: BIG, name: "big", amount: "0.01", at: "2024-05-01T10:00:00.123456Z", tags: null },
    ]);
  });

  it("appends and overwrites", async () => {
    const targetPath = lakeDir("ducklake-append");
    const a = await openLake(makeContract({ format: "ducklake" }), { targetPath });
    await a.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await a.write({ batchId: 2, good: [{ id: 1, name: "a" }], bad: [] });
    await a.close();
    expect(await queryDuckLake(local(targetPath), "SELECT count(*) AS n FROM lake.main.orders")).toEqual([{ n: 2 }]);
    const over = await openLake(makeContract({ format: "ducklake", strategy: "overwrite" }), { targetPath });
    await over.write({ batchId: 3, good: [{ id: 9, name: "z" }], bad: [] });
    await over.close();
    expect(await queryDuckLake(local(targetPath), "SELECT id, name FROM lake.main.orders")).toEqual([{ id: 9, name: "z" }]);
  });

  it("quarantines into a catalog table, once per row however often a batch is sent again", async () => {
    const targetPath = lakeDir("ducklake-quarantine");
    const w = await openLake(merge, { targetPath });
    const req = { batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1), bad(2)] };
    expect(await w.write(req)).toEqual({ goodWritten: 1, badWritten: 2, badAlreadyPresent: 0 });
    expect(await w.write({ ...req, batchId: 2 })).toEqual({ goodWritten: 1, badWritten: 0, badAlreadyPresent: 2 });
    await w.close();
    const stored = await readQuarantine(merge, { targetPath });
    expect(stored.map((r) => [r.record, r.reasons])).toEqual(
      expect.arrayContaining([
        [{ id: "bad1" }, ["id must be an integer"]],
        [{ id: "bad2" }, ["id must be an integer"]],
      ]),
    );
    expect(stored).toHaveLength(2);
  });

  it("keeps the stream's checkpoint in the batch's transaction: retries write nothing, rivals are refused", async () => {
    const targetPath = lakeDir("ducklake-checkpoint");
    const w = await openLake(merge, { targetPath });
    const store = storeOf(w);
    expect(await store.load(KEY)).toBeUndefined();
    const cursor = { "orders:0": 41n, at: new Date("2024-05-01T00:00:00.000Z") };
    const r = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1)], checkpoint: record(1, cursor) });
    expect(r).toEqual({ goodWritten: 1, badWritten: 1, badAlreadyPresent: 0, checkpointOutcome: "committed" });
    expect(await store.load(KEY)).toEqual(record(1, cursor));
    const retry = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1)], checkpoint: record(1, cursor) });
    expect(retry.checkpointOutcome).toBe("already-committed");
    await expect(w.write({ batchId: 1, good: [{ id: 2, name: "b" }], bad: [], checkpoint: record(1, cursor, "run-b") })).rejects.toBeInstanceOf(
      CheckpointConflictError,
    );
    await expect(w.write({ batchId: 3, good: [], bad: [], checkpoint: record(3, 3n) })).rejects.toBeInstanceOf(CheckpointConflictError);
    // A checkpoint on its own (an empty batch that moves the cursor).
    expect(await store.commit(record(2, 2n))).toBe("committed");
    await w.close();
    expect(await queryDuckLake(local(targetPath), "SELECT id, name FROM lake.main.orders")).toEqual([{ id: 1, name: "a" }]);
    const reopened = await openLake(merge, { targetPath });
    expect((await storeOf(reopened).load(KEY))?.batchId).toBe(2);
    await reopened.close();
  });

  it("refuses a contract whose key or types differ from the table's", async () => {
    const targetPath = lakeDir("ducklake-contract");
    const w = await openLake(merge, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await w.close();
    await expect(openLake(makeContract({ strategy: "merge", primaryKey: ["name"], format: "ducklake" }), { targetPath })).rejects.toBeInstanceOf(TableContractError);
    await expect(openLake(makeContract({ strategy: "merge", primaryKey: ["id"], format: "ducklake", fields: [["id", "string"], ["name", "string"]] }), { targetPath })).rejects.toThrow(
      /model\.fields\.id: BIGINT → VARCHAR/,
    );
  });

  it("reads the original's table: target and metadata.ducklake_* keys; refuses s3:// data without a shared catalog", () => {
    const dir = lakeDir("ducklake-python");
    const python = makeContract({
      format: "ducklake",
      raw: { metadata: { ducklake_metadata: join(dir, "catalog.ducklake"), ducklake_data_path: join(dir, "data") + "/" } },
    });
    python.materialization.targetPath = "table:lake.dims.dim_driver";
    const config = resolveLakeConfig(python);
    expect(config.table).toBe("dim_driver");
    expect(config.ducklake).toEqual({ catalog: join(dir, "catalog.ducklake"), dataPath: `${join(dir, "data")}/`, schema: "dims" });
    expect(() => resolveLakeConfig(makeContract({ format: "ducklake" }), { targetPath: "s3://bucket/lake" })).toThrow(ConfigError);
    expect(() => resolveLakeConfig(makeContract({ format: "ducklake" }), { targetPath: "ftp://host/lake" })).toThrow(/not ftp:\/\//);
    const secret = makeContract({ format: "ducklake", raw: { metadata: { ducklake_metadata: "sqlite:x password=hunter22" } } });
    expect(() => resolveLakeConfig(secret)).toThrow(ConfigError);
    try {
      resolveLakeConfig(secret);
    } catch (e) {
      expect((e as Error).message).not.toContain("hunter22");
    }
  });
});

describe("format ducklake (PostgreSQL catalog, data on S3)", () => {
  let pg: PostgresServer;
  let s3: ObjectStoreServer;
  beforeAll(async () => {
    [pg, s3] = await Promise.all([startPostgres(), startS3()]);
    await s3.createBucket("lake");
  }, 120_000);
  afterAll(async () => {
    await Promise.all([pg?.stop(), s3?.stop()]);
  });

  it("three processes advancing one stream: every batch exactly once, each lost race fenced", async () => {
    const catalog = `postgres:dbname=postgres host=127.0.0.1 port=${pg.port} user=postgres`;
    const env = { ...process.env, ...s3Environment(s3.endpoint), DUCKLAKE_METADATA: catalog };
    const batches = 24;
    const runs = ["w1", "w2", "w3"].map(
      (writer) =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          const p = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), child, "s3://lake/race", writer, String(batches)], {
            env,
            stdio: ["ignore", "pipe", "inherit"],
          });
          let out = "";
          p.stdout.on("data", (d: Buffer) => (out += d.toString()));
          p.on("exit", (code) => resolve({ code, out }));
        }),
    );
    const results = await Promise.all(runs);
    for (const r of results) expect(r.code).toBe(0);
    const won = results.map((r) => JSON.parse(r.out.trim().split("\n").pop()!) as { committed: number; fenced: number });
    // Each batch committed by exactly one writer; the others were fenced (or saw it done).
    expect(won.reduce((n, w) => n + w.committed, 0)).toBe(batches);
    const rows = await queryDuckLake({ catalog, dataPath: "s3://lake/race/", s3: { endpoint: s3.endpoint } }, "SELECT count(*) AS n, count(DISTINCT id) AS ids FROM lake.main.orders");
    // An append table: a batch written twice would show as repeated ids.
    expect(rows).toEqual([{ n: batches * 10, ids: batches * 10 }]);
    const streams = await queryDuckLake(
      { catalog, dataPath: "s3://lake/race/", s3: { endpoint: s3.endpoint } },
      "SELECT batch_id FROM lake.main._lakelogic_streams WHERE stream_key = 'race'",
    );
    expect(streams).toEqual([{ batch_id: batches }]);
  }, 300_000);
});
