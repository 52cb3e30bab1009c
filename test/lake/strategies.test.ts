import { describe, expect, it } from "vitest";
import type { LakeFormat } from "../../src/contract/types.js";
import { LakeWriteError, openLake, readQuarantine, readTable } from "../../src/lake/index.js";
import { byKey, makeContract, tempDirs, type ContractOptions } from "./helpers.js";

const lakeDir = tempDirs();

describe.each<LakeFormat>(["duckdb", "parquet"])("%s target", (format) => {
  const contract = (o: ContractOptions = {}) => makeContract({ format, ...o });

  it("append inserts every row of every batch, duplicates included", async () => {
    const c = contract({ strategy: "append" });
    const targetPath = lakeDir(`${format}-append`);
    const w = await openLake(c, { targetPath });
    expect(await w.write({ batchId: 1, good: [{ id: 1, name: "a" }, { id: 2, name: "b" }], bad: [] })).toEqual({
      goodWritten: 2,
      badWritten: 0,
      badAlreadyPresent: 0,
    });
    await w.write({ batchId: 2, good: [{ id: 1, name: "a" }], bad: [] });
    await w.close();
    expect(byKey(await readTable(c, { targetPath }))).toEqual([
      { id: 1, name: "a" },
      { id: 1, name: "a" },
      { id: 2, name: "b" },
    ]);
  });

  it("merge upserts on the primary key; within a batch the last record for a key wins", async () => {
    const c = contract({ strategy: "merge", primaryKey: ["id"] });
    const targetPath = lakeDir(`${format}-merge`);
    const w = await openLake(c, { targetPath });
    const r1 = await w.write({
      batchId: 1,
      good: [
        { id: 1, name: "a1" },
        { id: 2, name: "b1" },
        { id: 1, name: "a2" }, // later in the same batch: wins
        { id: 3n, name: "c1" },
      ],
      bad: [],
    });
    expect(r1.goodWritten).toBe(3);
    await w.write({ batchId: 2, good: [{ id: 2n, name: "b2" }, { id: 4, name: "d1" }, { id: 2, name: "b3" }], bad: [] });
    // A replay of batch 2 changes nothing.
    await w.write({ batchId: 2, good: [{ id: 2n, name: "b2" }, { id: 4, name: "d1" }, { id: 2, name: "b3" }], bad: [] });
    await w.close();
    expect(byKey(await readTable(c, { targetPath }))).toEqual([
      { id: 1, name: "a2" },
      { id: 2, name: "b3" },
      { id: 3, name: "c1" },
      { id: 4, name: "d1" },
    ]);
  });

  it("merge on a composite key treats null key parts as equal", async () => {
    const c = contract({
      strategy: "merge",
      primaryKey: ["region", "id"],
      fields: [["region", "string"], ["id", "integer"], ["v", "integer"]],
    });
    const targetPath = lakeDir(`${format}-composite`);
    const w = await openLake(c, { targetPath });
    await w.write({
      batchId: 1,
      good: [
        { region: "eu", id: 1, v: 1 },
        { region: "us", id: 1, v: 1 },
        { region: null, id: 1, v: 1 },
      ],
      bad: [],
    });
    await w.write({ batchId: 2, good: [{ region: "eu", id: 1, v: 2 }, { region: null, id: 1, v: 2 }], bad: [] });
    await w.close();
    const rows = await readTable(c, { targetPath });
    const byRegion = Object.fromEntries(rows.map((r) => [String(r.region), r.v]));
    expect(rows).toHaveLength(3);
    expect(byRegion).toEqual({ eu: 2, us: 1, null: 2 });
  });

  it("overwrite replaces the table with each batch", async () => {
    const c = contract({ strategy: "overwrite" });
    const targetPath = lakeDir(`${format}-overwrite`);
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }, { id: 2, name: "b" }], bad: [] });
    await w.write({ batchId: 2, good: [{ id: 3, name: "c" }], bad: [] });
    await w.close();
    expect(await readTable(c, { targetPath })).toEqual([{ id: 3, name: "c" }]);
  });

  it("stores and reads back every canonical type", async () => {
    const c = contract({
      strategy: "append",
      fields: [
        ["id", "integer"],
        ["s", "string"],
        ["x", "double"],
        ["p", "decimal", 20, 4],
        ["ok", "boolean"],
        ["d", "date"],
        ["ts", "timestamp"],
        ["j", "json"],
      ],
    });
    const targetPath = lakeDir(`${format}-types`);
    const w = await openLake(c, { targetPath });
    await w.write({
      batchId: 1,
      good: [
        {
          id: 2n ** 62n,
          s: "héllo 'quoted' \"x\"",
          x: -1.25,
          p: "1234567890123456.5678",
          ok: true,
          d: "2024-02-29",
          ts: "2024-01-01T00:00:00.000Z",
          j: { a: [1, { b: null }], c: "x" },
        },
        { id: 7, s: null, x: 0, p: "-0.5", ok: false, d: "1969-12-31", ts: "2024-01-01T12:30:00.123456Z", j: [1, 2] },
        { id: 8, ts: "2024-06-01T02:00:00+02:00", j: "just a string", d: null },
      ],
      bad: [],
    });
    await w.close();
    const rows = byKey(await readTable(c, { targetPath }));
    expect(rows).toEqual([
      { id: 7, s: null, x: 0, p: "-0.5000", ok: false, d: "1969-12-31", ts: "2024-01-01T12:30:00.123456Z", j: [1, 2] },
      { id: 8, s: null, x: null, p: null, ok: null, d: null, ts: "2024-06-01T00:00:00.000Z", j: "just a string" },
      {
        id: 2n ** 62n,
        s: "héllo 'quoted' \"x\"",
        x: -1.25,
        p: "1234567890123456.5678",
        ok: true,
        d: "2024-02-29",
        ts: "2024-01-01T00:00:00.000Z",
        j: { a: [1, { b: null }], c: "x" },
      },
    ]);
  });

  it("a row that cannot be stored fails the whole batch and writes nothing of it", async () => {
    const c = contract({ strategy: "append" });
    const targetPath = lakeDir(`${format}-atomic`);
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await expect(
      w.write({
        batchId: 2,
        good: [{ id: 2, name: "b" }, { id: "not a number", name: "c" }],
        bad: [{ record: { id: "x" }, errors: [{ ruleId: "r", message: "m" }] }],
      }),
    ).rejects.toThrow(LakeWriteError);
    await w.write({ batchId: 2, good: [{ id: 3, name: "c" }], bad: [] });
    await w.close();
    expect(byKey(await readTable(c, { targetPath }))).toEqual([{ id: 1, name: "a" }, { id: 3, name: "c" }]);
    expect(await readQuarantine(c, { targetPath })).toEqual([]);
  });

  it("a contract without fields stores whole records (and merges on the primary key)", async () => {
    const c = contract({ strategy: "merge", primaryKey: ["id"], fields: [] });
    const targetPath = lakeDir(`${format}-schemaless`);
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, a: { deep: [1] } }, { id: "1", b: true }], bad: [] });
    await w.write({ batchId: 2, good: [{ id: 1, a: "replaced", big: 12345678901234567890n }], bad: [] });
    await w.close();
    const rows = await readTable(c, { targetPath });
    expect(rows).toHaveLength(2); // 1 and "1" are different keys
    expect(rows).toContainEqual({ id: "1", b: true });
    expect(rows).toContainEqual({ id: 1, a: "replaced", big: 12345678901234567890n });
  });

  it("keeps undeclared fields in _extra under unknown_fields: allow", async () => {
    const c = contract({ strategy: "append", unknownFields: "allow" });
    const targetPath = lakeDir(`${format}-extra`);
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a", colour: "red" }, { id: 2, name: "b" }], bad: [] });
    await w.close();
    expect(byKey(await readTable(c, { targetPath }))).toEqual([
      { id: 1, name: "a", colour: "red" },
      { id: 2, name: "b" },
    ]);
  });

  it("adds a column when the contract gains a field; old rows read null", async () => {
    const targetPath = lakeDir(`${format}-evolve`);
    const v1 = contract({ strategy: "append" });
    let w = await openLake(v1, { targetPath });
    await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [] });
    await w.close();
    const v2 = contract({ strategy: "append", fields: [["id", "integer"], ["name", "string"], ["qty", "integer"]] });
    w = await openLake(v2, { targetPath });
    await w.write({ batchId: 2, good: [{ id: 2, name: "b", qty: 5 }], bad: [] });
    await w.close();
    expect(byKey(await readTable(v2, { targetPath }))).toEqual([
      { id: 1, name: "a", qty: null },
      { id: 2, name: "b", qty: 5 },
    ]);
  });

  it("reads nothing from a lake that was never written", async () => {
    const c = contract();
    const targetPath = lakeDir(`${format}-empty`);
    expect(await readTable(c, { targetPath })).toEqual([]);
    expect(await readQuarantine(c, { targetPath })).toEqual([]);
  });
});
