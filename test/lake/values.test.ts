import { describe, expect, it } from "vitest";
import { toEpochDays, toEpochMicros } from "../../src/lake/epoch-values.js";
import { daysFromCivil } from "../../src/util/civil-time.js";
import { isoFromMicros } from "../../src/lake/read.js";

const micros = (iso: string) => BigInt(Date.parse(iso)) * 1000n;

describe("canonical value parsing", () => {
  it("timestamps: canonical ISO (ms and µs), offsets, spaces, Date objects", () => {
    expect(toEpochMicros("2024-01-01T00:00:00.000Z")).toBe(micros("2024-01-01T00:00:00.000Z"));
    expect(toEpochMicros("2024-01-01T00:00:00.123456Z")).toBe(micros("2024-01-01T00:00:00.123Z") + 456n);
    expect(toEpochMicros("2024-06-01T02:00:00+02:00")).toBe(micros("2024-06-01T00:00:00Z"));
    expect(toEpochMicros("2024-06-01T02:00:00-0130")).toBe(micros("2024-06-01T03:30:00Z"));
    expect(toEpochMicros("2024-06-01 02:00:00")).toBe(micros("2024-06-01T02:00:00Z"));
    expect(toEpochMicros("2024-06-01T02:00Z")).toBe(micros("2024-06-01T02:00:00Z"));
    expect(toEpochMicros("2024-06-01")).toBe(micros("2024-06-01T00:00:00Z"));
    expect(toEpochMicros("1969-12-31T23:59:59.999999Z")).toBe(-1n);
    expect(toEpochMicros(new Date(5))).toBe(5000n);
    expect(toEpochMicros("2024-02-30T00:00:00.000Z")).toBeUndefined();
    expect(toEpochMicros("2024-01-01T24:00:00.000Z")).toBeUndefined();
    expect(toEpochMicros("yesterday")).toBeUndefined();
    expect(toEpochMicros(1_700_000_000_000)).toBeUndefined();
  });

  it("dates: YYYY-MM-DD, leap years, before 1970, Date objects", () => {
    expect(toEpochDays("1970-01-01")).toBe(0);
    expect(toEpochDays("2024-02-29")).toBe(Date.UTC(2024, 1, 29) / 86_400_000);
    expect(toEpochDays("2023-02-29")).toBeUndefined();
    expect(toEpochDays("1900-03-01")).toBe(Date.UTC(1900, 2, 1) / 86_400_000);
    expect(toEpochDays("0001-01-01")).toBe(daysFromCivil(1, 1, 1));
    expect(toEpochDays(new Date("2024-05-05T23:00:00Z"))).toBe(Date.UTC(2024, 4, 5) / 86_400_000);
    expect(toEpochDays("2024-05-05T23:00:00Z")).toBe(Date.UTC(2024, 4, 5) / 86_400_000);
    expect(toEpochDays("05/05/2024")).toBeUndefined();
  });

  it("reads timestamps back as ISO strings: ms always, µs when present", () => {
    expect(isoFromMicros(0n)).toBe("1970-01-01T00:00:00.000Z");
    expect(isoFromMicros(1_704_067_200_123_456n)).toBe("2024-01-01T00:00:00.123456Z");
    expect(isoFromMicros(-1n)).toBe("1969-12-31T23:59:59.999999Z");
  });
});
