import { describe, expect, it } from "vitest";
import { LakeWriteError, openLake, readQuarantine, readTable } from "../../src/lake/index.js";
import { byKey, makeContract, tempDirs } from "./helpers.js";

// The DuckDB writer hands DuckDB each batch as one JSON document (docs/lake.md, "Atomicity"):
// the values JSON cannot spell directly must still arrive exactly.

const lakeDir = tempDirs();

describe("duckdb writer: values through the batch document", () => {
  it("keeps NaN, ±Infinity, -0, int64 limits, far timestamps and dates, NUL and U+001E", async () => {
    const c = makeContract({
      strategy: "append",
      fields: [["id", "integer"], ["s", "string"], ["x", "double"], ["ts", "timestamp"], ["d", "date"], ["p", "decimal", 38, 9]],
    });
    const targetPath = lakeDir("doc-values");
    const w = await openLake(c, { targetPath });
    await w.write({
      batchId: 1,
      good: [
        { id: 1, s: "\u0000nul\u001e", x: NaN, ts: "9999-12-31T23:59:59.999999Z", d: "9999-12-31", p: "-0.000000001" },
        { id: 2, s: "😀", x: -0, ts: "0001-01-01T00:00:00.000Z", d: "0001-01-01", p: 12.5 },
        { id: 3, s: 5, x: Infinity, ts: new Date(0), d: new Date(86_400_000), p: 7n },
        { id: 2n ** 63n - 1n, s: true, x: -Infinity, ts: "2300-01-01T00:00:00.000001Z", d: "2024-02-29T23:00:00-02:00", p: null },
        { id: -(2n ** 63n), s: null, x: "1e3", ts: "2024-06-01 02:00:00+02:00", d: null, p: "99999999999999999999999999999.999999999" },
      ],
      bad: [],
    });
    await w.close();
    const rows = await readTable(c, { targetPath });
    expect(rows).toEqual([
      { id: 1, s: "\u0000nul\u001e", x: NaN, ts: "9999-12-31T23:59:59.999999Z", d: "9999-12-31", p: "-0.000000001" },
      { id: 2, s: "😀", x: -0, ts: "0001-01-01T00:00:00.000Z", d: "0001-01-01", p: "12.500000000" },
      { id: 3, s: "5", x: Infinity, ts: "1970-01-01T00:00:00.000Z", d: "1970-01-02", p: "7.000000000" },
      { id: 2n ** 63n - 1n, s: "true", x: -Infinity, ts: "2300-01-01T00:00:00.000001Z", d: "2024-03-01", p: null },
      { id: -(2n ** 63n), s: null, x: 1000, ts: "2024-06-01T00:00:00.000Z", d: null, p: "99999999999999999999999999999.999999999" },
    ]);
    expect(Object.is(rows[1]!.x, -0)).toBe(true);
  });

  it("stores lone UTF-16 surrogates as U+FFFD, in strings, json values and quarantined records", async () => {
    const c = makeContract({ strategy: "append", fields: [["id", "integer"], ["s", "string"], ["j", "json"]] });
    const targetPath = lakeDir("doc-surrogates");
    const w = await openLake(c, { targetPath });
    const bad = [{ record: { id: "x\udc00" }, raw: "raw \ud800", errors: [{ ruleId: "type:id", message: "m" }], position: 1 }];
    await w.write({
      batchId: 1,
      // "\\ud800" is text (a backslash, then "ud800"), not a surrogate: it stays.
      good: [{ id: 1, s: "a\ud800b", j: { k: "x\udc00", "\ud800": 1, t: "\\ud800", pair: "😀" } }],
      bad,
    });
    // A replay finds the quarantine row already there: its id does not depend on the stored form.
    const replay = await w.write({ batchId: 1, good: [], bad });
    await w.close();
    expect(replay.badAlreadyPresent).toBe(1);
    expect(await readTable(c, { targetPath })).toEqual([
      { id: 1, s: "a\ufffdb", j: { k: "x\ufffd", "\ufffd": 1, t: "\\ud800", pair: "😀" } },
    ]);
    const q = await readQuarantine(c, { targetPath });
    expect(q.map((r) => [r.record, r.raw])).toEqual([[{ id: "x\ufffd" }, "raw \ufffd"]]);
  });

  it("refuses an integer outside int64, naming the row and column, and writes nothing", async () => {
    const c = makeContract({ strategy: "append" });
    const targetPath = lakeDir("doc-int64");
    const w = await openLake(c, { targetPath });
    for (const id of [2n ** 63n, "-9223372036854775809", 1e19]) {
      const attempt = w.write({ batchId: 1, good: [{ id: 1, name: "a" }, { id, name: "b" }], bad: [] });
      await expect(attempt).rejects.toThrow(LakeWriteError);
      await expect(attempt).rejects.toThrow(/good row 1: column "id" \(integer\)/);
    }
    await w.close();
    expect(await readTable(c, { targetPath })).toEqual([]);
  });

  it("merge: last wins over keys spelt differently (decimal, timestamp, -0), and NULL keys match each other", async () => {
    const c = makeContract({
      strategy: "merge",
      primaryKey: ["k"],
      fields: [["k", "decimal", 10, 2], ["v", "integer"]],
    });
    const targetPath = lakeDir("doc-keys");
    const w = await openLake(c, { targetPath });
    expect((await w.write({ batchId: 1, good: [{ k: "1.5", v: 1 }, { k: "001.50", v: 2 }, { k: null, v: 3 }, { k: null, v: 4 }], bad: [] })).goodWritten).toBe(2);
    await w.write({ batchId: 2, good: [{ k: 1.5, v: 5 }, { k: null, v: 6 }, { k: "2", v: 7 }], bad: [] });
    await w.close();
    const rows = await readTable(c, { targetPath });
    expect(rows.map((r) => [r.k, r.v])).toHaveLength(3);
    expect(rows.map((r) => [r.k, r.v])).toEqual(expect.arrayContaining([["1.50", 5], ["2.00", 7], [null, 6]]));

    const t = makeContract({ dataset: "ts", strategy: "merge", primaryKey: ["at"], fields: [["at", "timestamp"], ["x", "double"]] });
    const w2 = await openLake(t, { targetPath });
    const spelt = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.000Z", "2024-01-01T01:00:00+01:00", "2024-01-01 00:00"];
    expect((await w2.write({ batchId: 1, good: spelt.map((at, i) => ({ at, x: i })), bad: [] })).goodWritten).toBe(1);
    await w2.write({ batchId: 2, good: [{ at: new Date("2024-01-01T00:00:00Z"), x: -0 }], bad: [] });
    await w2.close();
    expect(await readTable(t, { targetPath })).toEqual([{ at: "2024-01-01T00:00:00.000Z", x: -0 }]);

    const d = makeContract({ dataset: "dbl", strategy: "merge", primaryKey: ["x"], fields: [["x", "double"], ["v", "integer"]] });
    const w3 = await openLake(d, { targetPath });
    expect((await w3.write({ batchId: 1, good: [{ x: 0, v: 1 }, { x: -0, v: 2 }], bad: [] })).goodWritten).toBe(1);
    await w3.write({ batchId: 2, good: [{ x: 0, v: 3 }], bad: [] });
    await w3.close();
    const dbl = await readTable(d, { targetPath });
    // One row, the last written; 0 and -0 are one key (the stored sign is DuckDB's business).
    expect(dbl.map((r) => [r.x === 0, r.v])).toEqual([[true, 3]]);
  });

  it("merge stays exact as values grow from batch to batch (statements see the current table)", async () => {
    const c = makeContract({ strategy: "merge", primaryKey: ["name"], fields: [["name", "string"], ["id", "integer"]] });
    const targetPath = lakeDir("doc-growing");
    const w = await openLake(c, { targetPath });
    const expected = new Map<string, number>();
    for (let b = 1; b <= 6; b++) {
      // Keys get longer each batch and some come back: a plan made for earlier data would mangle them.
      const good = Array.from({ length: 50 }, (_, i) => ({ name: `${"k".repeat(b * 3)}-${i % 30}`, id: b * 100 + i }));
      good.push({ name: `${"k".repeat(3)}-${b}`, id: b });
      for (const r of good) expected.set(r.name, r.id);
      await w.write({ batchId: b, good, bad: [] });
    }
    await w.close();
    const rows = byKey(await readTable(c, { targetPath }));
    expect(new Map(rows.map((r) => [r.name as string, r.id as number]))).toEqual(expected);
    expect(rows).toHaveLength(expected.size);
  });
});
