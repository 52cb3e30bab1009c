/**
 * Lake maintenance (src/lake/maintain.ts) on real tables: a Delta table written by many small
 * batches is compacted with every row intact and the stream's checkpoint still in the table;
 * maintenance racing a running stream loses and duplicates nothing; compaction and vacuum on S3 (moto); a
 * DuckLake compacted and expired while a stream merges into it; duckdb and parquet report; the
 * `lakelogic lake maintain` command.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isBadOrder, orderEvent, orderEvents } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { main } from "../../src/cli/main.js";
import { ConfigError } from "../../src/errors.js";
import { openLake, readTable } from "../../src/lake/index.js";
import { DUCKLAKE_MIN_RETAIN_HOURS, maintainLake, type MaintainReport } from "../../src/lake/maintain.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { readDelta } from "../support/delta.js";
import { s3Environment } from "../support/objectstores.js";
import { s3ForSuite } from "../support/s3-suite.js";
import { tempDirs } from "./helpers.js";

const CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const KEY = "stream::orders";
const lakeDir = tempDirs();

async function ordersContract(format: "delta" | "duckdb" | "parquet" | "ducklake"): Promise<Contract> {
  const c = await loadContract(CONTRACT);
  return { ...c, materialization: { ...c.materialization, format }, quarantine: { ...c.quarantine, format } };
}

/** Parquet data files on disk in a Delta table's directory (live or not). */
function parquetFiles(dir: string): number {
  return readdirSync(dir).filter((f) => f.endsWith(".parquet")).length;
}

function tableOf(report: MaintainReport, role: "table" | "quarantine") {
  const t = report.tables.find((x) => x.role === role);
  if (!t) throw new Error(`no ${role} in the report`);
  return t;
}

async function loadCheckpoint(contract: Contract, targetPath: string) {
  const lake = await openLake(contract, { targetPath });
  try {
    return await lake.checkpointStore!().load(KEY);
  } finally {
    await lake.close();
  }
}

describe("lake maintenance, format delta", () => {
  it("compacts a table of many small batches: fewer files, every row, the stream's checkpoint, and the stream resumes", async () => {
    const targetPath = lakeDir("maintain-delta");
    const contract = await ordersContract("delta");
    const N = 3_000;
    const events = () => new IterableSource([...orderEvents(N)], { replayable: true });
    const first = await new StreamSink(contract, events(), { targetPath, batchSize: 100 }).run("available_now", { maxBatches: 20 });
    expect(first.batches).toBe(20);
    const table = join(targetPath, "orders");
    const rowsBefore = readDelta(table).rows;
    const quarantineBefore = readDelta(join(targetPath, "orders_quarantine")).rows;

    const report = await maintainLake(contract, { targetPath });
    expect(report).toMatchObject({ format: "delta", complete: true });
    const t = tableOf(report, "table");
    expect(t.before.files).toBeGreaterThanOrEqual(20);
    expect(t.after.files).toBe(1);
    expect(t.after.version).toBeGreaterThan(t.before.version!);
    expect(t.steps.map((s) => s.kind)).toEqual(["compact", "vacuum", "checkpoint"]);
    // The default retention (a week) deletes none of the files the compaction replaced.
    expect(t.steps.find((s) => s.kind === "vacuum")).toMatchObject({ retainHours: 168, filesDeleted: 0 });
    expect(tableOf(report, "quarantine").after.files).toBe(1);
    expect(readdirSync(join(table, "_delta_log")).some((f) => f.endsWith(".checkpoint.parquet"))).toBe(true);

    const byId = (rows: Array<Record<string, unknown>>) => [...rows].sort((a, b) => Number(a["order_id"]) - Number(b["order_id"]));
    expect(byId(readDelta(table).rows)).toEqual(byId(rowsBefore));
    expect(readDelta(join(targetPath, "orders_quarantine")).rows).toHaveLength(quarantineBefore.length);
    expect((await loadCheckpoint(contract, targetPath))?.batchId).toBe(20);

    // A retention below the table's minimum is refused before anything changes…
    const refused = await maintainLake(contract, { targetPath, retainHours: 0 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).option).toBe("retainHours");
    expect((refused as ConfigError).message).toMatch(/--allow-short-retention/);
    // …and taken when asked for: the replaced files go from the disk.
    const short = await maintainLake(contract, { targetPath, retainHours: 0, allowShortRetention: true });
    expect(tableOf(short, "table").steps.find((s) => s.kind === "vacuum")).toMatchObject({ status: "done" });
    expect(parquetFiles(table)).toBe(1);
    expect(byId(readDelta(table).rows)).toEqual(byId(rowsBefore));

    // The stream resumes from the checkpoint in the table's commits and ends with every record once.
    const second = await new StreamSink(contract, events(), { targetPath, batchSize: 100 }).run("available_now");
    expect(second.totals.sourceCount).toBe(N);
    const rows = readDelta(table).rows;
    expect(new Set(rows.map((r) => Number(r["order_id"]))).size).toBe(rows.length);
    expect(rows).toHaveLength([...Array(N).keys()].filter((i) => !isBadOrder(i)).length);
    expect(readDelta(join(targetPath, "orders_quarantine")).rows).toHaveLength([...Array(N).keys()].filter((i) => isBadOrder(i)).length);
  }, 300_000);

  it("racing a stream of 1,000-event merges: nothing lost, nothing twice, the checkpoint intact, the file count bounded", async () => {
    const targetPath = lakeDir("maintain-race");
    const contract = await ordersContract("delta");
    // Each batch: 950 new keys (a new file) and 50 updates of the previous batch's keys, so the
    // merges rewrite files that a compaction is rewriting at the same time.
    const BATCHES = 30;
    const events = [];
    const latest = new Map<number, string>();
    for (let b = 0; b < BATCHES; b++) {
      for (let k = b * 950; k < (b + 1) * 950; k++) events.push({ ...orderEvent(k), customer_id: `b${b}` });
      for (let j = 0; b > 0 && j < 50; j++) events.push({ ...orderEvent((b - 1) * 950 + j * 19), customer_id: `b${b}` });
    }
    for (const e of events) if (!isBadOrder(e.order_id)) latest.set(e.order_id, e.customer_id);
    const reports: MaintainReport[] = [];
    let streaming = true;
    const failures: unknown[] = [];
    const maintenance = (async () => {
      while (streaming) {
        await maintainLake(contract, { targetPath }).then(
          (r) => reports.push(r),
          (e: unknown) => failures.push(e),
        );
      }
    })();
    // The stream waits at a few batches until maintenance has run again, so runs overlap its
    // commits however the machine schedules the two.
    const gates = new Map([[5, 1], [10, 2], [15, 3], [20, 3]]);
    const summary = await new StreamSink(contract, new IterableSource(events, { replayable: true }), {
      targetPath,
      batchSize: 1_000,
      onBatch: async (report) => {
        const want = gates.get(report.batchId);
        if (want === undefined) return;
        const runs = () => reports.length + failures.length;
        const seen = runs();
        while (runs() < seen + want) await new Promise((r) => setTimeout(r, 20));
      },
    }).run("available_now");
    streaming = false;
    await maintenance;
    expect(failures).toEqual([]);
    expect(reports.length).toBeGreaterThanOrEqual(9);
    expect(summary.totals.sourceCount).toBe(events.length);

    const rows = readDelta(join(targetPath, "orders")).rows;
    expect(new Set(rows.map((r) => Number(r["order_id"]))).size).toBe(rows.length);
    expect(new Map(rows.map((r) => [Number(r["order_id"]), r["customer_id"]]))).toEqual(latest);
    const quarantine = readDelta(join(targetPath, "orders_quarantine")).rows;
    expect(quarantine).toHaveLength(events.filter((e) => isBadOrder(e.order_id)).length);
    expect(new Set(quarantine.map((r) => r["quarantine_id"])).size).toBe(quarantine.length);
    expect((await loadCheckpoint(contract, targetPath))?.batchId).toBe(summary.batches);

    // Between runs the file count is what the batches since the last run added; after one, one file.
    const last = await maintainLake(contract, { targetPath });
    expect(tableOf(last, "table").after.files).toBe(1);
    expect(await readTable(contract, { targetPath })).toHaveLength(latest.size);
  }, 600_000);
});

describe("lake maintenance, format delta on S3 (moto)", () => {
  // The helper takes credentials from the default chain (here: the environment).
  const s3 = s3ForSuite("lake");

  it("compacts and vacuums a table in object storage; the stream's checkpoint stays", async () => {
    const targetPath = "s3://lake/maintained";
    const contract = await ordersContract("delta");
    const summary = await new StreamSink(contract, new IterableSource([...orderEvents(1_000)], { replayable: true }), { targetPath, batchSize: 100 }).run("available_now");
    const rowsBefore = readDelta(`${targetPath}/orders`, s3Environment(s3().endpoint)).rows.length;
    const report = await maintainLake(contract, { targetPath, retainHours: 0, allowShortRetention: true });
    expect(report).toMatchObject({ complete: true, targetPath });
    const t = tableOf(report, "table");
    expect(t.location).toBe(`${targetPath}/orders`);
    expect(tableOf(report, "quarantine").before.files).toBeGreaterThan(5);
    expect(tableOf(report, "quarantine").after.files).toBe(1);
    // Retention 0: every file the compaction replaced is deleted from the bucket.
    const q = tableOf(report, "quarantine").steps;
    const compacted = q.find((s) => s.kind === "compact");
    expect(q.find((s) => s.kind === "vacuum")).toMatchObject({ status: "done", filesDeleted: compacted?.kind === "compact" ? compacted.filesRemoved : -1 });
    expect(readDelta(`${targetPath}/orders`, s3Environment(s3().endpoint)).rows).toHaveLength(rowsBefore);
    expect((await loadCheckpoint(contract, targetPath))?.batchId).toBe(summary.batches);
  }, 180_000);
});

describe("lake maintenance, formats ducklake, duckdb and parquet", () => {
  it("ducklake: maintenance racing a running stream compacts and expires, losing and duplicating nothing", async () => {
    const targetPath = lakeDir("maintain-ducklake");
    const contract = await ordersContract("ducklake");
    const N = 4_000;
    // Keys 0..N-1, then every good key again with another status: merges that delete and insert.
    const events = [...orderEvents(N), ...[...orderEvents(N)].filter((e) => !isBadOrder(e.order_id)).map((e) => ({ ...e, status: "cancelled" }))];
    let running = true;
    let rounds = 0;
    const maintain = async () => {
      const report = await maintainLake(contract, { targetPath, retainHours: DUCKLAKE_MIN_RETAIN_HOURS });
      if (report.tables[0]!.exists) rounds++;
      return report;
    };
    // A catalog file takes one process; the stream's writer and maintenance share this one.
    // Every 4th commit waits for a maintenance run, so maintenance surely runs between the
    // stream's batches however busy the machine; a loop beside it races the commits as well.
    let commits = 0;
    const sink = new StreamSink(contract, new IterableSource(events, { replayable: true }), {
      targetPath,
      batchSize: 200,
      onBatch: async () => {
        if (++commits % 4 === 0) await maintain();
      },
    });
    const run = sink.run("available_now").finally(() => (running = false));
    while (running) {
      // Before the stream made the catalog there is nothing to maintain: look again shortly.
      if (!(await maintain()).tables[0]!.exists) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const summary = await run;
    const last = await maintain();
    expect(rounds).toBeGreaterThan(Math.floor(summary.batches / 4));
    // A retention that would delete what a running transaction reads is refused, naming the option.
    await expect(maintainLake(contract, { targetPath, retainHours: 0 })).rejects.toMatchObject({ option: "retainHours" });
    expect(last.complete).toBe(true);
    const table = tableOf(last, "table");
    expect(table.after.files, "compacted").toBeLessThanOrEqual(2);
    expect(table.steps.map((s) => s.kind)).toEqual(["flush-inlined", "compact", "expire-snapshots", "vacuum"]);
    const rows = await readTable(contract, { targetPath });
    const ids = rows.map((r) => String(r["order_id"]));
    expect(new Set(ids).size, "no key twice").toBe(ids.length);
    const good = [...Array(N).keys()].filter((i) => !isBadOrder(i)).length;
    expect(ids.length, "every good key").toBe(good);
    expect(rows.every((r) => r["status"] === "cancelled"), "the newest version of every key").toBe(true);
    expect((await loadCheckpoint(contract, targetPath))?.batchId).toBe(summary.batches);
  }, 180_000);

  it("duckdb: a CHECKPOINT of the database file; parquet: file counts", async () => {
    for (const format of ["duckdb", "parquet"] as const) {
      const targetPath = lakeDir(`maintain-${format}`);
      const contract = await ordersContract(format);
      const empty = await maintainLake(contract, { targetPath });
      expect(empty.tables[0]).toMatchObject({ exists: false });
      await new StreamSink(contract, new IterableSource([...orderEvents(500)]), { targetPath, batchSize: 100, checkpoint: "memory" }).run("available_now");
      const report = await maintainLake(contract, { targetPath });
      expect(report).toMatchObject({ format, complete: true });
      const t = tableOf(report, "table");
      expect(t.exists).toBe(true);
      if (format === "duckdb") {
        expect(t.steps).toEqual([{ kind: "duckdb-checkpoint", status: "done" }]);
        expect(t.after.files).toBe(1); // the WAL is folded into the file
      } else {
        expect(t.steps[0]).toMatchObject({ kind: "none" });
        expect(t.after.files).toBe(5);
        expect(tableOf(report, "quarantine").after.files).toBe(5);
      }
      expect(await readTable(contract, { targetPath })).toHaveLength([...Array(500).keys()].filter((i) => !isBadOrder(i)).length);
    }
  }, 120_000);
});

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("lakelogic lake maintain", () => {
  it("maintains a delta lake: text, --json, and exit 2 for bad input naming the option", async () => {
    const dir = lakeDir("maintain-cli");
    const targetPath = join(dir, "lake");
    const contractFile = join(dir, "orders.yaml");
    writeFileSync(contractFile, readFileSync(CONTRACT, "utf8").replace("format: duckdb", "format: delta"));
    const contract = await loadContract(contractFile);
    expect(contract.materialization.format).toBe("delta");
    await new StreamSink(contract, new IterableSource([...orderEvents(600)], { replayable: true }), { targetPath, batchSize: 100 }).run("available_now");

    const text = await cli("lake", "maintain", contractFile, "--target-path", targetPath);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^orders \(table\) .*: \d+ files .* -> 1 file .*compacted \d+ files into 1, vacuumed 0 files unreferenced for over 168 h, checkpoint at version \d+$/m);
    expect(text.stdout).toMatch(/^orders_quarantine \(quarantine\) /m);

    const json = await cli("lake", "maintain", contractFile, "--target-path", targetPath, "--json");
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as MaintainReport;
    expect(report).toMatchObject({ format: "delta", targetPath, complete: true });
    expect(report.tables.map((t) => [t.name, t.role, t.exists])).toEqual([["orders", "table", true], ["orders_quarantine", "quarantine", true]]);
    expect(tableOf(report, "table")).toMatchObject({ before: { files: 1 }, after: { files: 1 } });
    expect(tableOf(report, "table").steps[0]).toMatchObject({ kind: "compact", status: "done", filesRemoved: 0 });

    const short = await cli("lake", "maintain", contractFile, "--target-path", targetPath, "--retain-hours", "1");
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/^lakelogic lake: --retain-hours: .*168 hours.*--allow-short-retention/m);
    const shortOk = await cli("lake", "maintain", contractFile, "--target-path", targetPath, "--retain-hours", "0", "--allow-short-retention", "--json");
    expect(shortOk.code).toBe(0);
    expect(tableOf(JSON.parse(shortOk.stdout) as MaintainReport, "table").steps[1]).toMatchObject({ kind: "vacuum", retainHours: 0 });
    expect(parquetFiles(join(targetPath, "orders"))).toBe(1);

    const misspelt = await cli("lake", "maintain", contractFile, "--retain-hour", "3");
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toMatch(/Unknown option '--retain-hour'.*did you mean --retain-hours\?/);
    const notANumber = await cli("lake", "maintain", contractFile, "--retain-hours=-1");
    expect(notANumber.code).toBe(2);
    expect(notANumber.stderr).toMatch(/--retain-hours must be a whole number of hours >= 0/);
    expect((await cli("lake", "maintain", contractFile, "--retain-hours", "1.5")).code).toBe(2);
    expect((await cli("lake", "maintain")).stderr).toMatch(/lake maintain needs a CONTRACT/);
    expect((await cli("lake", "compact", contractFile)).code).toBe(2);
    expect((await cli("lake", "maintain", join(dir, "missing.yaml"))).code).toBe(2);
    const help = await cli("lake", "maintain", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: lakelogic lake maintain CONTRACT/);
  }, 120_000);
});
