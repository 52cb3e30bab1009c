import { ABSENT, type ObjectBackend, type StoredObject, type WriteOutcome } from "../../src/checkpoint/object-backend.js";

/**
 * An ObjectBackend in memory that honours conditional writes exactly as S3, Azure Blob and GCS
 * do (a version per write, "absent" for a missing object). `afterWrite` lets a test play a lost
 * response; `writes` counts the writes that landed.
 */
export class MemoryObjectBackend implements ObjectBackend {
  readonly location = "mem://checkpoints";
  readonly objects = new Map<string, StoredObject>();
  writes = 0;
  private next = 0;
  /** Called after a write landed; its result replaces the answer the store gets. */
  afterWrite: ((name: string) => WriteOutcome | undefined) | undefined;

  async read(name: string): Promise<StoredObject | undefined> {
    const got = this.objects.get(name);
    return got && { bytes: got.bytes.slice(), version: got.version };
  }

  async write(name: string, bytes: Uint8Array, ifVersion: string): Promise<WriteOutcome> {
    const current = this.objects.get(name);
    if (ifVersion === ABSENT ? current !== undefined : current?.version !== ifVersion) return "conflict";
    const version = `v${++this.next}`;
    this.objects.set(name, { bytes: bytes.slice(), version });
    this.writes++;
    return this.afterWrite?.(name) ?? { version };
  }

  async close(): Promise<void> {}
}
