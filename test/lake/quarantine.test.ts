import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LakeFormat } from "../../src/contract/types.js";
import { openLake, quarantineIds, readQuarantine, readTable, type QuarantineRow } from "../../src/lake/index.js";
import { canonicalJson } from "../../src/lake/json.js";
import { makeContract, tempDirs } from "./helpers.js";

const lakeDir = tempDirs();

const bad = (i: number, extra: Partial<QuarantineRow> = {}): QuarantineRow => ({
  record: { id: `x${i}`, amount: -i },
  errors: [
    { ruleId: "type:id", message: `id x${i} is not an integer` },
    { ruleId: "amount_positive", message: "amount must be > 0" },
  ],
  position: { partition: 0, offset: 100 + i },
  ...extra,
});

describe("quarantine ids", () => {
  it("depend on position and content, not on batch id or index", () => {
    const rows = [bad(1), bad(2), bad(3)];
    const whole = quarantineIds(rows);
    const split = [...quarantineIds(rows.slice(0, 1)), ...quarantineIds(rows.slice(1))];
    expect(split).toEqual(whole);
    expect(new Set(whole).size).toBe(3);
  });

  it("tell identical records apart by their ordinal in the batch", () => {
    const same = { record: { a: 1 }, errors: [{ ruleId: "r", message: "m" }] };
    const ids = quarantineIds([same, same, { ...same, record: { a: 2 } }, same]);
    expect(new Set(ids).size).toBe(4);
    // Key order does not change a record's identity.
    expect(quarantineIds([{ ...same, record: { x: 1, y: 2 } }])).toEqual(quarantineIds([{ ...same, record: { y: 2, x: 1 } }]));
  });

  it("stay the same from version to version (a replay after an upgrade must find its rows)", () => {
    // Records of every shape the id's canonical JSON treats differently: flat ones (its fast
    // path), null-prototype, nested, and values JSON has no form for. Ids pinned when written.
    const records: unknown[] = [
      { b: 1, a: "x", c: null, d: undefined, e: true, f: -0, g: 1e21, h: NaN, i: Infinity, "10": 1, "2": 2, toJSON: "s", "é": "ü\u2028", lone: "a\uD800b" },
      Object.assign(Object.create(null) as object, { z: 1, y: [1, 2] }),
      { nested: { b: 2, a: 1 }, list: [{ d: 1, c: 2 }] },
      { when: new Date(0), big: 12n, bytes: new Uint8Array([1, 2]) },
      {},
    ];
    const rows = records.map((record, i) => ({ record, errors: [], position: i % 2 ? { p: i, o: "x" } : i }));
    expect(quarantineIds(rows)).toEqual([
      "8db3434bf33fe2ace186f360101490a3",
      "f6f60a7681abf2fd388c5701f0275f0f",
      "e53614f34cf77b3bffb79414a61630d0",
      "bbc599fb9e4a8eef401a80c068e21fae",
      "2cd9b1a84de5fca7dcf293ff3f3c78ab",
    ]);
  });

  it("sort each record's keys, whatever the key order of the records before it", () => {
    // The flat path reuses the sorted order while records share a key list: records whose
    // keys differ, or come in another order, in between must not be spelt with a stale one.
    const records = [
      { b: 1, a: 2 },
      { b: 3, a: 4 },
      { a: 5, b: 6 },
      { b: 7, a: 8, c: undefined },
      { b: 9, c: 10 },
      { b: 11, a: 12 },
      { "10": "x", "2": "y", a: null },
    ];
    expect(records.map((r) => canonicalJson(r))).toEqual([
      '{"a":2,"b":1}',
      '{"a":4,"b":3}',
      '{"a":5,"b":6}',
      '{"a":8,"b":7}',
      '{"b":9,"c":10}',
      '{"a":12,"b":11}',
      '{"10":"x","2":"y","a":null}',
    ]);
  });

  it("ignore the error messages (a contract fix does not re-quarantine a replay)", () => {
    expect(quarantineIds([bad(1)])).toEqual(quarantineIds([{ ...bad(1), errors: [] }]));
  });
});

describe.each<LakeFormat>(["duckdb", "parquet"])("%s quarantine", (format) => {
  it("keeps record, raw payload, reasons, rule ids, batch id, position and a timestamp", async () => {
    const c = makeContract({ format, strategy: "merge", primaryKey: ["id"] });
    const targetPath = lakeDir(`${format}-q-shape`);
    const w = await openLake(c, { targetPath });
    const before = Date.now();
    await w.write({
      batchId: 4,
      good: [{ id: 1, name: "ok" }],
      bad: [
        bad(1, { raw: '{"id":"x1","amount":-1}' }),
        { record: undefined, raw: new Uint8Array([0xff, 0x00, 0x7b]), errors: [{ ruleId: "decode", message: "Unexpected token" }], position: 77n },
      ],
    });
    await w.close();
    const rows = await readQuarantine(c, { targetPath });
    expect(rows).toHaveLength(2);
    const first = rows.find((r) => r.ruleIds.includes("type:id"))!;
    expect(first).toMatchObject({
      batchId: 4,
      record: { id: "x1", amount: -1 },
      raw: '{"id":"x1","amount":-1}',
      rawEncoding: "text",
      reasons: ["id x1 is not an integer", "amount must be > 0"],
      ruleIds: ["type:id", "amount_positive"],
      position: { partition: 0, offset: 101 },
    });
    expect(first.quarantineId).toMatch(/^[0-9a-f]{32}$/);
    expect(first.quarantinedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const poison = rows.find((r) => r.ruleIds.includes("decode"))!;
    expect(poison).toMatchObject({ record: undefined, rawEncoding: "base64", position: 77 });
    expect(Buffer.from(poison.raw!, "base64")).toEqual(Buffer.from([0xff, 0x00, 0x7b]));
    expect(await readTable(c, { targetPath })).toEqual([{ id: 1, name: "ok" }]);
  });

  it("a replay cut at different batch boundaries adds no duplicates", async () => {
    const c = makeContract({ format, strategy: "merge", primaryKey: ["id"] });
    const targetPath = lakeDir(`${format}-q-replay`);
    const twin = { record: { id: "dup" }, errors: [{ ruleId: "r", message: "m" }] }; // no position
    let w = await openLake(c, { targetPath });
    const first = await w.write({ batchId: 1, good: [], bad: [bad(1), bad(2), twin, twin, bad(3)] });
    expect(first).toMatchObject({ badWritten: 5, badAlreadyPresent: 0 });
    await w.close();

    // After a crash the same records come back in other batches, with new batch ids, and a new one.
    w = await openLake(c, { targetPath });
    const a = await w.write({ batchId: 2, good: [], bad: [bad(1), bad(2)] });
    const b = await w.write({ batchId: 3, good: [], bad: [twin, twin, bad(3), bad(4)] });
    await w.close();
    expect(a).toMatchObject({ badWritten: 0, badAlreadyPresent: 2 });
    expect(b).toMatchObject({ badWritten: 1, badAlreadyPresent: 3 });

    const rows = await readQuarantine(c, { targetPath });
    expect(rows).toHaveLength(6);
    expect(new Set(rows.map((r) => r.quarantineId)).size).toBe(6);
    expect(rows.filter((r) => (r.record as { id: string }).id === "dup")).toHaveLength(2);
    // The original rows keep their first batch id.
    expect(rows.find((r) => (r.record as { id: string }).id === "x1")?.batchId).toBe(1);
  });

  it("include_error_reason: false keeps the rule ids but not the messages", async () => {
    const c = makeContract({ format, quarantine: { includeErrorReason: false } });
    const targetPath = lakeDir(`${format}-q-noreason`);
    const w = await openLake(c, { targetPath });
    await w.write({ batchId: 1, good: [], bad: [bad(1)] });
    await w.close();
    const [row] = await readQuarantine(c, { targetPath });
    expect(row).toMatchObject({ reasons: [], ruleIds: ["type:id", "amount_positive"] });
  });

  it("quarantine.enabled: false writes no bad rows", async () => {
    const c = makeContract({ format, quarantine: { enabled: false } });
    const targetPath = lakeDir(`${format}-q-off`);
    const w = await openLake(c, { targetPath });
    const r = await w.write({ batchId: 1, good: [{ id: 1, name: "a" }], bad: [bad(1)] });
    await w.close();
    expect(r).toEqual({ goodWritten: 1, badWritten: 0, badAlreadyPresent: 0 });
    expect(await readQuarantine(c, { targetPath })).toEqual([]);
    if (format === "parquet") expect(existsSync(join(targetPath, "orders_quarantine"))).toBe(false);
  });

  it("stores records JSON cannot (bigint, cycles) instead of failing the batch", async () => {
    const c = makeContract({ format });
    const targetPath = lakeDir(`${format}-q-odd`);
    const cyclic: Record<string, unknown> = { id: "c" };
    cyclic.self = cyclic;
    const w = await openLake(c, { targetPath });
    await w.write({
      batchId: 1,
      good: [],
      bad: [
        { record: { id: 9007199254740993n }, errors: [{ ruleId: "r", message: "m" }] },
        { record: cyclic, errors: [{ ruleId: "r", message: "m" }] },
      ],
    });
    await w.close();
    const rows = await readQuarantine(c, { targetPath });
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.record)).toContainEqual("[object Object]");
  });
});
