import { describe, expect, it } from "vitest";
import { describeRecord, limitBreach, MAX_NESTING_DEPTH } from "../../src/pipeline/limits.js";
import { validateRecords } from "../../src/pipeline/validate.js";
import type { Engine, ValidationResult } from "../../src/engine/types.js";
import { makeContract } from "../support/contract.js";

const MIB = 1024 * 1024;
const limits = { maxRecordBytes: MIB };

/** `levels` nested objects: the outermost is level 1. */
function nested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let at = root;
  for (let i = 1; i < levels; i++) {
    const next: Record<string, unknown> = {};
    at["a"] = next;
    at = next;
  }
  return root;
}

describe("limitBreach", () => {
  it("passes a record exactly MAX_NESTING_DEPTH levels deep and stops one level deeper", () => {
    expect(MAX_NESTING_DEPTH).toBe(64);
    expect(limitBreach({ value: nested(64) }, limits)).toBeUndefined();
    expect(limitBreach({ value: nested(65) }, limits)).toMatch(/nested more than 64 levels deep/);
    expect(limitBreach({ value: [[[nested(62)]]] }, limits)).toMatch(/nested more than 64/);
    expect(limitBreach({ value: nested(100_000) }, limits)).toMatch(/nested more than 64/);
  });

  it("names a cycle, whether through an object, an array or a Map", () => {
    const o: Record<string, unknown> = { id: 1 };
    o["me"] = o;
    const arr: unknown[] = [1];
    arr.push({ back: arr });
    const m = new Map<string, unknown>();
    m.set("m", { inner: m });
    for (const value of [o, arr, m, { wrap: o }]) expect(limitBreach({ value }, limits)).toMatch(/refers to itself \(a cycle\)/);
  });

  it("does not call shared (acyclic) references a cycle, and bounds a graph whose JSON would be huge", () => {
    const shared = { x: "y" };
    expect(limitBreach({ value: { a: shared, b: shared, c: [shared, shared] } }, limits)).toBeUndefined();
    // 2^60 paths to the leaf: as JSON far beyond any limit, yet the walk stops at the budget.
    let v: unknown = "leaf";
    for (let i = 0; i < 60; i++) v = { l: v, r: v };
    expect(limitBreach({ value: v }, limits)).toMatch(/as JSON is larger than maxRecordBytes \(1048576 bytes\)/);
    expect(limitBreach({ value: new Array(2 * MIB) }, limits)).toMatch(/larger than maxRecordBytes/);
  });

  it("measures a text payload in UTF-8 bytes and a binary one by its length", () => {
    const max = { maxRecordBytes: 10 };
    expect(limitBreach({ value: "x", raw: "abcdefghij" }, max)).toBeUndefined();
    // Five characters, fifteen bytes.
    expect(limitBreach({ value: "x", raw: "€€€€€" }, max)).toMatch(/raw payload is 15 bytes, larger than maxRecordBytes \(10 bytes\)/);
    expect(limitBreach({ value: "x", raw: new Uint8Array(11) }, max)).toMatch(/11 bytes/);
    expect(limitBreach({ value: "x".repeat(20) }, max)).toMatch(/as JSON is larger/);
  });

  it("counts an object without a payload from below: a record whose JSON fits is never over", () => {
    const value = { id: 123456789, name: "n".repeat(100), tags: ["a", "b"], at: new Date(0), none: null, gone: undefined };
    const json = JSON.stringify(value).length;
    expect(limitBreach({ value }, { maxRecordBytes: json })).toBeUndefined();
    expect(limitBreach({ value }, { maxRecordBytes: 50 })).toMatch(/larger than maxRecordBytes/);
  });

  it("quarantines a record whose getter throws instead of failing the batch", () => {
    const value = {
      get boom(): never {
        throw new TypeError("no");
      },
    };
    expect(limitBreach({ value }, limits)).toBe("the record could not be read: reading it threw TypeError");
  });
});

describe("describeRecord", () => {
  it("keeps what is within the limits exactly, marks cycles and cuts depth and size", () => {
    const o: Record<string, unknown> = { id: 1, s: "text", list: [1, 2], __proto__: null };
    o["self"] = o;
    const d = describeRecord(o) as Record<string, unknown>;
    expect({ ...d }).toEqual({ id: 1, s: "text", list: [1, 2], self: "[cycle]" });
    let deep = describeRecord(nested(10_000)) as Record<string, unknown>;
    for (let i = 1; i < MAX_NESTING_DEPTH; i++) deep = deep["a"] as Record<string, unknown>;
    expect(deep["a"]).toBe("[nested deeper than 64 levels: not kept]");
    const big = describeRecord({ s: "x".repeat(10 * MIB), more: 1 }) as Record<string, unknown>;
    expect(JSON.stringify(big).length).toBeLessThan(100 * 1024);
    expect(String(big["s"])).toMatch(/more characters not kept\]$/);
    const many = describeRecord(Array.from({ length: 1_000_000 }, (_, i) => i)) as unknown[];
    expect(many.length).toBeLessThan(100_000);
    expect(many.at(-1)).toMatch(/more items not kept/);
  });
});

describe("validateRecords with record limits", () => {
  it("hands the engine only the records within the limits; the others are bad rows with their reason", async () => {
    const seen: unknown[] = [];
    const engine: Engine = {
      name: "duckdb",
      validate: (records: readonly unknown[]): Promise<ValidationResult> => {
        seen.push(...records);
        const good = records.map((r) => ({ ...(r as Record<string, unknown>) }));
        return Promise.resolve({ good, goodCount: good.length, supersededCount: 0, bad: [], ruleCounts: [], datasetRules: [] });
      },
      close: () => Promise.resolve(),
    };
    const cyclic: Record<string, unknown> = { id: 2 };
    cyclic["me"] = cyclic;
    const result = await validateRecords(engine, makeContract(), [
      { value: { id: 1 }, position: 0 },
      { value: cyclic, position: 1 },
      { value: nested(100), raw: "{…}", position: 2 },
      { value: { id: 3 }, position: 3 },
    ]);
    expect(seen).toEqual([{ id: 1 }, { id: 3 }]);
    expect(result.goodCount).toBe(2);
    expect(result.bad.map((b) => [b.position, b.errors[0]!.ruleId, b.raw])).toEqual([
      [1, "limit", undefined],
      [2, "limit", "{…}"],
    ]);
    expect(result.bad[1]!.record).toBeUndefined();
  });
});
