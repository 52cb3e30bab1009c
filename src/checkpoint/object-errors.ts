import { errorText, safeCause } from "../util/redact.js";
import { CheckpointStoreError } from "./errors.js";

/**
 * Failures of an object-store checkpoint location (S3, Azure Blob, GCS), one stable code per
 * kind. Messages name the location and what to do; the SDK's own words pass through
 * `errorText`, so a signed URL or a key that a server echoes never reaches a log.
 */

/** The object exists but is not a checkpoint as LakeLogic writes it (hand-edited, or another tool's file). */
export class CheckpointObjectDamagedError extends CheckpointStoreError {
  constructor(location: string, key: string, detail: string, options: { cause?: unknown } = {}) {
    super(
      location,
      `the object of checkpoint "${key}" cannot be read: ${detail}. Restore it from a backup (bucket versioning), ` +
        "or delete it to start that stream again from its beginning.",
      { cause: options.cause, code: "CHECKPOINT_OBJECT_DAMAGED", retriable: false },
    );
  }
}

/** What a backend learned from an SDK error, enough to choose the error to throw. */
export interface FailureKind {
  /** HTTP status when the server answered; undefined for network failures. */
  status?: number;
  /** The bucket or container itself does not exist. */
  containerMissing?: boolean;
  /** No credentials could be found or obtained (the SDK's default chain came up empty). */
  noCredentials?: boolean;
}

export interface StoreContext {
  /** The location as messages show it, e.g. `s3://bucket/prefix`. */
  location: string;
  /** "bucket" or "container", as the cloud calls it. */
  containerWord: string;
  /** Where credentials come from, for the access-denied hint. */
  credentialsHint: string;
}

/** A typed error for an SDK failure while `doing` something at a checkpoint location. */
export function objectStoreError(ctx: StoreContext, doing: string, err: unknown, kind: FailureKind): CheckpointStoreError {
  const said = errorText(err);
  const cause = safeCause(err);
  const { status } = kind;
  if (kind.containerMissing) {
    return new CheckpointStoreError(
      ctx.location,
      `${doing}: the ${ctx.containerWord} does not exist (${said}). Create it first; LakeLogic never creates ${ctx.containerWord}s.`,
      { code: "CHECKPOINT_CONTAINER_MISSING", cause, retriable: false },
    );
  }
  if (kind.noCredentials || status === 401 || status === 403) {
    return new CheckpointStoreError(
      ctx.location,
      `${doing}: ${kind.noCredentials ? "no credentials were found" : "access denied"} (${said}). ${ctx.credentialsHint} ` +
        "The identity needs to read and write objects under this location.",
      { code: "CHECKPOINT_ACCESS_DENIED", cause, retriable: false },
    );
  }
  // No answer at all, throttling, or a server error: the same request may well succeed later.
  const transient = status === undefined || status === 408 || status === 429 || status >= 500;
  return new CheckpointStoreError(
    ctx.location,
    `${doing}: ${said}${status === undefined ? "" : ` (HTTP ${status})`}.` +
      (transient ? " Nothing was committed; a retry may succeed." : " Check the location and the service's answer."),
    { code: transient ? "CHECKPOINT_STORE_UNAVAILABLE" : "CHECKPOINT_STORE_REFUSED", cause, retriable: transient },
  );
}
