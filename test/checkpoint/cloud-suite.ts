/**
 * What every object-store location is tested for on its real (emulated) server: the shared
 * CheckpointStore conformance suite, plus the cloud's conditional write itself, enforced by the
 * server — shown at the backend, below the store's own compare-and-set decision.
 */
import { describe, expect, it } from "vitest";
import { CheckpointStoreError } from "../../src/checkpoint/errors.js";
import { openCheckpointLocation, type CheckpointLocationOptions } from "../../src/checkpoint/location.js";
import { ABSENT, type ObjectBackend } from "../../src/checkpoint/object-backend.js";
import { ObjectStoreCheckpointStore } from "../../src/checkpoint/object-store.js";
import { silencingProxy } from "../support/silencing-proxy.js";
import { checkpointStoreConformance, record } from "./conformance.js";

export interface CloudUnderTest {
  name: string;
  /** The location URI of `prefix` in the test bucket (or another bucket). */
  uri(prefix: string, bucket?: string): string;
  options: CheckpointLocationOptions;
  /** The raw backend for `uri`, to show the server's own precondition checks. */
  backend(uri: string): Promise<ObjectBackend>;
  /** The emulator's address, and `options` with this cloud's requests sent to `endpoint` instead. */
  endpoint: string;
  through(endpoint: string): CheckpointLocationOptions;
}

let locations = 0;

export function cloudSuite(cloud: CloudUnderTest): void {
  checkpointStoreConformance(
    cloud.name,
    async () => {
      const uri = cloud.uri(`run-${process.pid}-${++locations}/checkpoints`);
      // Every handle is a new store with a new SDK client, as a fresh container would open it.
      return () => openCheckpointLocation(uri, cloud.options);
    },
    { keepsExtraCounts: true },
  );

  describe(`${cloud.name}: the server's conditional writes`, () => {
    it("refuses a create over an existing object and a write over a version that moved", async () => {
      const backend = await cloud.backend(cloud.uri(`raw-${++locations}`));
      const first = await backend.write("k.json", new TextEncoder().encode("1"), ABSENT);
      expect(first).not.toBe("conflict");
      const v1 = (first as { version: string }).version;
      expect(await backend.write("k.json", new TextEncoder().encode("2"), ABSENT)).toBe("conflict");
      const second = await backend.write("k.json", new TextEncoder().encode("3"), v1);
      expect(second).not.toBe("conflict");
      expect(await backend.write("k.json", new TextEncoder().encode("4"), v1)).toBe("conflict");
      const got = await backend.read("k.json");
      expect(new TextDecoder().decode(got!.bytes)).toBe("3");
      expect(got!.version).toBe((second as { version: string }).version);
      expect(await backend.read("missing.json")).toBeUndefined();
      await backend.close();
    });

    it("says a missing bucket is missing, and that a retry will not help", async () => {
      const store = await openCheckpointLocation(cloud.uri("p", "no-such-bucket"), cloud.options);
      expect(store).toBeInstanceOf(ObjectStoreCheckpointStore);
      const err = await store.load("orders").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CheckpointStoreError);
      expect((err as CheckpointStoreError).code).toBe("CHECKPOINT_CONTAINER_MISSING");
      expect((err as CheckpointStoreError).retriable).toBe(false);
      expect((err as Error).message).toContain("no-such-bucket");
      await store.close();
    });
  });

  describe(`${cloud.name}: a server that stops answering`, () => {
    it("fails a read and a write at the request deadline as retriable, and the commit lands on a retry", async () => {
      const proxy = await silencingProxy(cloud.endpoint);
      const uri = cloud.uri(`silent-${process.pid}-${++locations}`);
      // Generous: the first commit goes through the proxy to the real emulator and must not expire.
      const deadline = { ...cloud.through(proxy.endpoint), requestTimeoutMs: 3_000 };
      try {
        const store = await openCheckpointLocation(uri, deadline);
        expect(await store.commit(record(1, { offset: 1n }))).toBe("committed");
        proxy.silence();
        const seen = proxy.connections();

        const writeErr = await store.commit(record(2, { offset: 2n })).catch((e: unknown) => e);
        expect(writeErr).toBeInstanceOf(CheckpointStoreError);
        expect((writeErr as CheckpointStoreError).code).toBe("CHECKPOINT_STORE_UNAVAILABLE");
        expect((writeErr as CheckpointStoreError).retriable).toBe(true);
        expect((writeErr as Error).message).toMatch(/writing .*no answer within 3 s.*may still land/);

        const fresh = await openCheckpointLocation(uri, deadline);
        const readErr = await fresh.load("orders").catch((e: unknown) => e);
        expect((readErr as CheckpointStoreError).code).toBe("CHECKPOINT_STORE_UNAVAILABLE");
        expect((readErr as Error).message).toMatch(/reading .*no answer within 3 s/);
        // The requests did reach the silent proxy: the deadline, not a refused connection, ended them.
        expect(proxy.connections()).toBeGreaterThan(seen);
        await Promise.all([store.close(), fresh.close()]);

        // Straight to the emulator: batch 2 never landed, and the retried commit does.
        const direct = await openCheckpointLocation(uri, cloud.options);
        expect((await direct.load("orders"))?.batchId).toBe(1);
        expect(await direct.commit(record(2, { offset: 2n }))).toBe("committed");
        expect((await direct.load("orders"))?.cursor).toEqual({ offset: 2n });
        await direct.close();
      } finally {
        await proxy.stop();
      }
    });
  });
}
