/**
 * StreamSink into format delta, on a local path and on S3 (moto's server, which enforces the
 * conditional writes Delta's commits rely on): the checkpoint defaults to the table's own
 * commits, a stopped stream resumes from them, and every record lands once — read back by
 * delta-rs.
 */
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setEnv } from "../support/env.js";
import { isBadOrder, orderEvents } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { deltaTxnVersion, readDelta, watchDelta } from "../support/delta.js";
import { s3Environment, startS3, type ObjectStoreServer } from "../support/objectstores.js";
import { tempDirs } from "../lake/helpers.js";
import { waitFor } from "../support/proc.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const lakeDir = tempDirs();
const N = 1_000;
const expectedBad = [...Array(N).keys()].filter((i) => isBadOrder(i)).length;

async function deltaContract(): Promise<Contract> {
  const c = await loadContract(CONTRACT);
  return { ...c, materialization: { ...c.materialization, format: "delta" }, quarantine: { ...c.quarantine, format: "delta" } };
}

/** Two runs: the first stops after 3 batches, the second resumes from the table's checkpoint. */
async function twoRuns(targetPath: string, engine: "duckdb" | "polars" = "duckdb") {
  const contract = await deltaContract();
  const events = (): IterableSource => new IterableSource([...orderEvents(N)], { replayable: true });
  const first = await new StreamSink(contract, events(), { targetPath, batchSize: 100, engine }).run("available_now", { maxBatches: 3 });
  expect(first.stoppedBy).toBe("max-batches");
  const second = await new StreamSink(contract, events(), { targetPath, batchSize: 100, engine }).run("available_now");
  return { contract, first, second };
}

describe("StreamSink into format delta", () => {
  it.each(["duckdb", "polars"] as const)("on a local path, engine %s: resumes from the table's commits, every record once", async (engine) => {
    const targetPath = lakeDir(`delta-sink-${engine}`);
    const { first, second } = await twoRuns(targetPath, engine);
    expect(first.batches).toBe(3);
    // The rest, and possibly an empty batch that commits the end of the source.
    expect(second.batches).toBeGreaterThanOrEqual(7);
    expect(second.totals.sourceCount).toBe(N);
    expect(second.totals.goodCount + second.totals.badCount + second.totals.supersededCount).toBe(N);
    const table = join(targetPath, "orders");
    const rows = readDelta(table).rows;
    expect(new Set(rows.map((r) => String(r["order_id"]))).size).toBe(rows.length);
    expect(rows.length).toBe(second.totals.goodCount);
    expect(readDelta(join(targetPath, "orders_quarantine")).rows).toHaveLength(expectedBad);
    expect(deltaTxnVersion(table, second.checkpointKey)).toBe(first.batches + second.batches);
  });

  it("a reader this project did not write never sees a key twice while the stream merges", async () => {
    const targetPath = lakeDir("delta-readers");
    const stopFile = join(targetPath, "stop");
    const watcher = watchDelta(join(targetPath, "orders"), "order_id", stopFile);
    // Every batch re-writes half the keys of the one before: merges that rewrite files.
    const events = [...orderEvents(2_000)].flatMap((e, i) => (i % 2 === 0 ? [e, { ...e, status: "updated" }] : [e]));
    // After each commit the stream waits until the reader has read the table as that commit left
    // it, so reads and merges interleave however busy the machine is.
    let version = -1;
    const readerCaughtUp = async () => {
      version++;
      await waitFor(`the reader at version ${version}`, async () => Number(await readFile(`${stopFile}.seen`, "utf8").catch(() => "-1")) >= version, 60_000, 10);
    };
    const summary = await new StreamSink(await deltaContract(), new IterableSource(events, { replayable: true }), {
      targetPath,
      batchSize: 150,
      checkpoint: "memory",
      onBatch: readerCaughtUp,
    }).run("available_now");
    writeFileSync(stopFile, "");
    const seen = await watcher.done;
    expect(summary.batches).toBeGreaterThan(15);
    expect(seen.reads).toBeGreaterThan(0);
    expect(seen.versions, "the reader saw every version").toBeGreaterThanOrEqual(summary.batches);
    expect(seen.dupReads).toBe(0);
  });

  describe("on S3", () => {
    let s3: ObjectStoreServer;
    let restoreEnv = (): void => undefined;
    const env = (): Record<string, string> => s3Environment(s3.endpoint);
    beforeAll(async () => {
      s3 = await startS3();
      await s3.createBucket("lake");
      // The credentials come from the default chain (here: the environment), never the contract.
      restoreEnv = setEnv(env());
    }, 120_000);
    afterAll(async () => {
      restoreEnv();
      await s3?.stop();
    });

    it("resumes from the table's commits, every record once", async () => {
      const { second } = await twoRuns("s3://lake/bronze");
      expect(second.totals.sourceCount).toBe(N);
      const rows = readDelta("s3://lake/bronze/orders", env()).rows;
      expect(new Set(rows.map((r) => String(r["order_id"]))).size).toBe(rows.length);
      expect(rows.length).toBe(second.totals.goodCount);
      expect(readDelta("s3://lake/bronze/orders_quarantine", env()).rows).toHaveLength(expectedBad);
    }, 120_000);
  });
});
