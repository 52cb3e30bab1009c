import { decideCommit } from "./cas.js";
import { ABSENT, type IfVersion, type ObjectBackend, type WriteOutcome } from "./object-backend.js";
import { decodeRecord, encodeRecord } from "./object-record.js";
import { CheckpointStoreError } from "./errors.js";
import type { CheckpointRecord, CheckpointStore, CommitOutcome } from "./types.js";

/** What this store last saw of a key: the record and the version a conditional write must name. */
interface Seen {
  record: CheckpointRecord | undefined;
  version: IfVersion;
  bytes: Uint8Array | undefined;
}

/** Rounds of read → decide → conditional write before giving up on a key that keeps changing. */
const MAX_ROUNDS = 5;

/**
 * How long one read or write of a checkpoint object may take. Without a deadline a request to a
 * server that accepted the connection and went silent waits forever — so would the stream.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface ObjectStoreOptions {
  /** Deadline of each read and write, in milliseconds (default DEFAULT_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs?: number;
}

/**
 * Checkpoints as one small JSON object per key in S3, Azure Blob or GCS (object-record.ts), so a
 * fresh container resumes where the last one stopped.
 *
 * Every commit is a conditional write on the version of the object this store last read (or
 * wrote): the compare-and-set decision (`decideCommit`, shared with the SQLite and memory
 * stores) is taken on that version, and the write succeeds only if the object is still at it.
 * Two overlapping runs therefore cannot both commit (I3): the loser's write fails its
 * precondition, it reads the object again, and the decision on what it finds makes it a
 * CheckpointConflictError — or "already-committed" when the object holds this very commit.
 */
export class ObjectStoreCheckpointStore implements CheckpointStore {
  private readonly seen = new Map<string, Seen>();
  private readonly timeoutMs: number;

  constructor(
    private readonly backend: ObjectBackend,
    options: ObjectStoreOptions = {},
  ) {
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** The location (e.g. `s3://bucket/prefix`): store objects over one location take turns per key. */
  get location(): string {
    return this.backend.location;
  }

  async load(key: string): Promise<CheckpointRecord | undefined> {
    const seen = await this.read(key);
    // A copy of its own: the caller may change the cursor object it gets.
    return seen.bytes ? decodeRecord(seen.bytes, key, this.location) : undefined;
  }

  async commit(record: CheckpointRecord): Promise<CommitOutcome> {
    const bytes = encodeRecord(record); // a cursor that cannot be encoded fails before any I/O
    const name = objectName(record.key);
    const cached = this.seen.get(record.key);
    let seen = cached ?? (await this.read(record.key));
    let fresh = cached === undefined;
    let wrote = false;
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      let outcome: CommitOutcome | undefined;
      try {
        outcome = decideCommit(seen.record, record);
      } catch (err) {
        if (fresh) throw err; // decided on what the store holds now: a rival, or a skip
      }
      if (outcome === "already-committed" && fresh) return outcome;
      if (outcome === "committed") {
        const written = await this.write(name, bytes, seen.version);
        if (written !== "conflict") {
          this.seen.set(record.key, { record: decodeRecord(bytes, record.key, this.location), version: written.version, bytes });
          return "committed";
        }
        wrote = true;
      }
      // The version this store knew is gone (a rival wrote, or the cache was stale): look again.
      seen = await this.read(record.key);
      fresh = true;
      // Our own write, whose answer was lost and which the SDK sent again: it did land.
      if (wrote && seen.bytes && sameBytes(seen.bytes, bytes)) return "committed";
    }
    throw new CheckpointStoreError(
      this.location,
      `committing batch ${record.batchId} of "${record.key}": the checkpoint object changed under every one of ` +
        `${MAX_ROUNDS} conditional writes. Something else keeps rewriting it; nothing was committed, a retry may succeed.`,
      { code: "CHECKPOINT_CONTENDED", retriable: true },
    );
  }

  /**
   * Write `record` whatever batch the key is at (an imported checkpoint continues a count this
   * store never saw), still conditionally: over the version read just before, so a run that
   * commits meanwhile is not overwritten unseen.
   */
  async overwrite(record: CheckpointRecord): Promise<void> {
    const bytes = encodeRecord(record);
    const seen = await this.read(record.key);
    const written = await this.write(objectName(record.key), bytes, seen.version);
    if (written === "conflict") {
      throw new CheckpointStoreError(this.location, `writing "${record.key}": the checkpoint object changed while it was being replaced; nothing was written, try again`, {
        code: "CHECKPOINT_CONTENDED",
        retriable: true,
      });
    }
    this.seen.set(record.key, { record: decodeRecord(bytes, record.key, this.location), version: written.version, bytes });
  }

  /** The Python LakeLogic package's object for `key` at this location, as it wrote it (JSON), if any. */
  async pythonCheckpoint(key: string): Promise<Record<string, unknown> | undefined> {
    const name = pythonObjectName(key);
    if (name === objectName(key)) return undefined; // one name for both: that object is read as this store's own
    const got = await this.withDeadline(`reading ${name}`, (signal) => this.backend.read(name, signal));
    if (!got) return undefined;
    try {
      const body: unknown = JSON.parse(new TextDecoder().decode(got.bytes));
      if (typeof body === "object" && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
    } catch {
      // fall through: not the Python package's object after all
    }
    return undefined;
  }

  async foreignCheckpoint(key: string): Promise<number | undefined> {
    const body = await this.pythonCheckpoint(key);
    const batch = Number(body?.["batch_id"]);
    return body !== undefined && Number.isSafeInteger(batch) ? batch : undefined;
  }

  async close(): Promise<void> {
    this.seen.clear();
    await this.backend.close();
  }

  private async read(key: string): Promise<Seen> {
    const name = objectName(key);
    const got = await this.withDeadline(`reading ${name}`, (signal) => this.backend.read(name, signal));
    const seen: Seen = got
      ? { record: decodeRecord(got.bytes, key, this.location), version: got.version, bytes: got.bytes }
      : { record: undefined, version: ABSENT, bytes: undefined };
    this.seen.set(key, seen);
    return seen;
  }

  private write(name: string, bytes: Uint8Array, ifVersion: IfVersion): Promise<WriteOutcome> {
    return this.withDeadline(`writing ${name}`, (signal) => this.backend.write(name, bytes, ifVersion, signal), true);
  }

  /**
   * `call` with the request deadline: its signal aborts the SDK's request, and the call's
   * promise is not waited for beyond the deadline (an SDK that ignores the signal, or retries on
   * its own, cannot hold the stream). A write cut off may still land: the next commit's
   * conditional write then finds the object moved, reads it, and recognises its own bytes.
   */
  private async withDeadline<T>(doing: string, call: (signal: AbortSignal) => Promise<T>, write = false): Promise<T> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const seconds = this.timeoutMs / 1000;
        const err = new CheckpointStoreError(
          this.location,
          `${doing}: no answer within ${seconds} s (the store's request deadline). ` +
            (write ? "The write may still land; a retry finds out which." : "Nothing was committed; a retry may succeed."),
          { code: "CHECKPOINT_STORE_UNAVAILABLE", retriable: true },
        );
        controller.abort(err);
        reject(err);
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([call(controller.signal), expired]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * The object name of a key: letters, digits and `._~:-` as they are, every other UTF-8 byte as
 * `%XX` (so `%` itself too). One name per key and one key per name, unlike replacing unsafe
 * characters with `_`, which would let "a/b" and "a_b" share a checkpoint.
 */
export function objectName(key: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(key)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9._~:-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return `${out}.json`;
}

/** The Python package's object name for a key: every character but letters, digits and `-_.` as `_`. */
export function pythonObjectName(key: string): string {
  return `${[...key].map((c) => (/^[\p{L}\p{N}._-]$/u.test(c) ? c : "_")).join("")}.json`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
