import { fileURLToPath } from "node:url";
import { ConfigError } from "../errors.js";
import { openAzureBackend, type AzureLocationOptions } from "./azure-blob.js";
import { openGcsBackend, type GcsLocationOptions } from "./gcs.js";
import type { ObjectBackend } from "./object-backend.js";
import { DEFAULT_REQUEST_TIMEOUT_MS, ObjectStoreCheckpointStore } from "./object-store.js";
import { LocationError, parseLocation, SUPPORTED_LOCATIONS, type ObjectLocation, type ParsedLocation } from "./object-uri.js";
import { openS3Backend, type S3LocationOptions } from "./s3.js";
import { SQLiteCheckpointStore } from "./sqlite.js";
import type { CheckpointStore } from "./types.js";

export { SUPPORTED_LOCATIONS } from "./object-uri.js";

/**
 * Per-cloud settings for object-store locations. Everything here is optional: by default each
 * cloud's SDK finds credentials and endpoints the way it always does (docs/checkpoints.md).
 */
export interface CheckpointLocationOptions {
  /**
   * Deadline of each read and write of a checkpoint object, in milliseconds (default 30,000).
   * One that expires fails the load or the commit as retriable (CHECKPOINT_STORE_UNAVAILABLE).
   */
  requestTimeoutMs?: number;
  s3?: S3LocationOptions;
  azure?: AzureLocationOptions;
  gcs?: GcsLocationOptions;
}

/**
 * Why `location` cannot hold checkpoints, or undefined when it can. A URI must be one of the
 * object stores (S3, Azure Blob / ADLS, GCS) or a file:// URL; anything else that is not a URI
 * is a local SQLite file path. Nothing is opened or created.
 */
export function checkpointLocationProblem(location: string): string | undefined {
  try {
    parse(location);
    return undefined;
  } catch (err) {
    if (err instanceof ConfigError) return err.detail;
    throw err;
  }
}

/**
 * The checkpoint store at `location`: an object-store URI gets an ObjectStoreCheckpointStore
 * (the cloud's SDK loaded on demand), a local path (or file:// URL) the SQLite store. A URI is
 * never taken for a local path: an unsupported scheme is a ConfigError naming the supported ones.
 */
export async function openCheckpointLocation(location: string, options: CheckpointLocationOptions = {}): Promise<CheckpointStore> {
  const parsed = parse(location);
  switch (parsed.kind) {
    case "path":
      return new SQLiteCheckpointStore(location);
    case "file":
      return new SQLiteCheckpointStore(fileURLToPath(parsed.path));
    case "object": {
      const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
      if (!(Number.isFinite(requestTimeoutMs) && requestTimeoutMs > 0)) {
        throw new ConfigError("checkpoint requestTimeoutMs", `expected a positive number of milliseconds; got ${String(requestTimeoutMs)}`);
      }
      return new ObjectStoreCheckpointStore(await openBackend(parsed.location, options, requestTimeoutMs), { requestTimeoutMs });
    }
  }
}

function openBackend(loc: ObjectLocation, options: CheckpointLocationOptions, requestTimeoutMs: number): Promise<ObjectBackend> {
  switch (loc.cloud) {
    case "s3":
      return openS3Backend(loc.bucket, loc.prefix, loc.uri, options.s3);
    case "gcs":
      return openGcsBackend(loc.bucket, loc.prefix, loc.uri, options.gcs, requestTimeoutMs);
    case "azure":
      return openAzureBackend(loc, options.azure);
  }
}

function parse(location: string): ParsedLocation {
  if (typeof location !== "string" || location.trim() === "") {
    throw new ConfigError("checkpoint", `expected a location (${SUPPORTED_LOCATIONS}); got ${JSON.stringify(location)}`);
  }
  try {
    return parseLocation(location);
  } catch (err) {
    if (!(err instanceof LocationError)) throw err;
    throw new ConfigError(
      "checkpoint",
      `${err.message}. Supported checkpoint locations: ${SUPPORTED_LOCATIONS}` +
        (err.unknownScheme ? '. A local file whose name has a ":" in it needs a directory in front, e.g. "./name"' : ""),
    );
  }
}
