import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { resolveLakeConfig } from "../../src/lake/config.js";
import { openLake, readQuarantine } from "../../src/lake/index.js";
import { makeContract, tempDirs } from "./helpers.js";

const dirs = tempDirs();
const bad = (id: number) => ({ record: { id, name: "x" }, errors: [{ ruleId: "r", message: "bad" }], position: { offset: id } });
const parquetFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".parquet")).sort();

describe("quarantine.target as a path (the original's meaning)", () => {
  it("parquet: quarantine files go under <path>/<table>, committed with the batch and never duplicated by a replay", async () => {
    const root = dirs("q-path");
    const qroot = join(root, "data", "quarantine");
    const targetPath = join(root, "lake");
    const c = makeContract({ format: "parquet", quarantine: { target: qroot } });
    const w = await openLake(c, { targetPath });
    const first = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2), bad(3)] });
    expect(first.badWritten).toBe(2);
    // The same batch again (a replay after a crash before the cursor commit).
    const again = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(2), bad(3)] });
    expect(again).toMatchObject({ badWritten: 0, badAlreadyPresent: 2 });
    await w.close();
    expect(parquetFiles(join(qroot, "orders"))).toHaveLength(1);
    // Nothing of the quarantine beside the table.
    expect(readdirSync(targetPath)).toEqual(["orders"]);
    // A reopened writer knows the stored rows too.
    const w2 = await openLake(c, { targetPath });
    expect(await w2.write({ batchId: 2, good: [], bad: [bad(3), bad(4)] })).toMatchObject({ badWritten: 1, badAlreadyPresent: 1 });
    await w2.close();
    const rows = await readQuarantine(c, { targetPath });
    expect(rows.map((r) => (r.record as { id: number }).id).sort()).toEqual([2, 3, 4]);
  });

  it("parquet: a file left by a crash before the manifest moved is never read and is removed at the next open", async () => {
    const root = dirs("q-path-crash");
    const qroot = join(root, "q");
    const targetPath = join(root, "lake");
    const c = makeContract({ format: "parquet", quarantine: { target: qroot } });
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [], bad: [bad(1)] });
    await w.close();
    writeFileSync(join(qroot, "orders", "orders-b00000002-deadbeef.parquet"), "partial");
    expect(await readQuarantine(c, { targetPath })).toHaveLength(1);
    const w2 = await openLake(c, { targetPath });
    await w2.close();
    expect(parquetFiles(join(qroot, "orders"))).toHaveLength(1);
  });

  it("a path whose last segment is the table's name is the table's quarantine directory itself", () => {
    const c = makeContract({ format: "parquet", quarantine: { target: "data/quarantine/orders" } });
    expect(resolveLakeConfig(c).quarantine.dir).toMatch(/data\/quarantine\/orders$/);
    const plain = makeContract({ format: "parquet" });
    expect(resolveLakeConfig(plain).quarantine.dir).toBeUndefined();
  });

  it("duckdb: a path is a directory of Parquet files too (test/lake/quarantine-path-duckdb.test.ts); an explicit quarantine.format duckdb is refused", () => {
    const c = makeContract({ format: "duckdb", quarantine: { target: "data/quarantine" } });
    expect(resolveLakeConfig(c).quarantine.dir).toMatch(/data\/quarantine\/orders$/);
    const explicit = makeContract({ format: "duckdb", quarantine: { target: "data/quarantine" }, raw: { quarantine: { format: "duckdb" } } });
    expect(() => resolveLakeConfig(explicit)).toThrow(ConfigError);
  });

  it("a URL is refused: quarantine goes to a local directory or a table", () => {
    const c = makeContract({ format: "parquet", quarantine: { target: "s3://bucket/q" } });
    expect(() => resolveLakeConfig(c)).toThrow(/is a URL/);
  });
});
