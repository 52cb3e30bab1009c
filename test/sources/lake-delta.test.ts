/**
 * The lake source on Delta tables (delta-rs through the helper): bronze written by StreamSink in
 * Delta (merge, with its Change Data Feed; append) read by `type: lake` into a duckdb silver,
 * incrementally by table version; a read stopped inside a version resumes exactly; a table
 * another Delta writer made without a change feed (merge, then optimize) gives the files each
 * version added, and nothing for a compaction; a table Spark writes (two appends, then an
 * OPTIMIZE) read in two incremental runs. SparkStreamSink reading StreamSink's Delta bronze is
 * test/spark/delta-interop.test.ts.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { createSource } from "../../src/sources/registry.js";
import { LakeTableSource } from "../../src/sources/lake/source.js";
import type { CursorSource, SourceRecord } from "../../src/sources/core/types.js";
import { deltaPython, readDelta } from "../support/delta.js";
import { s3ForSuite } from "../support/s3-suite.js";
import { requireSpark } from "../support/spark.js";
import { orders, silverContract, writeBronze, type Order } from "./lake-source-support.js";

const root = mkdtempSync(join(tmpdir(), "lakelogic-lake-delta-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => mkdtempSync(join(root, `t${n++}-`));

async function drain(source: CursorSource, stopAfter = Infinity): Promise<SourceRecord[]> {
  const ac = new AbortController();
  const out: SourceRecord[] = [];
  for await (const r of source.read({ mode: "available_now", signal: ac.signal })) {
    out.push(r);
    if (out.length >= stopAfter) ac.abort();
  }
  return out;
}

async function runSilver(dir: string) {
  const source = await createSource({ type: "lake", path: join(dir, "bronze"), table: "bronze_orders", chunkSize: 16 });
  const sink = new StreamSink(silverContract(dir, "duckdb"), source, { checkpoint: join(dir, "silver-checkpoints.sqlite"), batchSize: 40, maxWaitMs: 60_000 });
  return sink.run("available_now");
}

const id = (r: SourceRecord): string => String((r.value as { order_id?: unknown; id?: unknown }).order_id ?? (r.value as { id?: unknown }).id);

describe("lake source on a Delta bronze written by StreamSink", () => {
  it("merge bronze → silver: the first read takes every row, the next only the rows bronze inserted or updated", async () => {
    const dir = fresh();
    const b1 = await writeBronze(dir, "delta", "bronze-1", orders(0, 100));
    expect(b1.badCount).toBe(10);
    const s1 = await runSilver(dir);
    expect(s1.sourceCount).toBe(b1.goodCount);
    expect(s1.goodCount + s1.badCount).toBe(s1.sourceCount);

    // 40 new orders and new versions of orders 0..19: bronze's merge rewrites files holding
    // untouched rows too; the change feed gives silver exactly the inserted and updated rows.
    const b2 = await writeBronze(dir, "delta", "bronze-2", [...orders(100, 140), ...orders(0, 20, 2)]);
    const s2 = await runSilver(dir);
    expect(s2.sourceCount).toBe(b2.goodCount);
    const silverContractFile = await loadContract(silverContract(dir, "duckdb"));
    const silver = new Map((await readTable(silverContractFile)).map((r) => [String(r["order_id"]), r]));
    for (const o of orders(0, 20, 2).filter((o) => o.amount >= 0 && o.status !== "lost")) expect(silver.get(o.order_id)?.["amount"]).toBe(o.amount);
    const bronze = readDelta(join(dir, "bronze", "bronze_orders")).rows;
    const quarantined = (await readQuarantine(silverContractFile)).map((q) => (q.record as { order_id: string }).order_id);
    expect(new Set([...silver.keys(), ...quarantined])).toEqual(new Set(bronze.map((r) => String(r["order_id"]))));
    expect(new Set(silver.keys())).toEqual(new Set(bronze.filter((r) => r["status"] !== "lost").map((r) => String(r["order_id"]))));
    expect((await runSilver(dir)).sourceCount).toBe(0);
  }, 120_000);

  it("append bronze: values exact (64-bit integers, decimals, timestamps, kept unknown fields); a stopped read resumes inside a version", async () => {
    const dir = fresh();
    const contract = join(dir, "events.yaml");
    writeFileSync(
      contract,
      `dataset: events
model:
  fields:
    - {name: id, type: integer, required: true}
    - {name: big, type: integer}
    - {name: price, type: decimal, precision: 12, scale: 3}
    - {name: at, type: timestamp}
schema_policy: {unknown_fields: allow}
materialization: {strategy: append, format: delta, target_path: ${JSON.stringify(join(dir, "bronze"))}}
`,
    );
    const rows = Array.from({ length: 70 }, (_, i) => ({
      id: i,
      big: 9007199254740993n + BigInt(i),
      price: `${i}.125`,
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      ...(i % 10 === 0 ? { note: `n${i}` } : {}),
    }));
    const write = (from: number, to: number, key: string) =>
      new StreamSink(contract, new IterableSource(() => rows.slice(from, to), { replayable: true }), { checkpoint: join(dir, "ck.sqlite"), checkpointKey: key, batchSize: 20 }).run(
        "available_now",
      );
    await write(0, 50, "a");

    const whole = await drain(new LakeTableSource({ path: join(dir, "bronze"), table: "events", chunkSize: 7 }));
    expect(whole.map((r) => r.value)).toEqual(rows.slice(0, 50));
    expect(whole[0]!.position).toEqual({ version: 0, row: 1 });

    // Stopped after 27 rows (inside bronze's second batch), resumed from the cursor by a new source.
    const first = new LakeTableSource({ path: join(dir, "bronze"), table: "events", format: "delta", chunkSize: 7 });
    const part = await drain(first, 27);
    const cursor = first.currentCursor();
    expect(cursor).toEqual(part[26]!.position);
    expect((cursor as { row: number }).row).toBeGreaterThan(0);
    await first.close();
    await write(50, 70, "b");
    const next = new LakeTableSource({ path: join(dir, "bronze"), table: "events", chunkSize: 7 });
    await next.seek(cursor);
    const rest = await drain(next);
    expect([...part, ...rest].map((r) => r.value)).toEqual(rows);
    // Nothing new: the cursor stays where it is.
    const again = new LakeTableSource({ path: join(dir, "bronze"), table: "events" });
    await again.seek(next.currentCursor());
    expect(await drain(again)).toEqual([]);
    await next.close();
    await again.close();
  }, 120_000);
});

describe("lake source on a Delta bronze, continuous", () => {
  it("polls for new versions (injected pause); a duckdb or parquet cursor is refused", async () => {
    const dir = fresh();
    await writeBronze(dir, "delta", "bronze-1", orders(0, 20));
    const ac = new AbortController();
    let polls = 0;
    const source = new LakeTableSource({
      path: join(dir, "bronze"),
      table: "bronze_orders",
      chunkSize: 6,
      sleep: async () => {
        polls++;
        if (polls === 1) await writeBronze(dir, "delta", "bronze-2", orders(20, 30));
        else ac.abort();
        return !ac.signal.aborted;
      },
    });
    const read: SourceRecord[] = [];
    for await (const r of source.read({ mode: "continuous", signal: ac.signal })) read.push(r);
    expect(read.map(id)).toEqual(orders(0, 30).filter((o) => o.amount >= 0).map((o) => o.order_id));
    expect(polls).toBe(2);
    await source.close();
    const other = new LakeTableSource({ path: join(dir, "bronze"), table: "bronze_orders" });
    await expect(other.seek({ seq: 12 })).rejects.toThrow(/Delta: give the stream a new checkpoint key/);
  }, 60_000);
});

describe("lake source on a Delta bronze on S3", () => {
  // Credentials from the default chain (here: the environment), as for the Delta writer.
  s3ForSuite("lake");

  it("reads an s3:// lake by version: inserts, then a merge's changes only", async () => {
    const dir = fresh();
    const contract = join(dir, "bronze.yaml");
    writeFileSync(
      contract,
      `dataset: bronze_orders
model:
  fields:
    - {name: order_id, type: string, required: true}
    - {name: amount, type: double}
    - {name: status, type: string}
primary_key: [order_id]
materialization: {strategy: merge, format: delta, target_path: "s3://lake/bronze"}
`,
    );
    const write = (rows: Order[], key: string) =>
      new StreamSink(contract, new IterableSource(() => rows, { replayable: true }), { checkpoint: join(dir, "ck.sqlite"), checkpointKey: key, batchSize: 15 }).run("available_now");
    await write(orders(0, 30), "a");
    const first = new LakeTableSource({ path: "s3://lake/bronze", table: "bronze_orders", chunkSize: 8 });
    expect((await drain(first)).map(id)).toEqual(orders(0, 30).map((o) => o.order_id));
    const cursor = first.currentCursor();
    await first.close();
    await write([...orders(0, 5, 2), ...orders(30, 35)], "b");
    const next = new LakeTableSource({ path: "s3://lake/bronze", table: "bronze_orders" });
    await next.seek(cursor);
    const changed = await drain(next);
    expect(changed.map(id).sort()).toEqual([...orders(0, 5), ...orders(30, 35)].map((o) => o.order_id).sort());
    expect(changed.find((r) => id(r) === "o1")?.value).toMatchObject({ amount: 2 });
    await next.close();
  }, 120_000);
});

const FOREIGN = `
import os, sys, pyarrow as pa
from deltalake import DeltaTable, write_deltalake
uri = sys.argv[1]
write_deltalake(uri, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
DeltaTable(uri).merge(pa.table({"id": pa.array([2, 4], pa.int64()), "v": ["B", "d"]}), "t.id = s.id", source_alias="s", target_alias="t").when_matched_update_all().when_not_matched_insert_all().execute()
write_deltalake(uri, pa.table({"id": pa.array([5], pa.int64()), "v": ["e"]}), mode="append")
DeltaTable(uri).optimize.compact()
write_deltalake(uri, pa.table({"id": pa.array([6], pa.int64()), "v": ["f"]}), mode="append")
print(DeltaTable(uri).version(), flush=True)
os._exit(0)
`;

describe("lake source on a Delta table without a change feed", () => {
  it("gives each version's added files: a merge's rewritten rows again, a compaction nothing", async () => {
    const dir = fresh();
    const version = Number(execFileSync(deltaPython(), ["-c", FOREIGN, join(dir, "t")], { encoding: "utf8" }).trim());
    expect(version).toBe(4);
    const read = await drain(new LakeTableSource({ path: dir, table: "t", chunkSize: 2 }));
    // v0: a b c; v1 (merge): the file it wrote holds every row, changed or not; v2: e; v3 (optimize): none; v4: f.
    const seen = read.map((r) => [(r.position as { version: number }).version, (r.value as { v: string }).v]);
    expect(seen.filter(([v]) => v === 0).map(([, x]) => x)).toEqual(["a", "b", "c"]);
    expect(seen.filter(([v]) => v === 1).map(([, x]) => x).sort()).toEqual(["B", "a", "c", "d"]);
    expect(seen.filter(([v]) => v === 2).map(([, x]) => x)).toEqual(["e"]);
    expect(seen.filter(([v]) => v === 3)).toEqual([]);
    expect(seen.filter(([v]) => v === 4).map(([, x]) => x)).toEqual(["f"]);
    expect(read.map(id)).toHaveLength(9);
  }, 60_000);
});

/** One Spark application: two appends (versions 0, 1), a pause until `go`, one more append and an OPTIMIZE. */
const SPARK_WRITER = `
import os, sys, time
from datetime import datetime, timezone
from decimal import Decimal
from pyspark.sql import SparkSession
path, signals, jars = sys.argv[1], sys.argv[2], sys.argv[3]
b = SparkSession.builder.master("local[1]").appName("lakelogic-test-writer")
for k, v in {"spark.jars": jars, "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", "spark.sql.session.timeZone": "UTC",
             "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
             "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}.items():
    b = b.config(k, v)
spark = b.getOrCreate()
schema = "id BIGINT, big BIGINT, amount DECIMAL(10,2), at TIMESTAMP, name STRING"
def rows(a, z):
    return [(i, 2**62 + i, Decimal(i) / 4, datetime(2026, 1, 1, 0, 0, i % 60, 250000, tzinfo=timezone.utc), "n%d" % i) for i in range(a, z)]
def append(a, z):
    spark.createDataFrame(rows(a, z), schema).repartition(2).write.format("delta").mode("append").save(path)
append(0, 40)
append(40, 50)
open(os.path.join(signals, "one"), "w").close()
while not os.path.exists(os.path.join(signals, "go")):
    time.sleep(0.05)
append(50, 70)
spark.sql("OPTIMIZE delta.\`%s\`" % path)
spark.stop()
os._exit(0)
`;

describe("lake source on a Delta table Spark writes", () => {
  it("reads Spark's versions incrementally: the second read only the new rows, the OPTIMIZE none", async () => {
    const rt = requireSpark();
    const dir = fresh();
    const table = join(dir, "lake", "spark_events");
    writeFileSync(join(dir, "writer.py"), SPARK_WRITER);
    const proc = spawn(rt.python, [join(dir, "writer.py"), table, dir, rt.jars.join(",")], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, PYSPARK_PYTHON: rt.python, PYSPARK_DRIVER_PYTHON: rt.python },
    });
    let stderr = "";
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exit = new Promise<number | null>((resolve) => proc.on("exit", resolve));
    try {
      const until = async (file: string): Promise<void> => {
        while (!existsSync(join(dir, file))) {
          if (proc.exitCode !== null) throw new Error(`the Spark writer exited ${proc.exitCode}: ${stderr.slice(-3000)}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await until("one");
      const source = () => new LakeTableSource({ path: join(dir, "lake"), table: "spark_events", chunkSize: 16 });
      const first = source();
      const one = await drain(first);
      const want = (a: number, z: number) =>
        Array.from({ length: z - a }, (_, k) => {
          const i = a + k;
          return { id: i, big: 2n ** 62n + BigInt(i), amount: (i / 4).toFixed(2), at: `2026-01-01T00:00:${String(i % 60).padStart(2, "0")}.250Z`, name: `n${i}` };
        });
      const byId = (rs: SourceRecord[]) => rs.map((r) => r.value as { id: number }).sort((x, y) => x.id - y.id);
      expect(byId(one)).toEqual(want(0, 50));
      expect(one.every((r) => (r.position as { version: number }).version <= 1)).toBe(true);
      const cursor = first.currentCursor();
      await first.close();

      writeFileSync(join(dir, "go"), "");
      expect(await exit, stderr.slice(-3000)).toBe(0);
      const snapshot = readDelta(table);
      expect(snapshot.version).toBe(3);
      expect(snapshot.history[0]?.["operation"]).toBe("OPTIMIZE");
      const second = source();
      await second.seek(cursor);
      const two = await drain(second);
      expect(byId(two)).toEqual(want(50, 70));
      expect(two.every((r) => (r.position as { version: number }).version === 2)).toBe(true);
      await second.close();
    } finally {
      if (proc.exitCode === null) proc.kill("SIGKILL");
    }
  }, 300_000);
});
