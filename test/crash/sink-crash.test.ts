import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, writeOrderEvents } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { loadContract } from "../../src/contract/index.js";
import { DuckDBTargetCheckpointStore, readQuarantine, readTable } from "../../src/lake/index.js";

/**
 * The crash proof of StreamSink: SIGKILL a real process at random moments — some of them
 * between the write and the commit — restart it until it finishes, then count every row.
 */
const RECORDS = 50_000;
const BATCH = 250;
const MIN_KILLS = 30;
const childScript = fileURLToPath(new URL("./sink-child.ts", import.meta.url));
const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface Life {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  killedAfterWrite: boolean;
}

interface KillPlan {
  /** Kill after this long, whatever the child is doing (start-up included). */
  killAfterMs?: number;
  /** Kill right after the Nth write, before its commit. */
  killOnWrite?: number;
  /** Kill `delayMs` after the Nth commit: somewhere inside the next batch. */
  killAfterCommits?: { count: number; delayMs: number };
}

/** Run the child once, killing it as the plan says. */
function life(args: string[], plan: KillPlan): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), childScript, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    let writes = 0;
    let commits = 0;
    let killedAfterWrite = false;
    const timer =
      plan.killAfterMs !== undefined ? setTimeout(() => child.kill("SIGKILL"), plan.killAfterMs) : undefined;
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (plan.killAfterCommits && commits < plan.killAfterCommits.count) {
        commits += (chunk.toString().match(/^committed /gm) ?? []).length;
        if (commits >= plan.killAfterCommits.count) setTimeout(() => child.kill("SIGKILL"), plan.killAfterCommits.delayMs);
      }
      if (plan.killOnWrite !== undefined) {
        writes += (chunk.toString().match(/^written /gm) ?? []).length;
        if (writes >= plan.killOnWrite && !killedAfterWrite) {
          killedAfterWrite = true;
          child.kill("SIGKILL");
        }
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (exitCode, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ exitCode, signal, output, killedAfterWrite });
    });
  });
}

/**
 * Run the child with `args` until it finishes, SIGKILLing it `minKills` times first: some kills
 * anywhere from start-up on, some inside a batch, and (with a separate checkpoint store) every
 * third between a write and its commit.
 */
async function killUntilDone(args: string[], mode: "sqlite" | "target", seed: number, minKills: number): Promise<{ kills: number; killsBetweenWriteAndCommit: number }> {
  let kills = 0;
  let killsBetweenWriteAndCommit = 0;
  let finished = false;
  let lives = 0;
  // Deterministic "random" so a failure can be replayed.
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

  while (!finished) {
    lives++;
    expect(lives, "the child should finish once the kills stop").toBeLessThan(minKills + 20);
    const killing = kills < minKills;
    // With a separate checkpoint store, every third kill lands between a write and its
    // commit. With checkpoint "target" there is no such window: rows and cursor commit together.
    const n = 1 + Math.floor(rand() * 3);
    const plan: KillPlan = !killing
      ? {}
      : kills % 5 === 4
        ? // Anywhere from start-up to early in the run; longer lives let a fast sink finish
          // all 50k records before the 30th kill.
          { killAfterMs: 100 + Math.floor(rand() * 900) }
        : mode === "sqlite" && kills % 3 === 0
          ? { killOnWrite: n }
          : { killAfterCommits: { count: n, delayMs: Math.floor(rand() * 25) } };
    const result = await life(args, plan);
    if (result.exitCode === 0) {
      finished = true;
      expect(result.output).toMatch(/^done /m);
    } else if (result.signal === "SIGKILL") {
      kills++;
      if (result.killedAfterWrite) killsBetweenWriteAndCommit++;
    } else {
      throw new Error(`child failed on its own (exit ${result.exitCode}):\n${result.output}`);
    }
  }
  expect(kills).toBeGreaterThanOrEqual(minKills);
  return { kills, killsBetweenWriteAndCommit };
}

/** Every good record in the target once, every bad one in quarantine once (by `indexOf` its position). */
async function expectEachOnce(lake: string, records: number, indexOf: (position: unknown) => number): Promise<void> {
  const contract = await loadContract(contractPath);
  const good = await readTable(contract, { targetPath: lake });
  const bad = await readQuarantine(contract, { targetPath: lake });

  const expectedGood = new Set<number>();
  const expectedBad = new Set<number>();
  for (let i = 0; i < records; i++) (isBadOrder(i) ? expectedBad : expectedGood).add(i);

  // Every good id exactly once.
  const goodIds = good.map((r) => Number(r.order_id));
  expect(goodIds.length).toBe(expectedGood.size);
  expect(new Set(goodIds).size).toBe(goodIds.length);
  for (const id of goodIds) expect(expectedGood.has(id)).toBe(true);

  // Every bad record in quarantine exactly once (identified by its source position).
  const badPositions = bad.map((r) => indexOf(r.position));
  expect(badPositions.length).toBe(expectedBad.size);
  expect(new Set(badPositions)).toEqual(expectedBad);

  // in = good + quarantined
  expect(goodIds.length + badPositions.length).toBe(records);
}

describe.each(["sqlite", "target"] as const)("StreamSink under SIGKILL (checkpoint: %s)", (mode) => {
  it(
    `loses nothing and duplicates nothing over ${RECORDS} records and at least ${MIN_KILLS} kills`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), `ll-crash-${mode}-`));
      dirs.push(dir);
      const lake = join(dir, "lake");
      const ckpt = join(dir, "checkpoints.sqlite");
      const args = [lake, ckpt, String(RECORDS), String(BATCH), mode];

      const { killsBetweenWriteAndCommit } = await killUntilDone(args, mode, mode === "sqlite" ? 7 : 11, MIN_KILLS);
      if (mode === "sqlite") expect(killsBetweenWriteAndCommit).toBeGreaterThanOrEqual(5);
      await expectEachOnce(lake, RECORDS, Number);

      // The checkpoint cursor is at the end.
      const store = mode === "sqlite" ? new SQLiteCheckpointStore(ckpt) : DuckDBTargetCheckpointStore.forLake(lake);
      const rec = await store.load("stream::orders");
      await store.close();
      expect(rec?.cursor).toEqual({ offset: RECORDS, exhausted: true });
      // Only committed batches count, and each record was committed once.
      expect(rec?.totals.sourceCount).toBe(RECORDS);
    },
    15 * 60_000,
  );
});

/**
 * The same proof over a file with batches that grow (no batchSize): each life starts again at
 * 1,000 records and grows, so a batch written but not committed is read again at another size.
 */
describe("StreamSink under SIGKILL, a file with growing batches (checkpoint: sqlite)", () => {
  const records = 60_000;
  const minKills = 12;
  it(`loses nothing and duplicates nothing over ${records} lines and at least ${minKills} kills`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "ll-crash-file-"));
    dirs.push(dir);
    const file = join(dir, "orders.ndjson");
    await writeOrderEvents(file, records);
    const lake = join(dir, "lake");
    const ckpt = join(dir, "checkpoints.sqlite");
    // 400 kB: batches of 1,000, 2,000, then about 2,200 lines (the budget binds).
    const args = [lake, ckpt, String(records), "grow:400000", "sqlite", file];

    const { killsBetweenWriteAndCommit } = await killUntilDone(args, "sqlite", 5, minKills);
    expect(killsBetweenWriteAndCommit).toBeGreaterThanOrEqual(2);
    await expectEachOnce(lake, records, (p) => (typeof p === "string" ? (JSON.parse(p) as { line: number }) : (p as { line: number })).line - 1);

    const store = new SQLiteCheckpointStore(ckpt);
    const rec = await store.load("stream::orders");
    await store.close();
    expect(rec?.cursor).toMatchObject({ offset: statSync(file).size, line: records });
    expect(rec?.totals.sourceCount).toBe(records);
  }, 15 * 60_000);
});
