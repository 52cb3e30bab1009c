import { redactUrl } from "../util/redact.js";

/**
 * Checkpoint locations that are URIs. Parsing only (no SDK, no I/O), so a contract or an option
 * can be checked before anything runs.
 */
export type ObjectLocation =
  | { cloud: "s3"; bucket: string; prefix: string; uri: string }
  | { cloud: "gcs"; bucket: string; prefix: string; uri: string }
  | {
      cloud: "azure";
      /** `https://<account>.blob.<suffix>`: the Blob endpoint, whichever form named it. */
      accountUrl: string;
      account: string | undefined;
      container: string;
      prefix: string;
      uri: string;
    };

export const SUPPORTED_LOCATIONS =
  "s3://<bucket>/<path>, gs://<bucket>/<path>, abfss://<container>@<account>.dfs.core.windows.net/<path> " +
  "(also abfs://, wasbs://, az://), https://<account>.blob.core.windows.net/<container>/<path>, " +
  "or a local SQLite file path (file:// URLs too)";

/** A URI scheme of two or more characters followed by ":", so `C:\…` stays a Windows path. */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]+):/;
/** `<account>.blob.<suffix>` or `<account>.dfs.<suffix>` (any Azure cloud's suffix). */
const AZURE_HOST = /^([a-z0-9]+)\.(?:blob|dfs)\.(core\.[a-z0-9.-]+)$/;

/** Not a URI (a local path), a parsed object-store location, or "file" for a file:// URL. */
export type ParsedLocation = { kind: "path" } | { kind: "file"; path: URL } | { kind: "object"; location: ObjectLocation };

export class LocationError extends Error {
  constructor(
    message: string,
    /** The scheme is none of ours: maybe a local file name with a ":" in it. */
    readonly unknownScheme = false,
  ) {
    super(message);
  }
}

export function parseLocation(location: string): ParsedLocation {
  const scheme = SCHEME.exec(location)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: "path" };
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw new LocationError(`"${redactUrl(location)}" looks like a URI but is not a valid one`);
  }
  if (scheme === "file") return { kind: "file", path: url };
  if (url.search || url.hash) {
    throw new LocationError(`${redactUrl(url)} has a query or fragment; give the location alone (credentials come from the environment, never the URI)`);
  }
  if (url.username || url.password) {
    if (!["abfss", "abfs", "wasbs", "az"].includes(scheme) || url.password) {
      throw new LocationError(`${redactUrl(url)} carries credentials; give the location alone (credentials come from the environment, never the URI)`);
    }
  }
  const prefix = decoded(url, url.pathname).replace(/^\/+|\/+$/g, "");
  switch (scheme) {
    case "s3":
    case "s3a":
      return { kind: "object", location: { cloud: "s3", bucket: bucketOf(url, "S3 bucket"), prefix, uri: uriOf("s3", url.hostname, prefix) } };
    case "gs":
      return { kind: "object", location: { cloud: "gcs", bucket: bucketOf(url, "GCS bucket"), prefix, uri: uriOf("gs", url.hostname, prefix) } };
    case "abfss":
    case "abfs":
    case "wasbs":
    case "az":
      return { kind: "object", location: azureHdfsStyle(url, scheme, prefix) };
    case "https":
      return { kind: "object", location: azureUrl(url, prefix) };
    default:
      throw new LocationError(`the scheme "${scheme}:" is not a checkpoint location`, true);
  }
}

function bucketOf(url: URL, what: string): string {
  if (!url.hostname || url.port) throw new LocationError(`${redactUrl(url)}: expected ${what} name right after "//"`);
  return url.hostname;
}

/** `abfss://<container>@<account>.dfs.core.windows.net/<path>`; `az://<container>/<path>` takes the account from the connection string. */
function azureHdfsStyle(url: URL, scheme: string, prefix: string): ObjectLocation {
  const container = decoded(url, url.username);
  if (!container) {
    if (scheme === "az" && url.hostname) {
      return { cloud: "azure", accountUrl: "", account: undefined, container: url.hostname, prefix, uri: uriOf("az", url.hostname, prefix) };
    }
    throw new LocationError(`${redactUrl(url)}: expected ${scheme}://<container>@<account>.dfs.core.windows.net/<path>`);
  }
  return azureAt(url, container, prefix);
}

/** `https://<account>.blob.core.windows.net/<container>/<path>` (or `.dfs.`). */
function azureUrl(url: URL, prefix: string): ObjectLocation {
  if (!AZURE_HOST.test(url.hostname)) {
    throw new LocationError(`${redactUrl(url)}: an https:// location must be an Azure Blob URL, https://<account>.blob.core.windows.net/<container>/<path>`);
  }
  const [container = "", ...rest] = prefix.split("/");
  if (!container) throw new LocationError(`${redactUrl(url)}: expected a container after the account, https://<account>.blob.core.windows.net/<container>/<path>`);
  return azureAt(url, container, rest.join("/"));
}

function azureAt(url: URL, container: string, prefix: string): ObjectLocation {
  const host = AZURE_HOST.exec(url.hostname);
  if (!host || url.port) {
    throw new LocationError(`${redactUrl(url)}: expected an Azure storage host, <account>.dfs.core.windows.net or <account>.blob.core.windows.net`);
  }
  const [, account = "", suffix = ""] = host;
  const accountUrl = `https://${account}.blob.${suffix}`;
  return { cloud: "azure", accountUrl, account, container, prefix, uri: `${accountUrl}/${container}${prefix ? `/${prefix}` : ""}` };
}

function decoded(url: URL, part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new LocationError(`${redactUrl(url)} has a malformed %-escape`);
  }
}

function uriOf(scheme: string, bucket: string, prefix: string): string {
  return `${scheme}://${bucket}${prefix ? `/${prefix}` : ""}`;
}
