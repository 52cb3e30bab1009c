/**
 * `lakelogic checkpoint import`: a stream migrated from the Python LakeLogic package continues
 * where the Python one stopped.
 *
 * The Python checkpoint files here are made with better-sqlite3 following the package's own
 * schema and encoding (lakelogic/core/stream_sink.py, SQLiteCheckpointStore 1.84.0: table
 * `stream_checkpoints`, cursor as `json.dumps`, committed_at as ISO 8601 UTC without
 * microseconds), not by the Python package itself, which the test machines do not have.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent, orderEvents } from "../../examples/orders.js";
import { main } from "../../src/cli/main.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointRecord, Cursor } from "../../src/checkpoint/types.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { decodeCursor as decodeKafkaCursor } from "../../src/sources/kafka/cursor.js";

const CONTRACT = resolve("examples", "orders.yaml");
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-cp-import-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const fresh = (name: string) => join(tmp, `${++n}-${name}`);

interface PyRow {
  key: string;
  cursor: unknown;
  batchId: number;
  committedAt?: string | null;
  counts?: [number, number, number];
}

/** A checkpoint file as the Python package's SQLiteCheckpointStore writes it. */
function pythonCheckpoints(rows: PyRow[]): string {
  const path = fresh("lakelogic_stream_checkpoints.sqlite");
  const db = new Database(path);
  db.exec(`CREATE TABLE IF NOT EXISTS stream_checkpoints (
    key           TEXT PRIMARY KEY,
    cursor_json   TEXT NOT NULL,
    batch_id      INTEGER NOT NULL,
    committed_at  TEXT,
    source_count  INTEGER,
    good_count    INTEGER,
    bad_count     INTEGER
  )`);
  const insert = db.prepare("INSERT INTO stream_checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const r of rows) {
    const [s, g, b] = r.counts ?? [100, 95, 5];
    insert.run(r.key, JSON.stringify(r.cursor), r.batchId, r.committedAt === undefined ? "2026-03-01T12:00:00+00:00" : r.committedAt, s, g, b);
  }
  db.close();
  return path;
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(["checkpoint", "import", ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

async function stored(path: string, key: string): Promise<CheckpointRecord | undefined> {
  const store = new SQLiteCheckpointStore(path);
  try {
    return await store.load(key);
  } finally {
    await store.close();
  }
}

describe("lakelogic checkpoint import", () => {
  it("writes a Kafka checkpoint where a run of the contract looks, in the Kafka source's own cursor form", async () => {
    const from = pythonCheckpoints([{ key: "stream::orders", cursor: { "orders:0": 120, "orders:1": 95 }, batchId: 7, counts: [50, 48, 2] }]);
    const lake = fresh("lake");
    const r = await cli(CONTRACT, "--from", from, "--target-path", lake);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toMatch(/^imported stream::orders: batch 7, cursor \{"orders:0":120,"orders:1":95\}/);
    const record = await stored(join(lake, "_lakelogic", "checkpoints.sqlite"), "stream::orders");
    expect(record).toMatchObject({
      batchId: 7,
      cursor: { "orders:0": 120, "orders:1": 95 },
      batch: { sourceCount: 50, goodCount: 48, badCount: 2, supersededCount: 0 },
      totals: { sourceCount: 50, goodCount: 48, badCount: 2, supersededCount: 0 },
      writerId: "import:python-lakelogic",
    });
    expect(record!.committedAt.toISOString()).toBe("2026-03-01T12:00:00.000Z");
    // Python stores the next offset per partition, as the Kafka source here reads it.
    expect(decodeKafkaCursor(record!.cursor, "orders", "kafka orders", "cursor")).toEqual(new Map([[0, 120], [1, 95]]));
  });

  it("a type: stream contract: a run beside the Python checkpoint refuses to start over; a bare import continues it in place", async () => {
    const dir = fresh("stream-contract");
    mkdirSync(join(dir, "_checkpoints"), { recursive: true });
    const contractPath = join(dir, "rides.yaml");
    writeFileSync(
      contractPath,
      [
        "dataset: rides",
        "primary_key: [ride_id]",
        "source: {type: stream, path: rides, options: {kind: kafka, brokers: 127.0.0.1:9, trigger: available_now}}",
        "model: {fields: [{name: ride_id, type: long, required: true}]}",
        `materialization: {strategy: merge, format: duckdb, target_path: ${JSON.stringify(join(dir, "lake"))}}`,
      ].join("\n"),
    );
    // The Python package keeps this contract's checkpoint at _checkpoints/rides.sqlite beside it: where a run here looks too.
    const beside = join(dir, "_checkpoints", "rides.sqlite");
    copyFileSync(pythonCheckpoints([{ key: "stream::rides", cursor: { "rides:0": 40 }, batchId: 4 }]), beside);

    const contract = await loadContract(contractPath);
    const sink = (reset: boolean) => new StreamSink(contract, new IterableSource([{ ride_id: 1 }]), { checkpoint: beside, handleSignals: false, resetCheckpoint: reset });
    await expect(sink(false).run("available_now")).rejects.toThrow(/holds this stream's checkpoint as the Python LakeLogic package wrote it \(batch 4\).*lakelogic checkpoint import/);
    expect(await stored(beside, "stream::rides")).toBeUndefined();

    const r = await cli(contractPath);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(await stored(beside, "stream::rides")).toMatchObject({ batchId: 4, cursor: { "rides:0": 40 } });
  });

  it("lets a stream continue after the Python run's last batch: a count cursor for a replayable iterable", async () => {
    const from = pythonCheckpoints([{ key: "stream::orders", cursor: 300, batchId: 3 }]);
    const lake = fresh("lake");
    expect((await cli(CONTRACT, "--from", from, "--target-path", lake, "--cursor", "iterable")).code).toBe(0);
    const batches: number[] = [];
    const summary = await new StreamSink(CONTRACT, new IterableSource(() => orderEvents(1000), { replayable: true }), {
      targetPath: lake,
      batchSize: 350,
      onBatch: (b) => void batches.push(b.batchId),
    }).run("available_now");
    expect(summary).toMatchObject({ resumedFrom: { offset: 300, exhausted: false }, sourceCount: 700 });
    // The batch ids continue the Python run's (the last one marks the iterable's end).
    expect(batches).toEqual([4, 5, 6]);
    const contract = await loadContract(CONTRACT);
    const ids = (await readTable(contract, { targetPath: lake })).map((row) => Number(row.order_id));
    const bad = await readQuarantine(contract, { targetPath: lake });
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(300);
    expect(ids.length + bad.length).toBe(700);
    expect(bad.length).toBe([...Array(700).keys()].filter((i) => isBadOrder(i + 300)).length);
  });

  it("hands a cursor_fn value to a StreamSink cursorFn source as it was", async () => {
    const from = pythonCheckpoints([{ key: "stream::orders", cursor: 41, batchId: 2 }]);
    const lake = fresh("lake");
    expect((await cli(CONTRACT, "--from", from, "--target-path", lake, "--cursor", "value")).code).toBe(0);
    const calls: Array<Cursor | undefined> = [];
    const summary = await new StreamSink(
      CONTRACT,
      function* (after: Cursor | undefined) {
        calls.push(after);
        for (let i = (after as number) + 1; i < 60; i++) yield orderEvent(i);
      },
      { targetPath: lake, cursorFn: (r) => (r as { order_id: number }).order_id },
    ).run("available_now");
    expect(calls).toEqual([41]);
    expect(summary).toMatchObject({ sourceCount: 18, cursor: 59 });
  });

  it("converts a watermark and an SSE id as told, and imports every key without a contract", async () => {
    const from = pythonCheckpoints([
      { key: "stream::events", cursor: "evt-812", batchId: 12 },
      { key: "stream::rows", cursor: "2026-02-28T23:59:59", batchId: 4, committedAt: null },
    ]);
    const dest = fresh("cp.sqlite");
    const sse = await cli("--from", from, "--checkpoint", dest, "--key", "stream::events", "--cursor", "sse");
    const wm = await cli("--from", from, "--checkpoint", dest, "--key", "stream::rows", "--cursor", "watermark");
    expect([sse.code, wm.code]).toEqual([0, 0]);
    expect(await stored(dest, "stream::events")).toMatchObject({ batchId: 12, cursor: "evt-812" });
    expect(await stored(dest, "stream::rows")).toMatchObject({ batchId: 4, cursor: { watermark: "2026-02-28T23:59:59" } });

    const all = fresh("all.sqlite");
    const both = await cli("--from", from, "--checkpoint", all, "--cursor", "value");
    expect(both.code).toBe(0);
    expect(both.stdout.trim().split("\n").map((l) => /^imported (stream::\w+): /.exec(l)?.[1])).toEqual(["stream::events", "stream::rows"]);
  });

  it("leaves a checkpoint at the same or a later batch alone unless --force, writing nothing", async () => {
    const from = pythonCheckpoints([
      { key: "stream::a", cursor: { "t:0": 10 }, batchId: 5 },
      { key: "stream::b", cursor: { "t:0": 20 }, batchId: 5 },
    ]);
    const dest = fresh("cp.sqlite");
    const store = new SQLiteCheckpointStore(dest);
    const newer: CheckpointRecord = {
      key: "stream::b",
      cursor: { "t:0": 99 },
      batchId: 9,
      committedAt: new Date("2026-03-02T00:00:00Z"),
      batch: { sourceCount: 1, goodCount: 1, badCount: 0, supersededCount: 0 },
      totals: { sourceCount: 9, goodCount: 9, badCount: 0, supersededCount: 0 },
      writerId: "sink:x",
    };
    await store.overwrite(newer);
    await store.close();

    const refused = await cli("--from", from, "--checkpoint", dest);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds "stream::b" at batch 9, not older than the Python checkpoint's batch 5; nothing was written\. Pass --force/);
    expect(await stored(dest, "stream::a")).toBeUndefined();
    expect(await stored(dest, "stream::b")).toMatchObject({ batchId: 9, cursor: { "t:0": 99 } });

    const forced = await cli("--from", from, "--checkpoint", dest, "--force");
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/^replaced stream::b: batch 5, cursor \{"t:0":20\} \(was batch 9, committed 2026-03-02T00:00:00.000Z\)$/m);
    expect(await stored(dest, "stream::b")).toMatchObject({ batchId: 5, cursor: { "t:0": 20 } });

    const again = await cli("--from", from, "--checkpoint", dest);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^unchanged stream::a: batch 5/m);
  });

  it("writes nothing on --dry-run", async () => {
    const from = pythonCheckpoints([{ key: "stream::orders", cursor: { "orders:0": 1 }, batchId: 1 }]);
    const dest = fresh("cp.sqlite");
    const r = await cli("--from", from, "--checkpoint", dest, "--dry-run");
    expect(r.stdout).toMatch(/^would be imported stream::orders: batch 1/);
    expect(await stored(dest, "stream::orders")).toBeUndefined();
  });

  it("refuses what it cannot convert faithfully, and bad input, with exit 2", async () => {
    const counted = pythonCheckpoints([{ key: "stream::orders", cursor: 300, batchId: 3 }]);
    const auto = await cli(CONTRACT, "--from", counted, "--target-path", fresh("lake"));
    expect(auto.code).toBe(2);
    expect(auto.stderr).toMatch(/checkpoint "stream::orders": the cursor 300 could come from several kinds of source; say which with --cursor/);

    const path = fresh("huge.sqlite");
    const db = new Database(path);
    db.exec("CREATE TABLE stream_checkpoints (key TEXT PRIMARY KEY, cursor_json TEXT NOT NULL, batch_id INTEGER NOT NULL, committed_at TEXT, source_count INTEGER, good_count INTEGER, bad_count INTEGER)");
    db.prepare("INSERT INTO stream_checkpoints VALUES ('k', '{\"t:0\": 123456789012345678901}', 2, NULL, 1, 1, 0)").run();
    db.close();
    const huge = await cli("--from", path, "--checkpoint", fresh("cp.sqlite"));
    expect(huge.stderr).toMatch(/holds the number .* which JavaScript cannot hold exactly/);

    expect((await cli("--from", counted)).stderr).toMatch(/give --checkpoint LOCATION, or a CONTRACT/);
    expect((await cli("--from", counted, "--checkpoint", fresh("x.sqlite"), "--key", "stream::nope")).stderr).toMatch(
      /has no checkpoint "stream::nope"; it holds: stream::orders/,
    );
    const notPython = fresh("ours.sqlite");
    await new SQLiteCheckpointStore(notPython).close();
    expect((await cli("--from", notPython, "--checkpoint", fresh("y.sqlite"))).stderr).toMatch(/has no table stream_checkpoints/);
    expect((await cli("--from", counted, "--checkpoint", "memory")).code).toBe(2);
    expect((await cli("--from", counted, "--checkpoint", fresh("z.sqlite"), "--cursor", "offsets")).stderr).toMatch(/--cursor must be one of auto, kafka/);
  });
});
