// Types only: @google-cloud/storage is an optional peer dependency, loaded at run time through loadPeer.
import type { Bucket } from "@google-cloud/storage";
import { loadPeer } from "../util/peer.js";
import { ABSENT, objectPath, type ObjectBackend, type StoredObject, type WriteOutcome } from "./object-backend.js";
import { objectStoreError, type FailureKind, type StoreContext } from "./object-errors.js";

type GcsModule = typeof import("@google-cloud/storage");

export interface GcsLocationOptions {
  /** A GCS-compatible endpoint, e.g. `http://127.0.0.1:4443` (fake-gcs-server). Default: `STORAGE_EMULATOR_HOST`, else Google's. */
  apiEndpoint?: string;
  /** Default: the project of the Application Default Credentials (object reads and writes do not need it). */
  projectId?: string;
}

/**
 * Google Cloud Storage: a read returns the object's generation (`x-goog-generation`); a write
 * with `ifGenerationMatch` (0 for "must not exist") fails with 412 when the object moved.
 * Credentials: Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
 * login, the metadata server). With an endpoint override (an emulator) no credentials are sent.
 */
export async function openGcsBackend(
  bucket: string,
  prefix: string,
  uri: string,
  options: GcsLocationOptions = {},
  requestTimeoutMs?: number,
): Promise<ObjectBackend> {
  const sdk = await loadPeer<GcsModule>("@google-cloud/storage", `The checkpoint location ${uri}`);
  const endpoint = withScheme(options.apiEndpoint ?? process.env.STORAGE_EMULATOR_HOST);
  const storage = new sdk.Storage({
    ...(endpoint === undefined ? {} : { apiEndpoint: endpoint }),
    ...(options.projectId === undefined ? {} : { projectId: options.projectId }),
    // Its own per-request timeout too: a write cannot take the store's abort signal.
    ...(requestTimeoutMs === undefined ? {} : { timeout: requestTimeoutMs }),
  });
  // The Node SDK sends JSON-API calls to STORAGE_EMULATOR_HOST as given, without the
  // /storage/v1 root that emulators (and Google's other clients) expect; uploads already use
  // apiEndpoint. One root for both, so the same variable works here as it does for gsutil & co.
  if (endpoint !== undefined) storage.baseUrl = `${endpoint}/storage/v1`;
  return new GcsBackend(storage.bucket(bucket), prefix, uri);
}

/** `host:port` as Google's clients accept it in STORAGE_EMULATOR_HOST means http://host:port. */
function withScheme(endpoint: string | undefined): string | undefined {
  if (endpoint === undefined || endpoint === "") return undefined;
  const url = /^[a-z]+:\/\//i.test(endpoint) ? endpoint : `http://${endpoint}`;
  return url.replace(/\/+$/, "").replace(/\/storage\/v1$/, "");
}

class GcsBackend implements ObjectBackend {
  private readonly ctx: StoreContext;

  constructor(
    private readonly bucket: Bucket,
    private readonly prefix: string,
    readonly location: string,
  ) {
    this.ctx = {
      location,
      containerWord: "bucket",
      credentialsHint:
        "Credentials come from Google's Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, the metadata server).",
    };
  }

  async read(name: string, signal?: AbortSignal): Promise<StoredObject | undefined> {
    const path = objectPath(this.prefix, name);
    try {
      let generation: string | undefined;
      const stream = this.bucket.file(path).createReadStream();
      // The SDK takes no abort signal: the deadline ends the download by destroying its stream.
      signal?.addEventListener("abort", () => stream.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted")), { once: true });
      stream.on("response", (res: { headers?: Record<string, string | string[] | undefined> }) => {
        const g = res.headers?.["x-goog-generation"];
        generation = Array.isArray(g) ? g[0] : g;
      });
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      if (!generation) throw new Error("the server sent no x-goog-generation header with the object");
      return { bytes: new Uint8Array(Buffer.concat(chunks)), version: generation };
    } catch (err) {
      const kind = kindOf(err);
      if (kind.status === 404 && !(await this.bucketMissing())) return undefined;
      throw objectStoreError(this.ctx, `reading ${path}`, err, kind.status === 404 ? { ...kind, containerMissing: true } : kind);
    }
  }

  async write(name: string, bytes: Uint8Array, ifVersion: string): Promise<WriteOutcome> {
    const path = objectPath(this.prefix, name);
    const file = this.bucket.file(path);
    try {
      await file.save(Buffer.from(bytes), {
        resumable: false,
        contentType: "application/json",
        preconditionOpts: { ifGenerationMatch: ifVersion === ABSENT ? 0 : ifVersion },
      });
      const generation = file.metadata.generation;
      if (generation === undefined || generation === null) throw new Error("the server sent no generation for the written object");
      return { version: String(generation) };
    } catch (err) {
      const kind = kindOf(err);
      if (kind.status === 412) return "conflict";
      throw objectStoreError(this.ctx, `writing ${path}`, err, kind.status === 404 ? { ...kind, containerMissing: true } : kind);
    }
  }

  async close(): Promise<void> {}

  /** A 404 on an object read does not say whether the object or the whole bucket is missing. */
  private async bucketMissing(): Promise<boolean> {
    try {
      const [exists] = await this.bucket.exists();
      return !exists;
    } catch {
      return false; // cannot tell (e.g. no bucket-level permission): the object is what is missing
    }
  }
}

function kindOf(err: unknown): FailureKind {
  const code = (err as { code?: unknown } | undefined)?.code;
  const message = err instanceof Error ? err.message : "";
  return {
    ...(typeof code === "number" ? { status: code } : {}),
    noCredentials: /Could not load the default credentials/i.test(message),
  };
}
