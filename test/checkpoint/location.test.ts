import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkpointLocationProblem, openCheckpointLocation } from "../../src/checkpoint/location.js";
import { ObjectStoreCheckpointStore } from "../../src/checkpoint/object-store.js";
import { parseLocation } from "../../src/checkpoint/object-uri.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { Contract } from "../../src/contract/types.js";
import { ConfigError, MissingDependencyError } from "../../src/errors.js";
import type { LakeWriter } from "../../src/lake/types.js";
import { openCheckpoint } from "../../src/pipeline/open.js";
import { loadPeer } from "../../src/util/peer.js";

const SCHEMES = ["s3://", "gs://", "abfss://", "https://<account>.blob.core.windows.net"];

describe("checkpoint locations that are URIs", () => {
  let dir: string;
  let cwd: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ll-location-"));
    cwd = process.cwd();
    process.chdir(dir);
  });
  afterEach(() => {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  });

  it("opens s3://bucket/ckpt as an object store and never creates a local file or directory", async () => {
    const { store } = await openCheckpoint("s3://bucket/ckpt", {} as LakeWriter, {} as Contract);
    expect(store).toBeInstanceOf(ObjectStoreCheckpointStore);
    expect(store.location).toBe("s3://bucket/ckpt");
    await store.close();
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(join(dir, "s3:"))).toBe(false);
  });

  it.each(["ftp://x", "http://example.com/ckpt", "https://example.com/ckpt", "s3:bucket/ckpt", "mailto:ops"])(
    "refuses %s with a ConfigError naming the supported schemes, creating nothing",
    async (location) => {
      const err = await openCheckpoint(location, {} as LakeWriter, {} as Contract).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).option).toBe("checkpoint");
      for (const s of SCHEMES) expect((err as Error).message).toContain(s);
      const problem = checkpointLocationProblem(location);
      for (const s of SCHEMES) expect(problem).toContain(s);
      expect(readdirSync(dir)).toEqual([]);
    },
  );

  it.each([0, -1, Number.NaN, Infinity])("refuses a request deadline of %s ms with a ConfigError naming the option", async (requestTimeoutMs) => {
    const err = await openCheckpointLocation("s3://bucket/ckpt", { requestTimeoutMs }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).option).toBe("checkpoint requestTimeoutMs");
    expect((err as Error).message).toContain("positive number of milliseconds");
  });

  it("says how to name a local file with a colon in it", () => {
    expect(checkpointLocationProblem("ftp://x")).toContain('"./name"');
    expect(checkpointLocationProblem("./odd:name.sqlite")).toBeUndefined();
  });

  it("keeps local paths and file:// URLs as SQLite files", async () => {
    for (const location of ["ckpt.sqlite", "./nested/ckpt.db", join(dir, "abs.sqlite"), "C:\\\\not-windows-here"]) {
      expect(checkpointLocationProblem(location)).toBeUndefined();
    }
    const store = await openCheckpointLocation(pathToFileURL(join(dir, "f.sqlite")).href);
    expect(store).toBeInstanceOf(SQLiteCheckpointStore);
    expect(store.location).toBe(join(dir, "f.sqlite"));
    await store.close();
  });

  it("refuses an empty location and credentials or queries in a URI, without echoing them", () => {
    expect(checkpointLocationProblem("")).toContain("expected a location");
    const withKey = checkpointLocationProblem("https://acct.blob.core.windows.net/c/p?sig=SECRETSIG");
    expect(withKey).toContain("query");
    expect(withKey).not.toContain("SECRETSIG");
    const withPassword = checkpointLocationProblem("s3://user:SECRETPW@bucket/p");
    expect(withPassword).toContain("credentials");
    expect(withPassword).not.toContain("SECRETPW");
  });

  it.each([
    ["s3://bucket", { cloud: "s3", bucket: "bucket", prefix: "", uri: "s3://bucket" }],
    ["s3a://bucket/a/b/", { cloud: "s3", bucket: "bucket", prefix: "a/b", uri: "s3://bucket/a/b" }],
    ["gs://bucket/ckpt", { cloud: "gcs", bucket: "bucket", prefix: "ckpt", uri: "gs://bucket/ckpt" }],
    [
      "abfss://lake@acct.dfs.core.windows.net/ckpt/x",
      { cloud: "azure", accountUrl: "https://acct.blob.core.windows.net", account: "acct", container: "lake", prefix: "ckpt/x" },
    ],
    [
      "wasbs://lake@acct.blob.core.chinacloudapi.cn/ckpt",
      { cloud: "azure", accountUrl: "https://acct.blob.core.chinacloudapi.cn", account: "acct", container: "lake", prefix: "ckpt" },
    ],
    [
      "https://acct.blob.core.windows.net/lake/ckpt",
      { cloud: "azure", accountUrl: "https://acct.blob.core.windows.net", account: "acct", container: "lake", prefix: "ckpt", uri: "https://acct.blob.core.windows.net/lake/ckpt" },
    ],
    ["az://lake/ckpt", { cloud: "azure", accountUrl: "", account: undefined, container: "lake", prefix: "ckpt" }],
  ])("parses %s", (location, expected) => {
    const parsed = parseLocation(location);
    expect(parsed.kind).toBe("object");
    expect(parsed.kind === "object" && parsed.location).toMatchObject(expected);
  });

  it.each(["s3:///nobucket", "abfss://acct.dfs.core.windows.net/p", "abfss://lake@example.com/p", "https://acct.blob.core.windows.net/"])(
    "refuses the malformed %s with the form it expected",
    (location) => {
      expect(checkpointLocationProblem(location)).toMatch(/expected/);
    },
  );

  it("refuses a connection string for another account than the location names", async () => {
    const err = await openCheckpointLocation("abfss://lake@acct.dfs.core.windows.net/p", {
      azure: { connectionString: "DefaultEndpointsProtocol=https;AccountName=other;AccountKey=a2V5;EndpointSuffix=core.windows.net" },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('"acct"');
    expect((err as Error).message).toContain('"other"');
    expect((err as Error).message).not.toContain("a2V5");
  });
});

describe("loadPeer", () => {
  it("names the missing package and the feature that needs it", async () => {
    const err = await loadPeer("@lakelogic/not-installed", "The checkpoint location s3://b").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as Error).message).toContain("npm install @lakelogic/not-installed");
    expect((err as Error).message).toContain("s3://b");
  });
});
