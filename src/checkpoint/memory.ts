import { decideCommit } from "./cas.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome } from "./types.js";

/** Checkpoints in process memory: for tests and throwaway runs. Nothing survives the process. */
export class MemoryCheckpointStore implements CheckpointStore {
  private readonly records = new Map<string, CheckpointRecord>();

  async load(key: string): Promise<CheckpointRecord | undefined> {
    const r = this.records.get(key);
    return r ? structuredClone(r) : undefined;
  }

  async commit(record: CheckpointRecord): Promise<CommitOutcome> {
    const outcome = decideCommit(this.records.get(record.key), record);
    if (outcome === "committed") this.records.set(record.key, structuredClone(record));
    return outcome;
  }

  async close(): Promise<void> {}
}
