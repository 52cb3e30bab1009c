/**
 * The little an object store must do to hold checkpoints: read an object with its version, and
 * write one only if it is still at the version read (or still absent). S3 and Azure Blob version
 * objects by ETag (`If-Match` / `If-None-Match: *`), GCS by generation (`ifGenerationMatch`,
 * 0 for "absent"); each backend maps its cloud's precondition failure to "conflict".
 */

/** An object as read: its bytes and the version a conditional write must name. */
export interface StoredObject {
  bytes: Uint8Array;
  /** An ETag or a generation number, opaque to the store. Never the literal "absent". */
  version: string;
}

/** Write only over this version, or only when no object exists yet ("absent"). */
export type IfVersion = string;
export const ABSENT = "absent" satisfies IfVersion;

/** The written object's new version, or "conflict" when the precondition failed. */
export type WriteOutcome = { version: string } | "conflict";

export interface ObjectBackend {
  /** The location as messages show it, e.g. `s3://bucket/prefix` (never a credential). */
  readonly location: string;
  /**
   * The object `name` (relative to the location's prefix), or undefined when there is none.
   * `signal` aborts the request (the store's deadline): the backend passes it to its SDK.
   */
  read(name: string, signal?: AbortSignal): Promise<StoredObject | undefined>;
  /** Conditional write: `ifVersion` is the version last read, or ABSENT. */
  write(name: string, bytes: Uint8Array, ifVersion: IfVersion, signal?: AbortSignal): Promise<WriteOutcome>;
  close(): Promise<void>;
}

/** Join a location's prefix and an object name with exactly one "/". */
export function objectPath(prefix: string, name: string): string {
  return prefix === "" ? name : `${prefix}/${name}`;
}
