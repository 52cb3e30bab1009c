import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LakeBusyError, openLake, readQuarantine, readTable } from "../../src/lake/index.js";
import { byKey, makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();

interface Manifest {
  generation: number;
  data: Array<{ file: string; rows: number; batchId: number }>;
  quarantine: Array<{ file: string; rows: number; batchId: number }>;
}
const manifest = (targetPath: string): Manifest =>
  JSON.parse(readFileSync(join(targetPath, "orders", "_lakelogic", "manifest.json"), "utf8")) as Manifest;
const parquetFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".parquet")).sort();

describe("parquet dataset layout", () => {
  it("append writes a new, uniquely named file per batch and never rewrites one", async () => {
    const c = makeContract({ format: "parquet", strategy: "append" });
    const targetPath = lakeDir("pq-append");
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    const first = parquetFiles(join(targetPath, "orders"));
    const mtime = statSync(join(targetPath, "orders", first[0]!)).mtimeMs;
    // The same batch id twice (a replay) still gets a fresh name.
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await w.write({ batchId: 2, good: [{ id: 2, name: "b" }], bad: [] });
    await w.close();
    const files = parquetFiles(join(targetPath, "orders"));
    expect(files).toHaveLength(3);
    expect(files.every((f) => /^part-b0000000[12]-[0-9a-f]{8}\.parquet$/.test(f))).toBe(true);
    expect(files).toContain(first[0]);
    expect(statSync(join(targetPath, "orders", first[0]!)).mtimeMs).toBe(mtime);
    expect(manifest(targetPath).data.map((f) => f.file).sort()).toEqual(files);
    expect(manifest(targetPath).generation).toBe(3);
  });

  it("merge rewrites only the files holding keys of the batch", async () => {
    const c = makeContract({ format: "parquet", strategy: "merge", primaryKey: ["id"] });
    const targetPath = lakeDir("pq-merge");
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [1, 2, 3].map((id) => ({ id, name: "v1" })), bad: [] });
    await w.write({ batchId: 2, good: [4, 5, 6].map((id) => ({ id, name: "v1" })), bad: [] });
    const [b1, b2] = manifest(targetPath).data;
    // Touches keys of batch 2's file only.
    await w.write({ batchId: 3, good: [{ id: 5, name: "v2" }, { id: 7, name: "v1" }], bad: [] });
    const after = manifest(targetPath).data;
    expect(after.map((f) => f.file)).toContain(b1!.file);
    expect(after.map((f) => f.file)).not.toContain(b2!.file);
    expect(after.map((f) => f.rows).reduce((a, b) => a + b)).toBe(7);
    // The replaced file is gone from disk too.
    expect(parquetFiles(join(targetPath, "orders")).sort()).toEqual(after.map((f) => f.file).sort());
    await w.close();
    expect(byKey(await readTable(c, { targetPath })).map((r) => `${String(r.id)}:${String(r.name)}`)).toEqual([
      "1:v1",
      "2:v1",
      "3:v1",
      "4:v1",
      "5:v2",
      "6:v1",
      "7:v1",
    ]);
  });

  it("merge drops a file whose every key was replaced", async () => {
    const c = makeContract({ format: "parquet", strategy: "merge", primaryKey: ["id"] });
    const targetPath = lakeDir("pq-merge-all");
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await w.write({ batchId: 2, good: [{ id: 1, name: "b" }], bad: [] });
    await w.close();
    expect(manifest(targetPath).data).toHaveLength(1);
    expect(await readTable(c, { targetPath })).toEqual([{ id: 1, name: "b" }]);
  });

  it("overwrite replaces the file set; quarantine keeps accumulating", async () => {
    const c = makeContract({ format: "parquet", strategy: "overwrite" });
    const targetPath = lakeDir("pq-overwrite");
    const w = await openLake(c, { targetPath });
    const badRow = (i: number) => ({ record: { i }, errors: [{ ruleId: "r", message: "m" }], position: i });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [badRow(1)] });
    await w.write({ batchId: 2, good: [{ id: 2, name: "b" }], bad: [badRow(2)] });
    await w.close();
    expect(parquetFiles(join(targetPath, "orders"))).toHaveLength(1);
    expect(await readTable(c, { targetPath })).toEqual([{ id: 2, name: "b" }]);
    expect(await readQuarantine(c, { targetPath })).toHaveLength(2);
    expect(parquetFiles(join(targetPath, "orders_quarantine"))).toHaveLength(2);
  });

  it("files no manifest lists (a crashed batch) are invisible and collected on the next open", async () => {
    const c = makeContract({ format: "parquet", strategy: "append" });
    const targetPath = lakeDir("pq-gc");
    let w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [{ record: {}, errors: [], position: 1 }] });
    await w.close();
    const orphan = join(targetPath, "orders", "part-b00000002-deadbeef.parquet");
    const data = parquetFiles(join(targetPath, "orders"));
    writeFileSync(orphan, readFileSync(join(targetPath, "orders", data[0]!)));
    writeFileSync(join(targetPath, "orders", "part-b00000002-cafebabe.parquet.tmp"), "partial");
    writeFileSync(join(targetPath, "orders_quarantine", "orders-b00000002-deadbeef.parquet"), "partial");
    writeFileSync(join(targetPath, "orders_quarantine", "someone-elses.parquet"), "not ours");
    expect(await readTable(c, { targetPath })).toHaveLength(1);

    w = await openLake(c, { targetPath });
    await w.close();
    expect(readdirSync(join(targetPath, "orders")).filter((f) => f !== "_lakelogic")).toEqual(data);
    // Only this table's unreferenced quarantine files go; another table's files stay.
    expect(readdirSync(join(targetPath, "orders_quarantine")).sort()).toEqual(
      [...manifest(targetPath).quarantine.map((f) => f.file), "someone-elses.parquet"].sort(),
    );
    expect(await readTable(c, { targetPath })).toHaveLength(1);
  });

  it("one writer per dataset: a second live writer is refused, a dead writer's lock is taken over", async () => {
    const c = makeContract({ format: "parquet" });
    const targetPath = lakeDir("pq-lock");
    const w = await openLake(c, { targetPath });
    await expect(openLake(c, { targetPath })).rejects.toBeInstanceOf(LakeBusyError);
    await w.close();

    // A pid that no longer exists: the lock of a killed writer.
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();
    writeFileSync(join(targetPath, "orders", "_lakelogic", "writer.lock"), dead);
    const again = await openLake(c, { targetPath });
    await again.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await again.close();
    expect(await readTable(c, { targetPath })).toHaveLength(1);
  });
});
