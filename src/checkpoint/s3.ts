// Types only: @aws-sdk/client-s3 is an optional peer dependency, loaded at run time through loadPeer.
import type { S3Client } from "@aws-sdk/client-s3";
import { loadPeer } from "../util/peer.js";
import { ABSENT, objectPath, type ObjectBackend, type StoredObject, type WriteOutcome } from "./object-backend.js";
import { objectStoreError, type FailureKind, type StoreContext } from "./object-errors.js";

type S3Module = typeof import("@aws-sdk/client-s3");

export interface S3LocationOptions {
  /** An S3-compatible endpoint (MinIO, moto, …). Default: the SDK's own (`AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`, else AWS). */
  endpoint?: string;
  /** Default: the SDK's chain (`AWS_REGION`, the profile). Requests to a bucket in another region are redirected. */
  region?: string;
  /** Path-style addressing (`endpoint/bucket/key`). Default: true when an endpoint override is set, as MinIO and moto need. */
  forcePathStyle?: boolean;
}

/**
 * S3 (and S3-compatible stores): GetObject returns the ETag; PutObject with `If-Match: <etag>`,
 * or `If-None-Match: *` for a first commit, fails with 412 PreconditionFailed (or 409
 * ConditionalRequestConflict while a rival's write is in flight) when the object moved.
 * Credentials: the AWS SDK's default chain (environment, profile, SSO, web identity, instance role).
 */
export async function openS3Backend(bucket: string, prefix: string, uri: string, options: S3LocationOptions = {}): Promise<ObjectBackend> {
  const sdk = await loadPeer<S3Module>("@aws-sdk/client-s3", `The checkpoint location ${uri}`);
  const envEndpoint = process.env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === "true" ? undefined : process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL;
  const overridden = options.endpoint !== undefined || envEndpoint !== undefined;
  const client = new sdk.S3Client({
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.region === undefined ? {} : { region: options.region }),
    forcePathStyle: options.forcePathStyle ?? overridden,
    followRegionRedirects: true,
  });
  return new S3Backend(sdk, client, bucket, prefix, uri);
}

class S3Backend implements ObjectBackend {
  private readonly ctx: StoreContext;

  constructor(
    private readonly sdk: S3Module,
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    readonly location: string,
  ) {
    this.ctx = {
      location,
      containerWord: "bucket",
      credentialsHint:
        "Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web identity, the instance role).",
    };
  }

  async read(name: string, signal?: AbortSignal): Promise<StoredObject | undefined> {
    const Key = objectPath(this.prefix, name);
    try {
      const out = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key }), { abortSignal: signal });
      const bytes = await out.Body!.transformToByteArray();
      if (!out.ETag) throw new Error("the server sent no ETag with the object");
      return { bytes, version: out.ETag };
    } catch (err) {
      if (nameOf(err) === "NoSuchKey") return undefined;
      throw objectStoreError(this.ctx, `reading ${Key}`, err, kindOf(err));
    }
  }

  async write(name: string, bytes: Uint8Array, ifVersion: string, signal?: AbortSignal): Promise<WriteOutcome> {
    const Key = objectPath(this.prefix, name);
    const condition = ifVersion === ABSENT ? { IfNoneMatch: "*" } : { IfMatch: ifVersion };
    try {
      const out = await this.client.send(
        new this.sdk.PutObjectCommand({ Bucket: this.bucket, Key, Body: bytes, ContentType: "application/json", ...condition }),
        { abortSignal: signal },
      );
      if (!out.ETag) throw new Error("the server sent no ETag for the written object");
      return { version: out.ETag };
    } catch (err) {
      const kind = kindOf(err);
      if (kind.status === 412 || nameOf(err) === "PreconditionFailed" || nameOf(err) === "ConditionalRequestConflict") return "conflict";
      throw objectStoreError(this.ctx, `writing ${Key}`, err, kind);
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

function nameOf(err: unknown): string | undefined {
  return (err as { name?: string } | undefined)?.name;
}

function kindOf(err: unknown): FailureKind {
  const status = (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
  const name = nameOf(err);
  return {
    ...(status === undefined ? {} : { status }),
    containerMissing: name === "NoSuchBucket",
    noCredentials: name === "CredentialsProviderError",
  };
}
