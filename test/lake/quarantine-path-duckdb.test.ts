import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { resolveLakeConfig } from "../../src/lake/config.js";
import { openLake, readQuarantine, readQuarantineFiles, readTable, type DuckDBLakeWriter, type WriteStream } from "../../src/lake/index.js";
import { BAD_PER_BATCH, GOOD_PER_BATCH } from "./fixtures/quarantine-path-data.js";
import { makeContract, tempDirs } from "./helpers.js";

const dirs = tempDirs();
const bad = (id: number) => ({ record: { id, name: "x" }, errors: [{ ruleId: "r", message: "bad" }], position: { offset: id } });
const parquetFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".parquet")).sort() : []);
const names = (paths: string[]) => paths.map((p) => p.split(/[/\\]/).pop()!).sort();
const ids = async (c: ReturnType<typeof makeContract>, targetPath: string) =>
  (await readQuarantine(c, { targetPath })).map((r) => (r.record as { id: number }).id).sort((a, b) => a - b);

/** A fresh lake: its directory, the quarantine path, and a duckdb contract quarantining there. */
function lake(label: string) {
  const root = dirs(label);
  const qroot = join(root, "data", "quarantine");
  return { targetPath: join(root, "lake"), qroot, qdir: join(qroot, "orders"), c: makeContract({ quarantine: { target: qroot } }) };
}

describe("duckdb lake, quarantine.target as a path: Parquet files listed in the lake's database", () => {
  it("good rows go to the lake's table, bad rows to one Parquet file under <path>/<table>/, listed", async () => {
    const { targetPath, qdir, c } = lake("qd-land");
    const w = await openLake(c, { targetPath });
    const r = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2), bad(3)] });
    expect(r).toMatchObject({ goodWritten: 1, badWritten: 2, badAlreadyPresent: 0 });
    // A batch without bad rows writes no quarantine file.
    await w.write({ batchId: 2, good: [{ id: 4, name: "b" }], bad: [] });
    await w.close();
    expect(await readTable(c, { targetPath })).toEqual([
      { id: 1, name: "a" },
      { id: 4, name: "b" },
    ]);
    const rows = await readQuarantine(c, { targetPath });
    expect(rows.map((q) => ({ record: q.record, reasons: q.reasons, batchId: q.batchId }))).toEqual([
      { record: { id: 2, name: "x" }, reasons: ["bad"], batchId: 1 },
      { record: { id: 3, name: "x" }, reasons: ["bad"], batchId: 1 },
    ]);
    expect(parquetFiles(qdir)).toHaveLength(1);
    expect(names(await readQuarantineFiles(c, { targetPath }))).toEqual(parquetFiles(qdir));
  });

  it("a replayed batch (direct write) adds no row and no file", async () => {
    const { targetPath, qdir, c } = lake("qd-replay");
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2), bad(3)] });
    const again = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2), bad(3)] });
    expect(again).toMatchObject({ badWritten: 0, badAlreadyPresent: 2 });
    await w.close();
    // A reopened writer finds the stored rows too.
    const w2 = await openLake(c, { targetPath });
    expect(await w2.write({ batchId: 2, good: [], bad: [bad(3), bad(4)] })).toMatchObject({ badWritten: 1, badAlreadyPresent: 1 });
    await w2.close();
    expect(await ids(c, targetPath)).toEqual([2, 3, 4]);
    expect(parquetFiles(qdir)).toHaveLength(2);
  });

  it("a replaying stream's repeated batch replaces its uncommitted attempt: same rows, one file, the old file gone", async () => {
    const { targetPath, qdir, c } = lake("qd-cursor");
    const w = await openLake(c, { targetPath });
    const stream = (previousCommittedAt: Date | null, cursor: bigint): WriteStream => ({ key: "s", replay: "cursor", previousCommittedAt, cursor });
    await w.write({ batchId: 1, good: [], bad: [bad(1), bad(2)], stream: stream(null, 1n) });
    const committed1 = new Date();
    const first = await w.write({ batchId: 2, good: [], bad: [bad(3), bad(4)], stream: stream(committed1, 2n) });
    expect(first).toMatchObject({ badWritten: 2, badAlreadyPresent: 0 });
    const before = parquetFiles(qdir);
    expect(before).toHaveLength(2);
    // Batch 2 again: its checkpoint commit never happened (a crash after the lake's COMMIT).
    const again = await w.write({ batchId: 2, good: [], bad: [bad(3), bad(4)], stream: stream(committed1, 2n) });
    expect(again.badAlreadyPresent).toBe(2);
    await w.close();
    expect(await ids(c, targetPath)).toEqual([1, 2, 3, 4]);
    const after = parquetFiles(qdir);
    expect(after).toHaveLength(2);
    expect(names(await readQuarantineFiles(c, { targetPath }))).toEqual(after);
    expect(after).not.toEqual(before);
  });

  it("a batch that fails before COMMIT removes its file at once and lists nothing", async () => {
    const { targetPath, qdir, c } = lake("qd-fail");
    const w = (await openLake(c, { targetPath })) as DuckDBLakeWriter;
    let onDisk: string[] = [];
    w.hooks.beforeCommit = () => {
      onDisk = parquetFiles(qdir);
      throw new Error("disk full");
    };
    await expect(w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2)] })).rejects.toThrow(/disk full/);
    expect(onDisk).toHaveLength(1);
    expect(parquetFiles(qdir)).toEqual([]);
    delete w.hooks.beforeCommit;
    // The retry writes the batch whole.
    expect(await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2)] })).toMatchObject({ goodWritten: 1, badWritten: 1 });
    await w.close();
    expect(await ids(c, targetPath)).toEqual([2]);
    expect(await readTable(c, { targetPath })).toHaveLength(1);
    expect(parquetFiles(qdir)).toHaveLength(1);
  });

  it("a redelivering stream: a record delivered again in a later batch is found already present", async () => {
    const { targetPath, qdir, c } = lake("qd-redeliver");
    const w = await openLake(c, { targetPath });
    const stream: WriteStream = { key: "queue", replay: "redeliver", previousCommittedAt: null };
    await w.write({ batchId: 1, good: [], bad: [bad(1), bad(2)], stream });
    const r = await w.write({ batchId: 2, good: [], bad: [bad(2), bad(1)], stream: { ...stream, previousCommittedAt: new Date() } });
    expect(r).toMatchObject({ badWritten: 0, badAlreadyPresent: 2 });
    await w.close();
    expect(await ids(c, targetPath)).toEqual([1, 2]);
    expect(parquetFiles(qdir)).toHaveLength(1);
  });
});

describe("duckdb lake, quarantine path: SIGKILL between writing the quarantine file and COMMIT", () => {
  const child = fileURLToPath(new URL("./fixtures/quarantine-path-child.ts", import.meta.url));
  const tsx = (args: string[]) => [process.execPath, ["--import", "tsx", child, ...args]] as const;
  interface Report {
    goodBatches: number[];
    bad: Array<{ id: string; batchId: number; record: { batch: number } }>;
    checkpoint: number;
  }
  const read = (targetPath: string, qroot: string): Report => {
    const [cmd, args] = tsx(["read", targetPath, qroot]);
    return JSON.parse(execFileSync(cmd, args, { encoding: "utf8" })) as Report;
  };
  /** Run a writer child to batch `last`; with `stop`, kill it when batch `stop` waits before COMMIT. */
  const writeLife = (targetPath: string, qroot: string, last: number, stop?: number, atStop?: () => void) =>
    new Promise<{ killed: boolean; output: string }>((resolve, reject) => {
      const [cmd, args] = tsx(["write", targetPath, qroot, String(last), ...(stop === undefined ? [] : [String(stop)])]);
      const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      p.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (stop !== undefined && output.includes(`files ${stop}\n`) && !p.killed) {
          try {
            atStop?.();
          } finally {
            p.kill("SIGKILL");
          }
        }
      });
      p.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      p.on("error", reject);
      p.on("exit", (code, signal) => {
        if (signal === "SIGKILL" || code === 0) resolve({ killed: signal === "SIGKILL", output });
        else reject(new Error(`child exited with ${code}:\n${output}`));
      });
    });
  /** Every batch 1..k exactly once: good rows, quarantine rows (distinct ids), checkpoint. */
  const expectBatches = (r: Report, k: number) => {
    const expectedBatches = Array.from({ length: k }, (_, i) => i + 1);
    expect([...new Set(r.goodBatches)].sort((a, b) => a - b)).toEqual(expectedBatches);
    expect(r.goodBatches).toHaveLength(k * GOOD_PER_BATCH);
    expect(r.bad).toHaveLength(k * BAD_PER_BATCH);
    expect(new Set(r.bad.map((b) => b.id)).size).toBe(k * BAD_PER_BATCH);
    expect([...new Set(r.bad.map((b) => b.record.batch))].sort((a, b) => a - b)).toEqual(expectedBatches);
    expect(r.checkpoint).toBe(k);
  };

  it("loses and duplicates nothing; the unlisted file is never read and is gone after the next open", async () => {
    const root = dirs("qd-crash");
    const targetPath = join(root, "lake");
    const qroot = join(root, "data", "quarantine");
    const qdir = join(qroot, "orders");
    let onDiskAtKill: string[] = [];
    const life1 = await writeLife(targetPath, qroot, 3, 3, () => (onDiskAtKill = parquetFiles(qdir)));
    expect(life1.killed).toBe(true);
    expect(life1.output).toContain("committed 2\n");
    // The kill hit the window: batch 3's file was on disk, uncommitted.
    expect(onDiskAtKill).toHaveLength(3);
    const afterCrash = read(targetPath, qroot);
    expectBatches(afterCrash, 2);

    const life2 = await writeLife(targetPath, qroot, 4);
    expect(life2.killed).toBe(false);
    expectBatches(read(targetPath, qroot), 4);
    // One file per committed batch: the crashed attempt's file was removed, batch 3 written again.
    const onDisk = parquetFiles(qdir);
    expect(onDisk).toHaveLength(4);
    expect(onDisk).not.toContain(onDiskAtKill.find((f) => f.includes("-b00000003-")));
  }, 60_000);
});

describe("quarantine path on a duckdb lake: configuration", () => {
  it("the path is a directory of Parquet files: <path>/<table>, or <path> itself when it ends in the table's name", () => {
    expect(resolveLakeConfig(makeContract({ quarantine: { target: "data/quarantine" } })).quarantine.dir).toMatch(/data\/quarantine\/orders$/);
    expect(resolveLakeConfig(makeContract({ quarantine: { target: "q/orders" } })).quarantine.dir).toMatch(/q\/orders$/);
    expect(resolveLakeConfig(makeContract()).quarantine.dir).toBeUndefined();
  });

  it("quarantine.format: parquet written explicitly with a path is what the lake does, so it is accepted", () => {
    const c = makeContract({ quarantine: { target: "data/quarantine", format: "parquet" }, raw: { quarantine: { format: "parquet" } } });
    expect(resolveLakeConfig(c).quarantine.dir).toMatch(/data\/quarantine\/orders$/);
  });

  it("quarantine.format: duckdb written explicitly with a path is refused: one transaction writes one database file", () => {
    const c = makeContract({ quarantine: { target: "data/quarantine", format: "duckdb" }, raw: { quarantine: { format: "duckdb" } } });
    let err: unknown;
    try {
      resolveLakeConfig(c);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toMatch(/quarantine\.format/);
    expect(message).toMatch(/one transaction.*one database file/);
    // The two fixes: drop the format (Parquet files listed in the lake's database), or a table name.
    expect(message).toMatch(/remove quarantine\.format/i);
    expect(message).toMatch(/quarantine\.target as a table name/);
  });
});
