import { describe, expect, it } from "vitest";
import { CheckpointConflictError, CheckpointCursorError, CheckpointStoreError } from "../../src/checkpoint/errors.js";
import { CheckpointObjectDamagedError } from "../../src/checkpoint/object-errors.js";
import { objectName, ObjectStoreCheckpointStore } from "../../src/checkpoint/object-store.js";
import { record } from "./conformance.js";
import { MemoryObjectBackend } from "./memory-backend.js";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (s: string) => new TextEncoder().encode(s);

describe("ObjectStoreCheckpointStore", () => {
  it("stores one readable JSON object per key, the cursor as typed JSON", async () => {
    const backend = new MemoryObjectBackend();
    const store = new ObjectStoreCheckpointStore(backend);
    await store.commit(record(1, { offset: 42n, at: new Date("2026-01-01T00:00:00Z") }, "w1", "stream::orders"));
    expect([...backend.objects.keys()]).toEqual(["stream::orders.json"]);
    expect(JSON.parse(text(backend.objects.get("stream::orders.json")!.bytes))).toEqual({
      format: "lakelogic.checkpoint",
      version: 1,
      key: "stream::orders",
      batchId: 1,
      committedAt: "2026-01-01T00:00:01.000Z",
      writerId: "w1",
      batch: { sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 },
      totals: { sourceCount: 10, goodCount: 9, badCount: 1, supersededCount: 0 },
      cursor: { offset: { $bigint: "42" }, at: { $date: "2026-01-01T00:00:00.000Z" } },
    });
  });

  it("names objects one-to-one with keys", () => {
    expect(objectName("orders")).toBe("orders.json");
    expect(objectName("a/b")).toBe("a%2Fb.json");
    expect(objectName("a%2Fb")).toBe("a%252Fb.json");
    expect(objectName("ü")).toBe("%C3%BC.json");
    expect(new Set(["a/b", "a_b", "a%2Fb", "a b", "a+b"].map(objectName)).size).toBe(5);
  });

  it("commits with one conditional write after a load (no second read)", async () => {
    const backend = new MemoryObjectBackend();
    const store = new ObjectStoreCheckpointStore(backend);
    let reads = 0;
    const read = backend.read.bind(backend);
    backend.read = (name) => (reads++, read(name));
    await store.load("orders");
    await store.commit(record(1, 1));
    await store.commit(record(2, 2));
    expect(reads).toBe(1);
    expect(backend.writes).toBe(2);
  });

  it("reports committed when its own write landed but the answer was lost and the resend failed its precondition", async () => {
    const backend = new MemoryObjectBackend();
    const store = new ObjectStoreCheckpointStore(backend);
    await store.commit(record(1, 1));
    backend.afterWrite = () => "conflict"; // the SDK resent a write that had landed: 412
    expect(await store.commit(record(2, 2))).toBe("committed");
    backend.afterWrite = undefined;
    expect((await store.load("orders"))?.batchId).toBe(2);
    expect(backend.writes).toBe(2);
  });

  it("gives up with a retriable error when the object changes under every write", async () => {
    const backend = new MemoryObjectBackend();
    const store = new ObjectStoreCheckpointStore(backend);
    await store.commit(record(1, 1));
    // Something rewrites batch 1 (same content, new version) now and after each of our reads.
    const rewrite = (name: string) => {
      const current = backend.objects.get(name)!;
      backend.objects.set(name, { bytes: current.bytes, version: `${current.version}'` });
    };
    rewrite("orders.json");
    const read = backend.read.bind(backend);
    backend.read = async (name) => {
      const got = await read(name);
      rewrite(name);
      return got;
    };
    const err = await store.commit(record(2, 2)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointStoreError);
    expect((err as CheckpointStoreError).code).toBe("CHECKPOINT_CONTENDED");
    expect((err as CheckpointStoreError).retriable).toBe(true);
  });

  it("a rival's commit between load and commit makes this one a CheckpointConflictError", async () => {
    const backend = new MemoryObjectBackend();
    const mine = new ObjectStoreCheckpointStore(backend);
    const rival = new ObjectStoreCheckpointStore(backend);
    await mine.load("orders");
    await rival.commit(record(1, "r", "rival"));
    const err = await mine.commit(record(1, "m", "mine")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointConflictError);
    expect((err as CheckpointConflictError).storedWriterId).toBe("rival");
  });

  it.each([
    ["not JSON", "{", "not JSON"],
    ["another format", JSON.stringify({ cursor: 1, batch_id: 1 }), '"format"'],
    ["another key", JSON.stringify({ format: "lakelogic.checkpoint", version: 1, key: "other" }), '"other"'],
    [
      "a negative count",
      JSON.stringify({ format: "lakelogic.checkpoint", version: 1, key: "orders", batchId: 1, committedAt: "2026-01-01T00:00:00Z", writerId: "w", cursor: 1, batch: { sourceCount: -1, goodCount: 0, badCount: 0 }, totals: {} }),
      "batch.sourceCount",
    ],
    [
      "a missing count",
      JSON.stringify({ format: "lakelogic.checkpoint", version: 1, key: "orders", batchId: 1, committedAt: "2026-01-01T00:00:00Z", writerId: "w", cursor: 1, batch: { sourceCount: 3, goodCount: 2, badCount: 1 }, totals: {} }),
      "batch.supersededCount",
    ],
  ])("refuses a damaged object (%s) naming the location and key", async (_what, body, detail) => {
    const backend = new MemoryObjectBackend();
    backend.objects.set("orders.json", { bytes: bytes(body), version: "v0" });
    const err = await new ObjectStoreCheckpointStore(backend).load("orders").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointObjectDamagedError);
    expect((err as CheckpointStoreError).retriable).toBe(false);
    expect((err as Error).message).toContain("mem://checkpoints");
    expect((err as Error).message).toContain('"orders"');
    expect((err as Error).message).toContain(detail);
  });

  it("refuses a cursor that is not typed JSON with CheckpointCursorError", async () => {
    const backend = new MemoryObjectBackend();
    const body = { format: "lakelogic.checkpoint", version: 1, key: "orders", batchId: 1, committedAt: "2026-01-01T00:00:00Z", writerId: "w", cursor: { $bigint: "x" }, batch: { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 }, totals: { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0 } };
    backend.objects.set("orders.json", { bytes: bytes(JSON.stringify(body)), version: "v0" });
    const err = await new ObjectStoreCheckpointStore(backend).load("orders").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointCursorError);
  });

  it("refuses a cursor that cannot be encoded before writing anything", async () => {
    const backend = new MemoryObjectBackend();
    await expect(new ObjectStoreCheckpointStore(backend).commit(record(1, new Map()))).rejects.toBeInstanceOf(TypeError);
    expect(backend.writes).toBe(0);
  });
});
