import { describe, expect, it } from "vitest";
import { JsonValueError } from "../../src/lake/errors.js";
import { canonicalJson, safeJsonText, toJsonText } from "../../src/lake/json.js";

function nested(depth: number, leaf: unknown = 1n): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

describe("lake JSON writer: bounded on deep and cyclic values", () => {
  it("writes a value nested 500 levels deep exactly (bigint forces the careful writer)", () => {
    const text = toJsonText(nested(500));
    expect(text).toBe(`${'{"a":'.repeat(500)}1${"}".repeat(500)}`);
  });

  it("refuses a value nested 10,000 levels deep with a typed error, not a stack overflow", () => {
    const err = (() => {
      try {
        return toJsonText(nested(10_000));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(JsonValueError);
    expect(err).toMatchObject({ code: "JSON_VALUE", retriable: false });
    expect((err as Error).message).toMatch(/nested more than \d+ levels deep/);
  });

  it("refuses a cycle with a typed error", () => {
    const o: Record<string, unknown> = { n: 1n };
    o["self"] = o;
    expect(() => toJsonText(o)).toThrow(JsonValueError);
    expect(() => toJsonText(o)).toThrow(/refers to itself/);
  });

  it("safeJsonText and canonicalJson never throw on them (a poison record still reaches quarantine)", () => {
    const deep = nested(10_000);
    expect(typeof safeJsonText(deep)).toBe("string");
    expect(typeof canonicalJson(deep)).toBe("string");
  });
});
