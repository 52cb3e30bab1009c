import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LakeFormat } from "../../src/contract/types.js";
import { ConfigError } from "../../src/errors.js";
import { DuckDBInstance } from "../../src/util/duckdb.js";
import { DUCKDB_FILE, openLake, readTable, resolveLakeConfig, TableContractError } from "../../src/lake/index.js";
import { acquireDatabase } from "../../src/lake/duckdb-db.js";
import { readManifest, sqlList, tableDir } from "../../src/lake/parquet-writer.js";
import { byKey, makeContract, tempDirs, type ContractOptions } from "./helpers.js";

/**
 * A contract changed under an existing table (docs/lake.md, "The table's contract"): a changed
 * primary key, strategy or column type, and under strict evolution an added or removed field,
 * are refused when the lake opens, with the table as it was; compatible reopens write on.
 */
const lakeDir = tempDirs();

/** The error `openLake` rejects with; the writer it opened instead is closed and reported. */
async function refused(options: ContractOptions, targetPath: string): Promise<TableContractError> {
  const err = await openLake(makeContract(options), { targetPath }).then(
    async (w) => {
      await w.close();
      return new Error("opened");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TableContractError);
  const e = err as TableContractError;
  expect(e.code).toBe("LAKE_TABLE_CONTRACT");
  expect(e.retriable).toBe(false);
  return e;
}

async function write(options: ContractOptions, targetPath: string, batchId: number, good: Array<Record<string, unknown>>): Promise<void> {
  const w = await openLake(makeContract(options), { targetPath });
  try {
    await w.write({ batchId, good, bad: [] });
  } finally {
    await w.close();
  }
}

/** Every stored row, every column (dropped fields' and `_extra` included), without the lake's bookkeeping. */
async function storedRows(options: ContractOptions, targetPath: string): Promise<Array<Record<string, unknown>>> {
  const config = resolveLakeConfig(makeContract(options), { targetPath });
  let rows: unknown[][];
  let names: string[];
  if (config.format === "duckdb") {
    const db = await acquireDatabase(join(targetPath, DUCKDB_FILE));
    const conn = await db.connect();
    const reader = await db.exclusive(() => conn.runAndReadAll(`SELECT * EXCLUDE (_lakelogic_seq) FROM ${config.table}`));
    db.release();
    [rows, names] = [reader.getRows(), reader.columnNames()];
  } else {
    const files = readManifest(config)!.data.map((f) => join(tableDir(config), f.file));
    const conn = await (await DuckDBInstance.create(":memory:")).connect();
    const reader = await conn.runAndReadAll(`SELECT * EXCLUDE (_lakelogic_seq) FROM read_parquet(${sqlList(files)}, union_by_name = true)`);
    [rows, names] = [reader.getRows(), reader.columnNames()];
  }
  return rows.map((r) => Object.fromEntries(names.map((n, i) => [n, typeof r[i] === "bigint" ? Number(r[i]) : r[i]])));
}

/** What the table records it was written with. */
async function recorded(options: ContractOptions, targetPath: string): Promise<unknown> {
  const config = resolveLakeConfig(makeContract(options), { targetPath });
  if (config.format === "parquet") return readManifest(config)?.contract;
  const db = await acquireDatabase(join(targetPath, DUCKDB_FILE));
  const conn = await db.connect();
  const rows = await db.exclusive(async () =>
    (await conn.runAndReadAll(`SELECT primary_key, strategy FROM _lakelogic_tables WHERE table_name = '${config.table}'`)).getRows(),
  );
  db.release();
  return rows.map(([key, strategy]) => ({ primaryKey: JSON.parse(String(key)) as unknown, strategy }))[0];
}

describe.each<LakeFormat>(["duckdb", "parquet"])("%s: the table's contract", (format) => {
  const keyed = (o: ContractOptions = {}): ContractOptions => ({
    format,
    strategy: "merge",
    primaryKey: ["id"],
    fields: [["id", "integer"], ["seq", "integer"], ["name", "string"]],
    ...o,
  });
  const plain = (o: ContractOptions = {}): ContractOptions => ({ format, ...o });

  it("a changed primary key is refused, old → new, and the table keeps one row per key", async () => {
    const targetPath = lakeDir(`${format}-key`);
    await write(keyed(), targetPath, 1, [{ id: 1, seq: 1, name: "a" }, { id: 2, seq: 1, name: "b" }, { id: 3, seq: 1, name: "c" }]);
    const err = await refused(keyed({ primaryKey: ["id", "seq"] }), targetPath);
    expect(err.table).toBe("orders");
    expect(err.changes).toEqual([{ option: "primary_key", was: "[id]", now: "[id, seq]" }]);
    expect(err.message).toMatch(/primary_key: \[id\] → \[id, seq\]/);
    expect(err.message).toMatch(/write to a new table \(another materialization\.table or target_path\)/);
    // The same key in another order or case is the same key.
    await write(keyed({ primaryKey: ["ID"] }), targetPath, 2, [{ id: 3, seq: 2, name: "c2" }]);
    expect(byKey(await readTable(makeContract(keyed()), { targetPath }))).toEqual([
      { id: 1, seq: 1, name: "a" },
      { id: 2, seq: 1, name: "b" },
      { id: 3, seq: 2, name: "c2" },
    ]);
  });

  it("a changed strategy is refused; a change to overwrite is accepted, and recorded with its batch", async () => {
    const targetPath = lakeDir(`${format}-strategy`);
    await write(keyed(), targetPath, 1, [{ id: 1, seq: 1, name: "a" }]);
    expect((await refused(keyed({ strategy: "append" }), targetPath)).changes).toEqual([
      { option: "materialization.strategy", was: "merge", now: "append" },
    ]);
    // Opened under overwrite and closed unwritten: the table is still the merge's.
    await (await openLake(makeContract(keyed({ strategy: "overwrite", primaryKey: [] })), { targetPath })).close();
    expect(await recorded(keyed(), targetPath)).toMatchObject({ primaryKey: ["id"], strategy: "merge" });
    await write(keyed({ strategy: "overwrite", primaryKey: [] }), targetPath, 2, [{ id: 2, seq: 1, name: "b" }]);
    expect(await recorded(keyed(), targetPath)).toMatchObject({ primaryKey: [], strategy: "overwrite" });
    const back = await refused(keyed(), targetPath);
    expect(back.changes).toEqual([{ option: "materialization.strategy", was: "overwrite", now: "merge" }]);
    expect(back.message).toMatch(/materialization\.strategy: overwrite → merge/);
    expect(await readTable(makeContract(keyed()), { targetPath })).toEqual([{ id: 2, seq: 1, name: "b" }]);

    const appended = lakeDir(`${format}-append`);
    await write(plain(), appended, 1, [{ id: 1, name: "a" }, { id: 1, name: "a" }]);
    expect((await refused(plain({ strategy: "merge", primaryKey: ["id"] }), appended)).changes).toEqual([
      { option: "materialization.strategy", was: "append", now: "merge" },
    ]);
    // append never reads the key: declaring one changes nothing the table holds.
    await write(plain({ primaryKey: ["id"] }), appended, 2, [{ id: 1, name: "a" }]);
    expect(await readTable(makeContract(plain()), { targetPath: appended })).toHaveLength(3);
  });

  it("a changed column type is refused, old → new", async () => {
    const targetPath = lakeDir(`${format}-type`);
    await write(plain(), targetPath, 1, [{ id: 1, name: "a" }]);
    const err = await refused(plain({ fields: [["id", "string"], ["name", "string"]] }), targetPath);
    expect(err.changes).toEqual([{ option: "model.fields.id", was: "BIGINT", now: "VARCHAR" }]);
    expect(err.message).toMatch(/model\.fields\.id: BIGINT → VARCHAR/);
    // Also for a column only older rows hold: a field removed, then declared again with another type.
    await write(plain({ fields: [["id", "integer"]] }), targetPath, 2, [{ id: 2 }]);
    expect((await refused(plain({ fields: [["id", "integer"], ["name", "integer"]] }), targetPath)).changes).toEqual([
      { option: "model.fields.name", was: "VARCHAR", now: "BIGINT" },
    ]);
    expect(byKey(await readTable(makeContract(plain()), { targetPath }))).toEqual([
      { id: 1, name: "a" },
      { id: 2, name: null },
    ]);
  });

  it("evolution strict refuses added and removed fields, naming them, and leaves the table's columns as they were", async () => {
    const targetPath = lakeDir(`${format}-strict`);
    await write(plain({ evolution: "strict" }), targetPath, 1, [{ id: 1, name: "a" }]);
    const added = await refused(plain({ evolution: "strict", fields: [["id", "integer"], ["name", "string"], ["note", "string"]] }), targetPath);
    expect(added.changes).toEqual([{ option: "model.fields.note", was: "absent", now: "VARCHAR" }]);
    expect(added.message).toMatch(/model\.fields\.note: absent → VARCHAR \(added to the contract\)/);
    expect(added.message).toMatch(/schema_policy\.evolution is strict/);
    const both = await refused(plain({ evolution: "strict", fields: [["id", "integer"], ["note", "string"]] }), targetPath);
    expect(both.changes).toEqual([
      { option: "model.fields.note", was: "absent", now: "VARCHAR" },
      { option: "model.fields.name", was: "VARCHAR", now: "absent" },
    ]);
    expect(both.message).toMatch(/model\.fields\.name: VARCHAR → absent \(removed from the contract\)/);
    expect(await storedRows(plain(), targetPath)).toEqual([{ id: 1, name: "a" }]);
    // The same fields under strict write on.
    await write(plain({ evolution: "strict" }), targetPath, 2, [{ id: 2, name: "b" }]);
    expect(byKey(await storedRows(plain(), targetPath))).toEqual([{ id: 1, name: "a" }, { id: 2, name: "b" }]);
  });

  it("a reopen with the same contract writes on, and the table records what it was written with", async () => {
    const targetPath = lakeDir(`${format}-same`);
    await write(keyed({ evolution: "strict" }), targetPath, 1, [{ id: 1, seq: 1, name: "a" }, { id: 3, seq: 1, name: "c" }]);
    await write(keyed({ evolution: "strict" }), targetPath, 2, [{ id: 3, seq: 2, name: "c2" }]);
    expect(byKey(await readTable(makeContract(keyed()), { targetPath }))).toEqual([
      { id: 1, seq: 1, name: "a" },
      { id: 3, seq: 2, name: "c2" },
    ]);
    const record = await recorded(keyed(), targetPath);
    expect(record).toMatchObject({ primaryKey: ["id"], strategy: "merge" });
    if (format === "parquet") {
      // Files of other batches may lack a column, so the manifest keeps every column and its type.
      expect(record).toMatchObject({ columns: [{ name: "id", type: "BIGINT" }, { name: "seq", type: "BIGINT" }, { name: "name", type: "VARCHAR" }] });
    }
  });

  it("under the default evolution an added field becomes a column of the table (old rows NULL)", async () => {
    const targetPath = lakeDir(`${format}-added`);
    await write(plain(), targetPath, 1, [{ id: 1, name: "a" }]);
    const wider = plain({ fields: [["id", "integer"], ["name", "string"], ["note", "string"]] });
    await write(wider, targetPath, 2, [{ id: 2, name: "b", note: "n" }]);
    expect(byKey(await readTable(makeContract(wider), { targetPath }))).toEqual([
      { id: 1, name: "a", note: null },
      { id: 2, name: "b", note: "n" },
    ]);
    // The column is the table's now: strict with the fields it was made with names it as removed.
    expect((await refused(plain({ evolution: "strict" }), targetPath)).changes).toEqual([
      { option: "model.fields.note", was: "VARCHAR", now: "absent" },
    ]);
    await write({ ...wider, evolution: "strict" }, targetPath, 3, [{ id: 3, name: "c", note: "m" }]);
  });

  it("a removed field's column stays and reads NULL in new rows; under unknown_fields: allow the value goes to _extra", async () => {
    const targetPath = lakeDir(`${format}-removed`);
    const all = plain({ fields: [["id", "integer"], ["name", "string"], ["note", "string"]], unknownFields: "allow" });
    const fewer = plain({ fields: [["id", "integer"], ["name", "string"]], unknownFields: "allow" });
    await write(all, targetPath, 1, [{ id: 1, name: "a", note: "x" }]);
    await write(fewer, targetPath, 2, [{ id: 2, name: "b", note: "y" }]);
    expect(byKey(await storedRows(fewer, targetPath))).toEqual([
      { id: 1, name: "a", note: "x", _extra: null },
      { id: 2, name: "b", note: null, _extra: '{"note":"y"}' },
    ]);
    // readTable merges `_extra` back over the columns: the value reads under its name.
    expect(byKey(await readTable(makeContract(fewer), { targetPath }))).toEqual([
      { id: 1, name: "a", note: "x" },
      { id: 2, name: "b", note: "y" },
    ]);
  });
});

describe("duckdb: a table the lake did not make", () => {
  /** Open a lake whose database already holds `ddl`; the ConfigError the open rejects with. */
  async function refusedOver(ddl: string, targetPath: string): Promise<ConfigError> {
    const db = await acquireDatabase(join(targetPath, DUCKDB_FILE));
    const conn = await db.connect();
    await db.exclusive(() => conn.run(ddl));
    db.release();
    const err = await openLake(makeContract({ format: "duckdb" }), { targetPath }).then(
      async (w) => {
        await w.close();
        return new Error("opened");
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }

  it("is refused as the good table when it has no _lakelogic_seq column", async () => {
    const err = await refusedOver("CREATE TABLE orders (id BIGINT, name VARCHAR)", lakeDir("foreign-good"));
    expect(err.message).toMatch(/table "orders" .* exists without the _lakelogic_seq column/);
  });

  it("is refused as the quarantine table when its columns are not the quarantine's", async () => {
    const err = await refusedOver("CREATE TABLE orders_quarantine (quarantine_id VARCHAR, batch_id BIGINT)", lakeDir("foreign-quarantine"));
    expect(err.message).toMatch(/not a LakeLogic quarantine table/);
  });
});
