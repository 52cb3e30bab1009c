import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { MemoryCheckpointStore } from "../../src/checkpoint/memory.js";
import { openCheckpointLocation } from "../../src/checkpoint/location.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { checkpointStoreConformance } from "./conformance.js";
import { MemoryObjectBackend } from "./memory-backend.js";
import { ObjectStoreCheckpointStore } from "../../src/checkpoint/object-store.js";

const dir = mkdtempSync(join(tmpdir(), "ll-conformance-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

checkpointStoreConformance(
  "memory",
  async () => {
    const shared = new MemoryCheckpointStore();
    return async () => shared;
  },
  { keepsExtraCounts: true },
);

checkpointStoreConformance(
  "SQLite (a local path through openCheckpointLocation)",
  async () => {
    const path = join(dir, `${++n}.sqlite`);
    return async () => {
      const store = await openCheckpointLocation(path);
      if (!(store instanceof SQLiteCheckpointStore)) throw new Error(`expected a SQLite store for ${path}`);
      return store;
    };
  },
  { keepsExtraCounts: false },
);

checkpointStoreConformance(
  "object store over an in-memory backend",
  async () => {
    const objects = new MemoryObjectBackend();
    return async () => new ObjectStoreCheckpointStore(objects);
  },
  { keepsExtraCounts: true },
);
