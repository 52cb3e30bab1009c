import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../../src/checkpoint/codec.js";

const roundTrip = (v: unknown): unknown => decodeCursor(encodeCursor(v));

describe("cursor codec", () => {
  it("round-trips plain JSON values unchanged", () => {
    for (const v of [null, true, false, 0, -1.5, "", "abc", "12.340", [], {}, [1, [2, [3, "x"]]], { a: { b: [1, { c: null }] } }]) {
      expect(roundTrip(v)).toEqual(v);
    }
  });

  it("round-trips bigint, Date, undefined and non-finite numbers with their types", () => {
    const big = 2n ** 70n;
    expect(roundTrip(big)).toBe(big);
    expect(roundTrip(-5n)).toBe(-5n);
    const d = new Date("2024-02-29T12:34:56.789Z");
    const back = roundTrip(d);
    expect(back).toBeInstanceOf(Date);
    expect((back as Date).toISOString()).toBe(d.toISOString());
    expect(roundTrip(undefined)).toBeUndefined();
    expect(roundTrip([1, undefined, 3])).toEqual([1, undefined, 3]);
    expect(roundTrip(Number.NaN)).toBeNaN();
    expect(roundTrip(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(roundTrip(Number.NEGATIVE_INFINITY)).toBe(Number.NEGATIVE_INFINITY);
  });

  it("keeps decimal strings as strings (no float rounding)", () => {
    const c = { watermark: "12345678901234567890.123456789", id: 7n };
    const back = roundTrip(c) as typeof c;
    expect(back.watermark).toBe("12345678901234567890.123456789");
    expect(back.id).toBe(7n);
  });

  it("round-trips nested cursors: kafka offsets, composite keyset keys", () => {
    const kafka = { "orders:0": 12n, "orders:1": 9007199254740993n };
    expect(roundTrip(kafka)).toEqual(kafka);
    const keyset = [new Date("2024-01-01T00:00:00.000Z"), "order-9", [1n, ["deep", new Date(0)]]];
    expect(roundTrip(keyset)).toEqual(keyset);
  });

  it("escapes user objects whose keys look like tags", () => {
    const tricky = { $bigint: "1", $date: "x", nested: { $undefined: true }, $other: 1 };
    expect(roundTrip(tricky)).toEqual(tricky);
    expect(roundTrip({ $object: { a: 1 } })).toEqual({ $object: { a: 1 } });
    expect(roundTrip([{ $number: "NaN" }])).toEqual([{ $number: "NaN" }]);
  });

  it("treats __proto__ as an ordinary key", () => {
    const v = JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}') as Record<string, unknown>;
    const back = roundTrip(v) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.keys(back).sort()).toEqual(["__proto__", "a"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("drops undefined object members, as JSON does", () => {
    expect(roundTrip({ a: 1, b: undefined })).toEqual({ a: 1 });
  });

  it("is deterministic, so stores can compare encoded cursors", () => {
    expect(encodeCursor({ a: 1n, b: [new Date(5)] })).toBe(encodeCursor({ a: 1n, b: [new Date(5)] }));
  });

  it("refuses values it cannot round-trip", () => {
    expect(() => encodeCursor(new Map())).toThrow(/Map/);
    expect(() => encodeCursor({ f: () => 1 })).toThrow(/function/);
    expect(() => encodeCursor(new Date(Number.NaN))).toThrow(/invalid Date/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => encodeCursor(cyclic)).toThrow(/circular/);
  });

  it("rejects malformed tags instead of guessing", () => {
    expect(() => decodeCursor('{"$bigint": 5}')).toThrow(/malformed/);
  });
});
