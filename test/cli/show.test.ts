/**
 * `lakelogic show` on real lakes: a small stream (`lakelogic run` on a JSON-lines file with bad
 * rows) into each format, then `show --json` gives the rows, the commits, the quarantine by rule
 * with a sample reason and raw payload, and the checkpoint where the run kept it. A DuckDB lake
 * file held by a running stream is refused with what to do, not an internal error.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import type { StreamInspection } from "../../src/pipeline/inspect.js";
import { startPostgres, type PostgresServer } from "../support/postgres.js";
import { stopProcess, waitFor } from "../support/proc.js";
import { s3ForSuite } from "../support/s3-suite.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-show-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const LONG_GARBAGE = `not json ${"x".repeat(200)}`;

/** 30 rides in 3 batches of 10: line 8 is not JSON, ride 3 has no city, rides 5, 15, 25 a negative fare. */
const events = join(tmp, "rides.ndjson");
writeFileSync(
  events,
  Array.from({ length: 30 }, (_, i) => (i === 7 ? LONG_GARBAGE : JSON.stringify({ ride_id: i, city: i === 3 ? null : "Leeds", fare: i % 10 === 5 ? -1 : 7.5 }))).join("\n") + "\n",
);
const SOURCE = JSON.stringify({ type: "file", path: events });

function contract(name: string, format: string, targetPath: string, metadata = ""): string {
  const path = join(tmp, `${name}.yaml`);
  writeFileSync(
    path,
    `version: "1.0"
dataset: rides
primary_key: [ride_id]
${metadata}model:
  fields:
    - {name: ride_id, type: long, required: true}
    - {name: city, type: string, required: true}
    - {name: fare, type: double, required: true}
quality:
  row_rules:
    - {name: fare_not_negative, sql: "fare >= 0"}
materialization:
  strategy: merge
  format: ${format}
  target_path: ${JSON.stringify(targetPath)}
`,
  );
  return path;
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

async function runAndShow(path: string): Promise<StreamInspection> {
  const run = await cli("run", path, "--source", SOURCE, "--batch-size", "10");
  expect(run.code, run.stderr).toBe(0);
  const shown = await cli("show", path, "--json");
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as StreamInspection;
}

/** `lakelogic run --mode continuous` in another process, once it has committed a batch; running until stopped. */
async function runningStream(path: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [resolve("bin/lakelogic.js"), "run", path, "--source", SOURCE, "--mode", "continuous", "--batch-size", "10"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (d: Buffer) => (log += d.toString()));
  try {
    await waitFor("the stream's first commit", async () => log.includes("batch committed"), 60_000);
  } catch (e) {
    await stopProcess(child);
    throw new Error(`${(e as Error).message}: ${log}`);
  }
  return child;
}

/** What every format shows of the same stream. */
function expectTheStream(s: StreamInspection, format: string): void {
  expect(s.format).toBe(format);
  const [table, quarantine] = s.tables;
  expect(table).toMatchObject({ role: "table", name: "rides", exists: true, rows: 25 });
  expect(table!.columns.map((c) => c.name)).toEqual(expect.arrayContaining(["ride_id", "city", "fare"]));
  expect(quarantine).toMatchObject({ role: "quarantine", name: "rides_quarantine", exists: true, rows: 5 });
  expect(quarantine!.columns.map((c) => c.name)).toEqual(expect.arrayContaining(["quarantine_id", "batch_id", "raw", "reasons", "rule_ids"]));

  expect(s.commits[0]).toMatchObject({ batchId: 3, streamKey: "stream::rides", good: 9, quarantined: 1 });
  expect(s.commits.every((c) => c.committedAt === null || !Number.isNaN(Date.parse(c.committedAt)))).toBe(true);

  expect(s.quarantine.rows).toBe(5);
  expect(s.quarantine.groups.map((g) => [g.ruleId, g.rows])).toEqual([
    ["fare_not_negative", 3],
    ["decode", 1],
    ["not_null:city", 1],
  ]);
  const [fare, decode, city] = s.quarantine.groups;
  // The newest row of each rule, in full.
  expect(fare!.sample).toMatchObject({ batchId: 3, reason: expect.stringMatching(/fare >= 0/), rawEncoding: "text" });
  expect(JSON.parse(fare!.sample.raw!)).toEqual({ ride_id: 25, city: "Leeds", fare: -1 });
  expect(decode!.sample).toMatchObject({ batchId: 1, raw: LONG_GARBAGE, record: null, reason: expect.stringMatching(/line 8: invalid JSON/) });
  expect(city!.sample.reason).toMatch(/city/);

  expect(s.checkpoint).toMatchObject({
    key: "stream::rides",
    found: true,
    batchId: 3,
    batch: { sourceCount: 10, goodCount: 9, badCount: 1 },
    totals: { sourceCount: 30, goodCount: 25, badCount: 5 },
    cursor: expect.objectContaining({ line: 30 }),
    lag: { lakeBatchesAhead: 0 },
  });
}

/** The formats that record every batch: the three commits, newest first. */
function expectEveryBatch(s: StreamInspection): void {
  expect(s.commits.map((c) => [c.batchId, c.good, c.quarantined])).toEqual([
    [3, 9, 1],
    [2, 9, 1],
    [1, 7, 3],
  ]);
}

describe("lakelogic show", () => {
  it("duckdb: the newest commit, with its counts from the stream's SQLite checkpoint", async () => {
    const lake = join(tmp, "lake-duckdb");
    const s = await runAndShow(contract("duckdb", "duckdb", lake));
    expectTheStream(s, "duckdb");
    // A duckdb lake keeps the newest batch of each stream.
    expect(s.commits).toHaveLength(1);
    expect(s.checkpoint.location).toBe(join(lake, "_lakelogic", "checkpoints.sqlite"));
  }, 60_000);

  it("parquet: the manifest's batches, and the text a person reads", async () => {
    const path = contract("parquet", "parquet", join(tmp, "lake-parquet"));
    const s = await runAndShow(path);
    expectTheStream(s, "parquet");
    expectEveryBatch(s);

    const text = await cli("show", path);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^rides: parquet lake at /);
    expect(text.stdout).toMatch(/^ {2}table {7}rides: 25 rows$/m);
    expect(text.stdout).toMatch(/^ {2}quarantine {2}rides_quarantine: 5 rows$/m);
    expect(text.stdout).toMatch(/^ {2}3 +\S+Z +9 +1 +stream::rides$/m);
    expect(text.stdout).toMatch(/^ {2}fare_not_negative: 3 rows$/m);
    // A long payload is cut for the terminal; --json has it whole.
    expect(text.stdout).toMatch(/^ {4}raw {5}not json x+… \(209 chars\) {2}\(batch 1\)$/m);
    expect(text.stdout).toMatch(/^ {2}batch +3, committed \S+Z \(\d+ s ago\)$/m);
    expect(text.stdout).toMatch(/^ {2}totals +30 records: good 25, quarantined 5, superseded 0$/m);
  }, 60_000);

  it("delta: the commits of the Delta log, and the checkpoint in the table", async () => {
    const s = await runAndShow(contract("delta", "delta", join(tmp, "lake-delta")));
    expectTheStream(s, "delta");
    expectEveryBatch(s);
    expect(s.commits.map((c) => c.version)).toEqual([2, 1, 0]);
    expect(s.checkpoint.location).toMatch(/^the lake \(delta /);
  }, 120_000);

  it("ducklake: every version of the stream's row, and the checkpoint in the catalog", async () => {
    const s = await runAndShow(contract("ducklake", "ducklake", join(tmp, "lake-ducklake")));
    expectTheStream(s, "ducklake");
    expectEveryBatch(s);
    expect(s.checkpoint.location).toMatch(/^the lake \(ducklake .*lakelogic\.ducklake/);
  }, 120_000);

  it("a lake nothing was written to yet: its tables not written, no commits, no checkpoint", async () => {
    const r = await cli("show", contract("empty", "duckdb", join(tmp, "lake-empty")), "--json");
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout) as StreamInspection;
    expect(s.tables.map((t) => t.exists)).toEqual([false, false]);
    expect(s.commits).toEqual([]);
    expect(s.checkpoint).toMatchObject({ found: false, key: "stream::rides" });
  });

  it("a parquet lake beside the stream writing it, in another process", async () => {
    const path = contract("beside", "parquet", join(tmp, "lake-beside"));
    const child = await runningStream(path);
    try {
      const r = await cli("show", path, "--json");
      expect(r.code, r.stderr).toBe(0);
      const s = JSON.parse(r.stdout) as StreamInspection;
      expect(s.tables[0]!.exists).toBe(true);
      expect(s.commits.length).toBeGreaterThan(0);
    } finally {
      await stopProcess(child);
    }
  }, 120_000);

  it("a DuckDB lake file a running stream holds: exit 1, naming the file, the process and how to look anyway", async () => {
    const lake = join(tmp, "lake-locked");
    const path = contract("locked", "duckdb", lake);
    // Another process holds the file: a continuous stream, running until it is stopped.
    const child = await runningStream(path);
    try {
      const r = await cli("show", path);
      expect(r.code).toBe(1);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.stderr).toContain(`the DuckDB lake file ${join(lake, "lakelogic.duckdb")} is locked by process ${child.pid}`);
      expect(r.stderr).toMatch(/stop the stream .*or copy lakelogic\.duckdb and lakelogic\.duckdb\.wal/);
    } finally {
      await stopProcess(child);
    }
  }, 120_000);
});

describe("lakelogic show on shared storage", () => {
  let pg: PostgresServer;
  const s3 = s3ForSuite("lake");
  beforeAll(async () => {
    pg = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it("delta on s3://", async () => {
    s3();
    const s = await runAndShow(contract("delta-s3", "delta", "s3://lake/delta"));
    expectTheStream(s, "delta");
    expectEveryBatch(s);
    expect(s.tables[0]!.location).toBe("s3://lake/delta/rides");
  }, 120_000);

  it("ducklake on a PostgreSQL catalog with data on S3", async () => {
    s3();
    const catalog = `postgres:dbname=postgres host=127.0.0.1 port=${pg.port} user=postgres`;
    const s = await runAndShow(contract("ducklake-pg", "ducklake", "s3://lake/ducklake", `metadata: {ducklake_metadata: "${catalog}"}\n`));
    expectTheStream(s, "ducklake");
    expectEveryBatch(s);
    expect(s.tables[0]!.location).toMatch(/^postgres:.*\(data s3:\/\/lake\/ducklake\/\): main\.rides$/);
  }, 180_000);
});
