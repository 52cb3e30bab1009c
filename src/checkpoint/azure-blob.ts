// Types only: the Azure SDKs are optional peer dependencies, loaded at run time through loadPeer.
import type { ContainerClient } from "@azure/storage-blob";
import { ConfigError } from "../errors.js";
import { loadPeer } from "../util/peer.js";
import { ABSENT, objectPath, type ObjectBackend, type StoredObject, type WriteOutcome } from "./object-backend.js";
import { objectStoreError, type FailureKind, type StoreContext } from "./object-errors.js";

type BlobModule = typeof import("@azure/storage-blob");
type IdentityModule = typeof import("@azure/identity");

export interface AzureLocationOptions {
  /** A storage connection string (Azurite's, or an account key's). Default: `AZURE_STORAGE_CONNECTION_STRING`. */
  connectionString?: string;
}

export interface AzureTarget {
  /** `https://<account>.blob.<suffix>`, or "" when the location names no account (az://container/path). */
  accountUrl: string;
  account: string | undefined;
  container: string;
  prefix: string;
  uri: string;
}

/**
 * Azure Blob Storage (and ADLS Gen2 accounts, through their Blob endpoint): a download returns
 * the ETag; an upload with `If-Match: <etag>` fails with 412 ConditionNotMet, and with
 * `If-None-Match: *` for a first commit with 409 BlobAlreadyExists, when the blob moved.
 * Credentials: a connection string when one is given (option or AZURE_STORAGE_CONNECTION_STRING,
 * which is also how Azurite is reached), else DefaultAzureCredential from @azure/identity.
 */
export async function openAzureBackend(target: AzureTarget, options: AzureLocationOptions = {}): Promise<ObjectBackend> {
  const feature = `The checkpoint location ${target.uri}`;
  const sdk = await loadPeer<BlobModule>("@azure/storage-blob", feature);
  const connectionString = options.connectionString ?? process.env.AZURE_STORAGE_CONNECTION_STRING;
  let container: ContainerClient;
  if (connectionString) {
    const named = /(?:^|;)\s*AccountName=([^;]+)/i.exec(connectionString)?.[1]?.trim();
    // Writing to the account of the connection string when the location names another would
    // put the checkpoints somewhere nobody looks for them.
    if (named && target.account && named.toLowerCase() !== target.account.toLowerCase()) {
      throw new ConfigError(
        "checkpoint",
        `${target.uri} names the storage account "${target.account}" but the connection string (AZURE_STORAGE_CONNECTION_STRING or ` +
          `the azure.connectionString option) is for "${named}"; make them agree`,
      );
    }
    container = sdk.BlobServiceClient.fromConnectionString(connectionString).getContainerClient(target.container);
  } else {
    if (!target.accountUrl) {
      throw new ConfigError(
        "checkpoint",
        `${target.uri} names no storage account; write az://<container>@<account>.blob.core.windows.net/<path>, or set AZURE_STORAGE_CONNECTION_STRING`,
      );
    }
    const identity = await loadPeer<IdentityModule>("@azure/identity", `${feature} without a connection string (DefaultAzureCredential)`);
    container = new sdk.BlobServiceClient(target.accountUrl, new identity.DefaultAzureCredential()).getContainerClient(target.container);
  }
  return new AzureBackend(container, target.prefix, target.uri);
}

class AzureBackend implements ObjectBackend {
  private readonly ctx: StoreContext;

  constructor(
    private readonly container: ContainerClient,
    private readonly prefix: string,
    readonly location: string,
  ) {
    this.ctx = {
      location,
      containerWord: "container",
      credentialsHint:
        "Credentials come from AZURE_STORAGE_CONNECTION_STRING when set, else DefaultAzureCredential (environment, workload identity, managed identity, Azure CLI).",
    };
  }

  async read(name: string, signal?: AbortSignal): Promise<StoredObject | undefined> {
    const path = objectPath(this.prefix, name);
    try {
      const res = await this.container.getBlockBlobClient(path).download(0, undefined, { abortSignal: signal });
      const chunks: Buffer[] = [];
      for await (const chunk of res.readableStreamBody ?? []) chunks.push(chunk as Buffer);
      if (!res.etag) throw new Error("the service sent no ETag with the blob");
      return { bytes: new Uint8Array(Buffer.concat(chunks)), version: res.etag };
    } catch (err) {
      if (codeOf(err) === "BlobNotFound") return undefined;
      throw objectStoreError(this.ctx, `reading ${path}`, err, kindOf(err));
    }
  }

  async write(name: string, bytes: Uint8Array, ifVersion: string, signal?: AbortSignal): Promise<WriteOutcome> {
    const path = objectPath(this.prefix, name);
    const conditions = ifVersion === ABSENT ? { ifNoneMatch: "*" } : { ifMatch: ifVersion };
    try {
      const out = await this.container.getBlockBlobClient(path).upload(bytes, bytes.length, {
        conditions,
        blobHTTPHeaders: { blobContentType: "application/json" },
        abortSignal: signal,
      });
      if (!out.etag) throw new Error("the service sent no ETag for the written blob");
      return { version: out.etag };
    } catch (err) {
      const code = codeOf(err);
      if (code === "ConditionNotMet" || code === "BlobAlreadyExists" || statusOf(err) === 412) return "conflict";
      throw objectStoreError(this.ctx, `writing ${path}`, err, kindOf(err));
    }
  }

  async close(): Promise<void> {}
}

function codeOf(err: unknown): string | undefined {
  return (err as { code?: string } | undefined)?.code;
}

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number } | undefined)?.statusCode;
}

function kindOf(err: unknown): FailureKind {
  const status = statusOf(err);
  const name = (err as { name?: string } | undefined)?.name;
  return {
    ...(status === undefined ? {} : { status }),
    containerMissing: codeOf(err) === "ContainerNotFound",
    noCredentials: name === "CredentialUnavailableError" || name === "AuthenticationRequiredError",
  };
}
