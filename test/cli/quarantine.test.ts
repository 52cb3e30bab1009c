/**
 * `lakelogic quarantine list | show | replay` on real lakes: a stream (`lakelogic run` over a
 * JSON-lines file) quarantines rows, the contract is fixed (a range widened), and the replay
 * writes exactly the rows that now pass — merged, once — while the rest stay quarantined with
 * their new reasons; a second replay does nothing. Then a replay killed with SIGKILL between its
 * write and its commit, and between its commit and its log, and run again: every row written once
 * and logged once.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { loadContract } from "../../src/contract/load.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { readReplayLog } from "../../src/lake/replay-log.js";

const REPO = resolve(".");
const BIN = join(REPO, "bin", "lakelogic.js");
const CHILD = join(REPO, "test", "cli", "quarantine-replay-child.ts");
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-quarantine-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function contractText(format: string, max: number): string {
  return `version: "1.0"
dataset: items
primary_key: [id]
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: amount, type: double, required: true }
    - { name: label, type: string }
quality:
  row_rules:
    - name: amount_range
      sql: "amount BETWEEN 0 AND ${max}"
materialization:
  strategy: merge
  format: ${format}
quarantine:
  enabled: true
`;
}

/** 40 lines: every 10th is not JSON, multiples of 4 have amount 150, other multiples of 7 amount 500. */
const LINES = 40;
const amountOf = (i: number) => (i % 4 === 0 ? 150 : i % 7 === 0 ? 500 : i);
const broken = (i: number) => i % 10 === 0;
const ids = (keep: (i: number) => boolean) => Array.from({ length: LINES }, (_, k) => k + 1).filter(keep);
const GOOD_FIRST = ids((i) => !broken(i) && amountOf(i) <= 100);
const NOW_GOOD = ids((i) => !broken(i) && amountOf(i) === 150);
const STILL_BAD = ids((i) => broken(i) || amountOf(i) === 500);

function writeEvents(path: string): void {
  let text = "";
  for (let i = 1; i <= LINES; i++) {
    text += broken(i) ? `{"id": ${i}, "amount": oops\n` : JSON.stringify({ id: i, amount: amountOf(i), label: `x${i}` }) + "\n";
  }
  writeFileSync(path, text);
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

function spawned(argv: string[], env: Record<string, string> = {}, onLine?: (line: string, kill: () => void) => void) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((done, reject) => {
    const child = spawn(process.execPath, argv, { cwd: tmp, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      const text = d.toString();
      stdout += text;
      for (const line of text.split("\n")) if (line) onLine?.(line, () => child.kill("SIGKILL"));
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

/** A lake of `format` in `dir` after the stream ran with the strict contract; returns both contracts' paths. */
function setUp(dir: string, format: string): { strict: string; fixed: string; events: string; lake: string } {
  const strict = join(dir, "strict.yaml");
  const fixed = join(dir, "fixed.yaml");
  writeFileSync(strict, contractText(format, 100));
  writeFileSync(fixed, contractText(format, 200));
  const events = join(dir, "in.ndjson");
  writeEvents(events);
  return { strict, fixed, events, lake: join(dir, "lake") };
}

const sorted = (rows: Array<Record<string, unknown>>) => rows.map((r) => Number(r["id"])).sort((a, b) => a - b);

describe.each(["duckdb", "delta", "parquet", "ducklake"])("lakelogic quarantine on a %s lake", (format) => {
  it("lists, shows and replays: the table gains exactly the rows that now pass, the rest keep their new reasons", async () => {
    const dir = mkdtempSync(join(tmp, `${format}-`));
    const { strict, fixed, events, lake } = setUp(dir, format);
    const run = await cli("run", strict, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", lake, "--batch-size", "15");
    expect(run.code, run.stderr).toBe(0);

    const listed = await cli("quarantine", "list", strict, "--target-path", lake, "--json");
    expect(listed.code, listed.stderr).toBe(0);
    const list = JSON.parse(listed.stdout) as { total: number; rows: Array<{ quarantineId: string; batchId: number; status: string; ruleIds: string[]; reason: string; raw: string }> };
    expect(list.total).toBe(NOW_GOOD.length + STILL_BAD.length);
    expect(list.rows.every((r) => r.status === "pending")).toBe(true);
    // Newest first.
    expect(list.rows.map((r) => r.batchId)).toEqual([...list.rows.map((r) => r.batchId)].sort((a, b) => b - a));
    const decode = await cli("quarantine", "list", strict, "--target-path", lake, "--rule", "decode", "--json");
    expect((JSON.parse(decode.stdout) as { total: number }).total).toBe(ids(broken).length);
    const limited = await cli("quarantine", "list", strict, "--target-path", lake, "--limit", "3");
    expect(limited.stdout).toContain(`… ${list.total - 3} more (--limit)`);

    const one = list.rows.find((r) => /"id": ?8,/.test(r.raw))!;
    const shown = await cli("quarantine", "show", strict, one.quarantineId, "--target-path", lake, "--json");
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ quarantineId: one.quarantineId, status: "pending", record: { id: 8, amount: 150, label: "x8" }, ruleIds: ["amount_range"], replay: null });
    expect((await cli("quarantine", "show", strict, "nope", "--target-path", lake)).code).toBe(2);

    // With the contract unchanged nothing passes; a dry run with the fix writes nothing.
    const same = JSON.parse((await cli("quarantine", "replay", strict, "--target-path", lake, "--json")).stdout) as { replayed: number; stillQuarantined: number };
    expect(same).toMatchObject({ replayed: 0, stillQuarantined: list.total });
    const dry = await cli("quarantine", "replay", fixed, "--target-path", lake, "--dry-run", "--json");
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, replayed: NOW_GOOD.length, stillQuarantined: STILL_BAD.length });
    const fixedContract = await loadContract(fixed);
    expect(sorted(await readTable(fixedContract, { targetPath: lake }))).toEqual(GOOD_FIRST);

    const replay = await cli("quarantine", "replay", fixed, "--target-path", lake, "--batch-size", "4", "--json");
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ replayKey: "stream::items#replay", replayed: NOW_GOOD.length, stillQuarantined: STILL_BAD.length });
    expect(sorted(await readTable(fixedContract, { targetPath: lake }))).toEqual([...GOOD_FIRST, ...NOW_GOOD].sort((a, b) => a - b));
    // The quarantine keeps its rows; the log holds one entry per row.
    expect(await readQuarantine(fixedContract, { targetPath: lake })).toHaveLength(list.total);
    expect((await readReplayLog(fixedContract, { targetPath: lake })).size).toBe(list.total);

    const pending = JSON.parse((await cli("quarantine", "list", fixed, "--target-path", lake, "--pending", "--json")).stdout) as typeof list;
    expect(pending.total).toBe(STILL_BAD.length);
    const reasons = pending.rows.filter((r) => r.ruleIds.includes("amount_range")).map((r) => r.reason);
    expect(reasons.length).toBeGreaterThan(0);
    for (const reason of reasons) expect(reason).toContain("BETWEEN 0 AND 200");
    const replayed = JSON.parse((await cli("quarantine", "list", fixed, "--target-path", lake, "--replayed", "--json")).stdout) as typeof list;
    expect(replayed.total).toBe(NOW_GOOD.length);
    // A written row lists the failure it was quarantined for: its rule ids and reason agree.
    for (const row of replayed.rows) {
      expect(row.ruleIds.length).toBeGreaterThan(0);
      expect(row.reason).toContain("BETWEEN 0 AND 100");
    }
    const after = JSON.parse((await cli("quarantine", "show", fixed, one.quarantineId, "--target-path", lake, "--json")).stdout) as { status: string; reasons: string[]; replay: Record<string, unknown> };
    expect(after.status).toBe("replayed");
    expect(after.reasons[0]).toContain("BETWEEN 0 AND 100");
    expect(after.replay).toMatchObject({ status: "replayed", replayKey: "stream::items#replay" });

    const again = await cli("quarantine", "replay", fixed, "--target-path", lake, "--json");
    expect(JSON.parse(again.stdout)).toMatchObject({ considered: 0, replayed: 0, batches: [] });
    expect(sorted(await readTable(fixedContract, { targetPath: lake }))).toHaveLength(GOOD_FIRST.length + NOW_GOOD.length);

    if (format === "duckdb") {
      // This process holds the DuckDB file now, as a running stream would: another process is told which file and what to do.
      const busy = await spawned([BIN, "quarantine", "replay", fixed, "--target-path", lake]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain(join(lake, "lakelogic.duckdb"));
      expect(busy.stderr).toContain("run this after it stops");
      expect(busy.stderr).not.toContain("internal error");
    }
  }, 240_000);
});

describe("lakelogic quarantine replay killed and run again", () => {
  // written: after the write, before the checkpoint's commit (a SQLite checkpoint beside a duckdb
  // lake); committed: after the commit, before the replay log (delta keeps its checkpoint in its commits).
  it.each([
    ["duckdb", "written"],
    ["duckdb", "committed"],
    ["delta", "committed"],
  ])("on %s, killed once %s: each row written once and logged once", async (format, hang) => {
    const dir = mkdtempSync(join(tmp, `kill-${format}-${hang}-`));
    const { strict, fixed, events, lake } = setUp(dir, format);
    const run = await spawned([BIN, "run", strict, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", lake]);
    expect(run.code, run.stderr).toBe(0);
    const args = ["--import", import.meta.resolve("tsx"), CHILD, fixed, "--target-path", lake, "--batch-size", "3", "--json"];
    const killed = await spawned(args, { LL_HANG: hang, LL_HANG_BATCH: "2" }, (line, kill) => {
      if (line === `${hang} 2`) kill();
    });
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    const rerun = await spawned(args);
    expect(rerun.code, rerun.stderr).toBe(0);
    const report = JSON.parse(rerun.stdout.trim().split("\n").pop()!) as { considered: number; replayed: number };
    // The rerun takes every row whose outcome was not logged: at least the killed batch's.
    expect(report.considered).toBeGreaterThanOrEqual(3);

    const contract = await loadContract(fixed);
    const table = sorted(await readTable(contract, { targetPath: lake }));
    expect(table).toEqual([...GOOD_FIRST, ...NOW_GOOD].sort((a, b) => a - b));
    const log = await readReplayLog(contract, { targetPath: lake });
    const quarantine = await readQuarantine(contract, { targetPath: lake });
    expect(log.size).toBe(quarantine.length);
    const statuses = [...log.values()].map((e) => e.status);
    expect(statuses.filter((s) => s === "replayed")).toHaveLength(NOW_GOOD.length);
    // in = good + still quarantined
    expect(table.length + statuses.filter((s) => s === "quarantined").length).toBe(LINES);
  }, 240_000);
});
