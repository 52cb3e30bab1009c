/**
 * The field cursor's order, shared by the HTTP poll's watermark and the keyset source's
 * positions: numbers as numbers (bigints exactly), times as instants, strings by code unit or
 * not at all (a database's collation), and the tie-breaker after the watermark.
 */
import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../../src/checkpoint/codec.js";
import {
  compareFieldValues,
  comparePositions,
  fieldAt,
  isFieldValue,
  isMissing,
  orderKey,
  compareKeys,
  showPosition,
  showValue,
  type FieldValue,
} from "../../src/sources/core/field-cursor.js";

const time = (a: FieldValue, b: FieldValue) => compareFieldValues(a, b, "time");
const db = (a: FieldValue, b: FieldValue) => compareFieldValues(a, b, "collation");

describe("field cursor: order", () => {
  it("numbers compare as numbers, not as text", () => {
    expect(time(10, 9)).toBe(1);
    expect(time(9, 10)).toBe(-1);
    expect(db(10, 9)).toBe(1);
    expect(time(-1.5, 0)).toBe(-1);
    expect(time(7, 7)).toBe(0);
  });

  it("bigints beyond 2^53 compare exactly, also with plain numbers", () => {
    const two53 = 2n ** 53n;
    expect(time(two53 + 1n, two53)).toBe(1);
    expect(time(two53 + 1n, Number(two53))).toBe(1); // as a double, 2^53 + 1 would be 2^53
    expect(time(Number(two53), two53 + 1n)).toBe(-1);
    expect(db(2n ** 63n - 1n, 2n ** 63n - 2n)).toBe(1);
    expect(time(1n, 1)).toBe(0);
  });

  it("ISO times compare as instants: offsets apply", () => {
    // 11:00 at +02:00 is 09:00Z, before 10:00Z, though its text sorts after.
    expect(time("2026-12-04T11:00:00+02:00", "2026-12-04T10:00:00Z")).toBe(-1);
    expect(time("2026-12-04T05:30:00-05:00", "2026-12-04T10:00:00Z")).toBe(1);
    expect(time("2026-12-04T12:00:00+02:00", "2026-12-04T10:00:00Z")).toBe(0);
    expect(time("2026-12-04T15:30:00+0530", "2026-12-04T10:00:00.000Z")).toBe(0);
    expect(time("2026-12-04 10:00:00.5+00", "2026-12-04T10:00:00Z")).toBe(1);
  });

  it("ISO times keep every digit of the fraction", () => {
    // As text "10:00:00.5Z" sorts before "10:00:00Z" ("." < "Z").
    expect(time("2026-12-04T10:00:00.5Z", "2026-12-04T10:00:00Z")).toBe(1);
    // One microsecond apart: a Date (milliseconds) would make them one value.
    expect(time("2026-12-04T10:00:00.123457Z", "2026-12-04T10:00:00.123456Z")).toBe(1);
    expect(time("2026-12-04T10:00:00.1230Z", "2026-12-04T10:00:00.123Z")).toBe(0);
    expect(time("2026-12-04T10:00:00.999999Z", "2026-12-04T10:00:01Z")).toBe(-1);
  });

  it("RFC 2822 / HTTP dates compare as instants, not by weekday", () => {
    expect(time("Thu, 03 Dec 2026 09:00:00 GMT", "Wed, 02 Dec 2026 10:00:00 GMT")).toBe(1);
    expect(time("Wed, 02 Dec 2026 11:00:00 +0100", "2026-12-02T10:00:00Z")).toBe(0);
  });

  it("a time without an offset is UTC, whatever the worker's time zone", () => {
    expect(time("2026-12-04T10:00:00", "2026-12-04T10:00:00Z")).toBe(0);
    expect(time("2026-12-04", "2026-12-03T23:59:59.999999Z")).toBe(1);
  });

  it("Dates compare by their time", () => {
    expect(db(new Date("2026-01-02T00:00:00Z"), new Date("2026-01-01T00:00:00Z"))).toBe(1);
    expect(db(new Date(5), new Date(5))).toBe(0);
  });

  it("strings: by code unit under time, and no order under the database's collation", () => {
    expect(time("b", "a")).toBe(1);
    expect(time("evt-10", "evt-9")).toBe(-1);
    expect(db("b", "a")).toBeUndefined();
    expect(db("2026-12-04T11:00:00Z", "2026-12-04T10:00:00Z")).toBeUndefined();
    expect(db(1, "1")).toBeUndefined();
    expect(db(new Date(0), 0)).toBeUndefined();
  });

  it("keys computed once order as the values do", () => {
    const values: FieldValue[] = ["2026-12-04T10:00:00.5Z", "2026-12-04T11:00:00+02:00", "2026-12-04T10:00:00Z"];
    const sorted = values
      .map((v) => ({ v, k: orderKey(v, "time") }))
      .sort((a, b) => compareKeys(a.k, b.k, "time"))
      .map((x) => x.v);
    expect(sorted).toEqual(["2026-12-04T11:00:00+02:00", "2026-12-04T10:00:00Z", "2026-12-04T10:00:00.5Z"]);
  });
});

describe("field cursor: positions", () => {
  it("the tie-breaker orders records that share a watermark", () => {
    expect(comparePositions({ watermark: 1, tieBreaker: 2 }, { watermark: 1, tieBreaker: 10 }, "collation")).toBe(-1);
    expect(comparePositions({ watermark: 1, tieBreaker: 99 }, { watermark: 2, tieBreaker: 0 }, "collation")).toBe(-1);
    expect(comparePositions({ watermark: 3n, tieBreaker: "b" }, { watermark: 3n, tieBreaker: "b" }, "collation")).toBe(0);
    expect(comparePositions({ watermark: 3n, tieBreaker: "b" }, { watermark: 3n, tieBreaker: "a" }, "collation")).toBeUndefined();
    expect(comparePositions({ watermark: 1 }, { watermark: 1, tieBreaker: 5 }, "collation")).toBe(0);
  });

  it("goes through the checkpoint codec as itself: the stored text of a time is kept", () => {
    const p = { watermark: 2n ** 63n - 1n, tieBreaker: new Date("2026-12-04T10:00:00.123Z") };
    const back = decodeCursor(encodeCursor(p)) as typeof p;
    expect(back).toEqual(p);
    expect(comparePositions(back, p, "collation")).toBe(0);
    const mark = "2026-12-04T11:00:00+02:00";
    expect(decodeCursor(encodeCursor({ watermark: mark }))).toEqual({ watermark: mark });
  });

  it("shows values for messages", () => {
    expect(showPosition({ watermark: 9007199254740993n, tieBreaker: "a" })).toBe('(9007199254740993n, "a")');
    expect(showPosition({ watermark: new Date(0) })).toBe("(1970-01-01T00:00:00.000Z)");
    expect(showValue({ at: 5n })).toBe('{"at":"5n"}');
    expect(showValue(() => 1)).toBe("function");
  });
});

describe("field cursor: reading a field", () => {
  it("follows a dotted path into objects and arrays, own keys only", () => {
    const doc = { properties: { updated: 7 }, rows: [{ t: 1 }, { t: 2 }] };
    expect(fieldAt(doc, "properties.updated")).toEqual({ found: true, value: 7 });
    expect(fieldAt(doc, "rows.1.t")).toEqual({ found: true, value: 2 });
    expect(fieldAt(doc, "properties.missing")).toEqual({ found: false });
    expect(fieldAt(doc, "constructor")).toEqual({ found: false });
    expect(fieldAt({ t: null }, "t")).toEqual({ found: true, value: null });
  });

  it("tells missing values from values the order does not know", () => {
    expect([undefined, null].map(isMissing)).toEqual([true, true]);
    expect([0, "", false].map(isMissing)).toEqual([false, false, false]);
    expect(isFieldValue("2026-12-04T10:00:00Z", "time")).toBe(true);
    expect(isFieldValue("Wed, 02 Dec 2026 10:00:00 GMT", "time")).toBe(true);
    // Text that is no time would sort above every ISO time and hold the cursor there.
    expect(isFieldValue("yesterday", "time")).toBe(false);
    expect(isFieldValue("yesterday", "collation")).toBe(true);
    // Date.parse reads these as months of 2001: ids, not times.
    expect(["evt-10", "9", "order 12"].some((v) => isFieldValue(v, "time"))).toBe(false);
    expect([Number.NaN, Infinity, new Date(Number.NaN), {}, true].some((v) => isFieldValue(v, "collation"))).toBe(false);
    expect([1, 1n, new Date(0)].every((v) => isFieldValue(v, "time"))).toBe(true);
  });
});
