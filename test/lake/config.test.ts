import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { ConfigError } from "../../src/errors.js";
import { openLake, resolveLakeConfig, TableContractError } from "../../src/lake/index.js";
import { makeContract, tempDir } from "./helpers.js";

const dir = tempDir("config");
afterAll(() => dir.cleanup());

async function configError(contract: Contract): Promise<ConfigError> {
  const targetPath = join(dir.path, `lake-${Math.random().toString(36).slice(2)}`);
  const err = await openLake(contract, { targetPath }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  // Checked before anything touches the disk.
  expect(existsSync(targetPath)).toBe(false);
  return err as ConfigError;
}

describe("lake configuration is checked up front", () => {
  it("merge without a primary key is an error, never a silent append", async () => {
    const err = await configError(makeContract({ strategy: "merge", primaryKey: [] }));
    expect(err.option).toBe("primary_key");
    expect(err.message).toMatch(/merge needs a primary_key/);
  });

  it("scd2 says it is not supported yet", async () => {
    const err = await configError(makeContract({ strategy: "scd2", primaryKey: ["id"] }));
    expect(err.option).toBe("materialization.strategy");
    expect(err.message).toMatch(/scd2 is not supported yet/);
  });

  it("unknown format and strategy name the option and the choices", async () => {
    const f = makeContract();
    (f.materialization as { format: string }).format = "iceberg";
    const ef = await configError(f);
    expect(ef.option).toBe("materialization.format");
    expect(ef.message).toMatch(/duckdb, parquet, delta/);
    const s = makeContract();
    (s.materialization as { strategy: string }).strategy = "upsert";
    expect((await configError(s)).option).toBe("materialization.strategy");
  });

  it("a format the contract declares but no engine here writes (iceberg) is refused, never written as another format", async () => {
    const c = parseContract("dataset: d\nprimary_key: [id]\nmodel: {fields: [{name: id, type: long}]}\nmaterialization: {strategy: merge, format: iceberg}\n");
    expect(c.materialization.declaredFormat).toBe("iceberg");
    const err = await configError(c);
    expect(err.option).toBe("materialization.format");
    expect(err.message).toMatch(/"iceberg" is not a format this runtime's engines write \(duckdb, parquet, delta, ducklake\)/);
  });

  it("format delta resolves with its URI kept as a URI, and duckdb refuses the URI naming delta", () => {
    const c = parseContract("dataset: d\nprimary_key: [id]\nmodel: {fields: [{name: id, type: long}]}\nmaterialization: {strategy: merge, format: delta}\n");
    expect(c.materialization.format).toBe("delta");
    expect(resolveLakeConfig(c, { targetPath: "s3://bucket/lake/" }).targetPath).toBe("s3://bucket/lake");
    expect(() => resolveLakeConfig(c, { targetPath: "ftp://host/lake" })).toThrow(/format delta writes a local path or one of s3:\/\//);
    const local = parseContract("dataset: d\nmodel: {fields: [{name: id, type: long}]}\n");
    expect(() => resolveLakeConfig(local, { targetPath: "s3://bucket/lake" })).toThrow(/materialization\.format: delta \(which writes s3:\/\/.*\) or ducklake/);
  });

  it("a primary key must be a declared field", async () => {
    const err = await configError(makeContract({ strategy: "merge", primaryKey: ["order_id"] }));
    expect(err.option).toBe("primary_key");
    expect(err.message).toMatch(/order_id.*not a declared field/);
  });

  it("quarantine target must differ from the table, and table names are single path segments", async () => {
    expect((await configError(makeContract({ quarantine: { target: "orders" } }))).option).toBe("quarantine.target");
    const c = makeContract();
    c.materialization.table = "../escape";
    expect((await configError(c)).option).toBe("materialization.table");
  });

  it("an explicit quarantine.format different from the table's is refused", async () => {
    const c = makeContract({ format: "duckdb", quarantine: { format: "parquet" }, raw: { quarantine: { format: "parquet" } } });
    expect((await configError(c)).option).toBe("quarantine.format");
  });

  it("a bad decimal precision names the field", async () => {
    const err = await configError(makeContract({ fields: [["id", "integer"], ["p", "decimal", 40, 2]] }));
    expect(err.option).toBe("model.fields.p.type");
  });

  it("defaults: duckdb, ./lake, <table>_quarantine; targetPath overrides the contract", () => {
    const c = makeContract();
    const cfg = resolveLakeConfig(c);
    expect(cfg.format).toBe("duckdb");
    expect(cfg.targetPath).toBe(join(process.cwd(), "lake"));
    expect(cfg.quarantine.target).toBe("orders_quarantine");
    c.materialization.targetPath = "from-contract";
    expect(resolveLakeConfig(c).targetPath).toBe(join(process.cwd(), "from-contract"));
    expect(resolveLakeConfig(c, { targetPath: "override" }).targetPath).toBe(join(process.cwd(), "override"));
  });

  it.each(["duckdb", "parquet"] as const)("%s: a column's type cannot change under it", async (format) => {
    const targetPath = join(dir.path, `retype-${format}`);
    const w = await openLake(makeContract({ format }), { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await w.close();
    const err = await openLake(makeContract({ format, fields: [["id", "string"], ["name", "string"]] }), { targetPath }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TableContractError);
    expect((err as TableContractError).changes.map((c) => c.option)).toEqual(["model.fields.id"]);
    // The refused writer let go of the dataset: the original contract still opens.
    await (await openLake(makeContract({ format }), { targetPath })).close();
  });
});
