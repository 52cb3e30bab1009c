import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { decodeCursor } from "../../src/checkpoint/codec.js";
import { CheckpointCursorError } from "../../src/checkpoint/errors.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";

const dir = mkdtempSync(join(tmpdir(), "ll-ckpt-cursor-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function record(batchId: number, cursor: unknown): CheckpointRecord {
  return {
    key: "orders",
    cursor,
    batchId,
    committedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, batchId)),
    batch: { sourceCount: 1, goodCount: 1, badCount: 0, supersededCount: 0 },
    totals: { sourceCount: batchId, goodCount: batchId, badCount: 0, supersededCount: 0 },
    writerId: "w1",
  };
}

/** A store whose row for "orders" was hand-edited to hold `cursor`. */
async function editedStore(name: string, cursor: string): Promise<{ store: SQLiteCheckpointStore; path: string }> {
  const path = join(dir, `${name}.sqlite`);
  const first = new SQLiteCheckpointStore(path);
  await first.commit(record(1, { offset: 10n }));
  await first.close();
  const db = new Database(path);
  db.prepare("UPDATE lakelogic_checkpoints SET cursor = ? WHERE key = 'orders'").run(cursor);
  db.close();
  return { store: new SQLiteCheckpointStore(path), path };
}

describe("a stored cursor that is not typed JSON", () => {
  const cases: Array<[string, string]> = [
    ["not JSON", "{offset: 10"],
    ["a malformed tag", '{"offset":{"$bigint":12}}'],
    ["a bigint that is not a number", '{"offset":{"$bigint":"ten"}}'],
    ["a date that is not a date", '{"since":{"$date":"yesterday"}}'],
    ["a $number that is not NaN or Infinity", '{"n":{"$number":"12abc"}}'],
  ];

  for (const [name, text] of cases) {
    it(`${name}: load and commit say which key, which file and what was expected`, async () => {
      const { store, path } = await editedStore(name.replace(/\W+/g, "-"), text);
      const err = await store.load("orders").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CheckpointCursorError);
      const e = err as CheckpointCursorError;
      expect(e.code).toBe("CHECKPOINT_CURSOR");
      expect(e.retriable).toBe(false);
      expect(e.key).toBe("orders");
      expect(e.message).toContain('"orders"');
      expect(e.message).toContain(path);
      expect(e.message).toMatch(/expected typed JSON/);
      // A commit reads the stored row for its compare-and-set and must fail the same way, writing nothing.
      await expect(store.commit(record(2, { offset: 20n }))).rejects.toBeInstanceOf(CheckpointCursorError);
      await store.close();
      const db = new Database(path, { readonly: true });
      const row = db.prepare("SELECT cursor, batch_id FROM lakelogic_checkpoints WHERE key = 'orders'").get();
      db.close();
      expect(row).toEqual({ cursor: text, batch_id: 1 });
    });
  }

  it("the codec refuses values encodeCursor never writes instead of returning Invalid Date or NaN", () => {
    expect(() => decodeCursor('{"$date":"yesterday"}')).toThrow(TypeError);
    expect(() => decodeCursor('{"$number":"12abc"}')).toThrow(TypeError);
    expect(() => decodeCursor('{"$bigint":"1.5"}')).toThrow(TypeError);
    expect(decodeCursor('{"$number":"-Infinity"}')).toBe(-Infinity);
    expect(decodeCursor('{"$number":"NaN"}')).toBeNaN();
    expect(decodeCursor('{"$date":"2024-01-01T00:00:00.000Z"}')).toEqual(new Date("2024-01-01T00:00:00.000Z"));
  });
});
