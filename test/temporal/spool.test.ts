import { describe, expect, it } from "vitest";
import { Spool, SpoolMissingError } from "../../src/temporal/spool.js";

describe("Spool (in-memory claim check)", () => {
  it("hands back the very value that was put, without copying it", () => {
    const spool = new Spool();
    const value = { rows: [{ id: 1n, at: new Date(0) }] };
    const ref = spool.put("fetched", value);
    expect(ref).toMatch(/^fetched-/);
    expect(spool.get(ref)).toBe(value);
    expect(spool.peek(ref)).toBe(value);
    expect(spool.put("fetched", value)).not.toBe(ref);
  });

  it("raises SpoolMissingError for a reference it does not hold (a moved or restarted batch)", () => {
    const spool = new Spool();
    expect(() => spool.get("fetched-from-another-worker")).toThrow(SpoolMissingError);
    expect(spool.peek("fetched-from-another-worker")).toBeUndefined();
    const ref = spool.put("validated", 1);
    spool.drop(ref, null, undefined);
    expect(() => spool.get(ref)).toThrow(SpoolMissingError);
    expect(spool.size).toBe(0);
  });

  it("drops abandoned entries after maxAgeMs, oldest first, on the next put", () => {
    let now = 0;
    const spool = new Spool({ maxAgeMs: 1000, now: () => now });
    const old = spool.put("fetched", "old");
    now = 600;
    const young = spool.put("fetched", "young");
    now = 1000;
    const fresh = spool.put("fetched", "fresh");
    expect(() => spool.get(old)).toThrow(SpoolMissingError);
    expect(spool.get(young)).toBe("young");
    expect(spool.get(fresh)).toBe("fresh");
    expect(spool.size).toBe(2);
  });

  it("holds at most maxEntries, dropping the oldest", () => {
    const spool = new Spool({ maxEntries: 3 });
    const refs = [1, 2, 3, 4, 5].map((i) => spool.put("fetched", i));
    expect(spool.size).toBe(3);
    expect(() => spool.get(refs[0]!)).toThrow(SpoolMissingError);
    expect(() => spool.get(refs[1]!)).toThrow(SpoolMissingError);
    expect(refs.slice(2).map((r) => spool.get(r))).toEqual([3, 4, 5]);
    spool.clear();
    expect(spool.size).toBe(0);
  });
});
