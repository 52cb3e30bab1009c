import { describe, expect, it } from "vitest";
import { DELETE_KEY_RULE_ID, deleteKeyOf } from "../../src/pipeline/deletes.js";
import type { SourceRecord } from "../../src/sources/core/types.js";

const tombstone = (key: string | Uint8Array | null): SourceRecord => ({
  value: undefined,
  delete: { key: typeof key === "string" ? Buffer.from(key, "utf8") : key },
});

describe("a delete's key as primary-key fields", () => {
  it("takes a JSON object's primary-key fields, or a one-field key's text", () => {
    expect(deleteKeyOf(tombstone("42"), ["order_id"])).toEqual({ key: { order_id: "42" } });
    expect(deleteKeyOf(tombstone('{"order_id": 42, "other": 1}'), ["order_id"])).toEqual({ key: { order_id: 42 } });
    expect(deleteKeyOf(tombstone('{"tenant": "a", "id": 7}'), ["tenant", "id"])).toEqual({ key: { tenant: "a", id: 7 } });
    // Exact beyond 2^53, as record values are.
    expect(deleteKeyOf(tombstone('{"id": 9007199254740993}'), ["id"])).toEqual({ key: { id: 9007199254740993n } });
    // A JSON string, as JSON key serializers write keys, is its content; other text is taken as written.
    expect(deleteKeyOf(tombstone('"abc"'), ["code"])).toEqual({ key: { code: "abc" } });
    expect(deleteKeyOf(tombstone("1.50"), ["code"])).toEqual({ key: { code: "1.50" } });
  });

  it("says why a key names no row", () => {
    const error = (r: ReturnType<typeof deleteKeyOf>) => ("error" in r ? r.error : undefined);
    expect(error(deleteKeyOf(tombstone(null), ["order_id"]))).toMatch(/without a key/);
    expect(error(deleteKeyOf(tombstone(new Uint8Array([0xff, 0xfe])), ["order_id"]))).toMatch(/not UTF-8/);
    expect(error(deleteKeyOf(tombstone('{"id": 7}'), ["tenant", "id"]))).toMatch(/lacks primary-key field\(s\) tenant/);
    expect(error(deleteKeyOf(tombstone("7"), ["tenant", "id"]))).toMatch(/2 fields \(tenant, id\): .*JSON object/);
    expect(DELETE_KEY_RULE_ID).toBe("delete_key");
  });
});
