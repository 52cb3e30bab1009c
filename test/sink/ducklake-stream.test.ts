/**
 * StreamSink into format ducklake: on a catalog file with local data (both engines), and on a
 * PostgreSQL catalog with data on S3 (moto's server). The checkpoint defaults to the stream's row
 * in the catalog, a stopped stream resumes from it, every record lands once, and a DuckDB reader
 * attached to the same catalog while the stream merges never sees a key twice.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvents } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { openDuckLakeReader, queryDuckLake, type DuckLakeReadOptions } from "../support/ducklake.js";
import { s3ForSuite } from "../support/s3-suite.js";
import { startPostgres, type PostgresServer } from "../support/postgres.js";
import { tempDirs } from "../lake/helpers.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const lakeDir = tempDirs();
const N = 1_000;
const expectedBad = [...Array(N).keys()].filter((i) => isBadOrder(i)).length;

async function duckLakeContract(catalog?: string): Promise<Contract> {
  const c = await loadContract(CONTRACT);
  return {
    ...c,
    materialization: { ...c.materialization, format: "ducklake" },
    quarantine: { ...c.quarantine, format: "ducklake" },
    raw: { ...c.raw, ...(catalog ? { metadata: { ducklake_metadata: catalog } } : {}) },
  };
}

/** Two runs: the first stops after 3 batches, the second resumes from the catalog's checkpoint. */
async function twoRuns(targetPath: string, engine: "duckdb" | "polars" = "duckdb", catalog?: string) {
  const contract = await duckLakeContract(catalog);
  const events = (): IterableSource => new IterableSource([...orderEvents(N)], { replayable: true });
  const first = await new StreamSink(contract, events(), { targetPath, batchSize: 100, engine }).run("available_now", { maxBatches: 3 });
  expect(first.stoppedBy).toBe("max-batches");
  const second = await new StreamSink(contract, events(), { targetPath, batchSize: 100, engine }).run("available_now");
  return { first, second };
}

async function expectEveryRecordOnce(o: DuckLakeReadOptions, goodCount: number): Promise<void> {
  const [rows] = await queryDuckLake(o, "SELECT count(*) AS n, count(DISTINCT order_id) AS ids FROM lake.main.orders");
  expect(rows).toEqual({ n: goodCount, ids: goodCount });
  expect(await queryDuckLake(o, "SELECT count(*) AS n FROM lake.main.orders_quarantine")).toEqual([{ n: expectedBad }]);
}

describe("StreamSink into format ducklake", () => {
  it.each(["duckdb", "polars"] as const)("on a catalog file, engine %s: resumes from the catalog's checkpoint, every record once", async (engine) => {
    const targetPath = lakeDir(`ducklake-sink-${engine}`);
    const { first, second } = await twoRuns(targetPath, engine);
    expect(first.batches).toBe(3);
    expect(second.totals.sourceCount).toBe(N);
    expect(second.totals.goodCount + second.totals.badCount + second.totals.supersededCount).toBe(N);
    await expectEveryRecordOnce({ catalog: join(targetPath, "lakelogic.ducklake"), dataPath: `${targetPath}/` }, second.totals.goodCount);
    const [stream] = await queryDuckLake(
      { catalog: join(targetPath, "lakelogic.ducklake"), dataPath: `${targetPath}/` },
      `SELECT batch_id FROM lake.main._lakelogic_streams WHERE stream_key = '${second.checkpointKey}'`,
    );
    expect(stream!["batch_id"]).toBe(first.batches + second.batches);
  });

  describe("on a PostgreSQL catalog", () => {
    let pg: PostgresServer;
    // The credentials come from the environment, never the contract.
    const s3 = s3ForSuite("lake");
    const catalog = (): string => `postgres:dbname=postgres host=127.0.0.1 port=${pg.port} user=postgres`;
    beforeAll(async () => {
      pg = await startPostgres();
    }, 120_000);
    afterAll(async () => {
      await pg?.stop();
    });

    it("with data on S3: resumes from the catalog's checkpoint, every record once", async () => {
      const { second } = await twoRuns("s3://lake/bronze", "duckdb", catalog());
      expect(second.totals.sourceCount).toBe(N);
      await expectEveryRecordOnce({ catalog: catalog(), dataPath: "s3://lake/bronze/", s3: { endpoint: s3().endpoint } }, second.totals.goodCount);
    }, 180_000);

    it("a DuckDB reader attached while the stream merges never sees a key twice", async () => {
      execCreateDb(pg, "readers");
      const readers = `postgres:dbname=readers host=127.0.0.1 port=${pg.port} user=postgres`;
      const targetPath = lakeDir("ducklake-readers");
      // Every batch re-writes half the keys of the one before: merges that delete and insert.
      const events = [...orderEvents(2_000)].flatMap((e, i) => (i % 2 === 0 ? [e, { ...e, status: "updated" }] : [e]));
      let done = false;
      // After each commit the stream waits for a read that began after it, so the reader sees
      // every state the stream left however busy the machine is.
      let commits = 0;
      let readOf = 0;
      const sink = new StreamSink(await duckLakeContract(readers), new IterableSource(events, { replayable: true }), {
        targetPath,
        batchSize: 150,
        onBatch: async () => {
          const commit = ++commits;
          while (readOf < commit) await new Promise((resolve) => setTimeout(resolve, 5));
        },
      });
      const run = sink.run("available_now").finally(() => (done = true));
      let reads = 0;
      let dupReads = 0;
      // The reader attaches once the catalog exists, then reads beside the stream's commits
      // (DuckDB runs both off the JavaScript thread); each read sees the newest snapshot.
      let reader: Awaited<ReturnType<typeof openDuckLakeReader>> | undefined;
      const counts = new Set<unknown>();
      while (!done) {
        const began = commits;
        reader ??= await openDuckLakeReader({ catalog: readers, dataPath: `${targetPath}/` }).catch(() => undefined);
        const [r] = (await reader?.query("SELECT count(*) AS n, count(DISTINCT order_id) AS ids FROM lake.main.orders").catch(() => undefined)) ?? [];
        if (r) {
          reads++;
          counts.add(r["n"]);
          if (r["n"] !== r["ids"]) dupReads++;
          readOf = Math.max(readOf, began);
        } else await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await reader?.close();
      const summary = await run;
      expect(summary.batches).toBeGreaterThan(15);
      expect(reads).toBeGreaterThan(0);
      // The reader saw the table grow, commit by commit (a new key every other event).
      expect(counts.size).toBeGreaterThan(10);
      expect(dupReads).toBe(0);
      const [end] = await queryDuckLake({ catalog: readers, dataPath: `${targetPath}/` }, "SELECT count(*) AS n, count(DISTINCT order_id) AS ids FROM lake.main.orders");
      expect(end).toEqual({ n: summary.totals.goodCount, ids: summary.totals.goodCount });
    }, 180_000);
  });
});

function execCreateDb(pg: PostgresServer, name: string): void {
  execFileSync(join(pg.binDir, "createdb"), ["-h", "127.0.0.1", "-p", String(pg.port), "-U", "postgres", name]);
}
