import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "../util/duckdb.js";
import { extensionOptions, loadExtensions } from "../util/duckdb-extensions.js";
import { ConfigError } from "../errors.js";
import { redactText } from "../util/redact.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { isUri, type DuckLakeLocation } from "./config.js";
import { LakeWriteError } from "./errors.js";

/** The name a DuckLake is attached under on its connection. */
export const LAKE_ALIAS = "lake";

/** `lake.<schema>.<name>`, quoted. */
export function lakeTable(location: DuckLakeLocation, name: string): string {
  return `${LAKE_ALIAS}.${quoteIdent(location.schema)}.${quoteIdent(name)}`;
}

/** A PostgreSQL catalog takes writers on several machines; a catalog file, one process. */
export function sharedCatalog(location: DuckLakeLocation): boolean {
  return location.catalog.startsWith("postgres:");
}

/** A DuckLake transaction lost to a concurrent one: roll back and start again from reading the checkpoint. */
export function isConflict(e: unknown): boolean {
  return /transaction conflict|conflict on|could not serialize|duplicate key/i.test((e as Error)?.message ?? "");
}

/**
 * `fn` again while it loses to concurrent commits, at most `attempts` times in all, with a growing
 * random pause. `fn` must start from reading what it depends on: the caller's transaction is
 * rolled back before a retry, never replayed blindly.
 */
export async function withConflictRetry<T>(fn: () => Promise<T>, attempts = 50): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isConflict(e) || attempt >= attempts) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 5 * attempt)));
    }
  }
}

/**
 * A connection with the DuckLake at `location` attached as `lake` (on its own in-memory DuckDB
 * instance, which also holds the writer's staging tables). Object-store credentials come from the
 * environment, as for every other client here (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL); a PostgreSQL catalog's password from libpq's
 * own variables (PGPASSWORD) or the parameters given.
 */
export async function attachDuckLake(location: DuckLakeLocation, env: NodeJS.ProcessEnv = process.env): Promise<DuckDBConnection> {
  const instance = await DuckDBInstance.create(":memory:", { ...extensionOptions(env), threads: "1" });
  const conn = await instance.connect();
  const s3 = /^(s3a?|r2):\/\//i.test(location.dataPath);
  const gcs = /^(gs|gcs):\/\//i.test(location.dataPath);
  await loadExtensions(conn, ["ducklake", ...(sharedCatalog(location) ? ["postgres_scanner"] : []), ...(s3 || gcs ? ["httpfs"] : [])], "materialization.format");
  if (s3) await conn.run(s3Secret(env));
  if (!isUri(location.dataPath)) mkdirSync(location.dataPath, { recursive: true });
  if (!sharedCatalog(location)) mkdirSync(dirname(location.catalog), { recursive: true });
  const attach = `ATTACH ${quoteString(`ducklake:${location.catalog}`)} AS ${LAKE_ALIAS} (DATA_PATH ${quoteString(location.dataPath)})`;
  // The first writers of a new PostgreSQL catalog race to create its tables: the losers attach again.
  for (let attempt = 1; ; attempt++) {
    try {
      await conn.run(attach);
      break;
    } catch (e) {
      if (attempt < 5 && isConflict(e)) continue;
      const message = redactText((e as Error).message);
      const stored = /does not match existing data path in the catalog "([^"]*)"/.exec(message)?.[1];
      if (stored !== undefined) {
        throw new ConfigError(
          "targetPath",
          `the DuckLake catalog ${redactText(location.catalog)} keeps its data files at ${stored}, not at ${redactText(location.dataPath)}: ` +
            "a catalog has one data path. Give that path (target_path, --target-path or metadata.ducklake_data_path), or another catalog for another lake",
        );
      }
      const busy = /lock/i.test(message) && !sharedCatalog(location);
      throw new LakeWriteError(
        `could not attach the DuckLake catalog ${redactText(location.catalog)}: ${message}` +
          (busy ? " (a catalog file takes one process at a time; writers on several processes or machines need a PostgreSQL catalog)" : ""),
        { retriable: busy || /connect|timeout|refused/i.test(message) },
      );
    }
  }
  if (location.schema !== "main") await conn.run(`CREATE SCHEMA IF NOT EXISTS ${LAKE_ALIAS}.${quoteIdent(location.schema)}`);
  return conn;
}

/** DuckDB's S3 secret built from the AWS variables (DuckDB's own credential chain needs another extension). */
function s3Secret(env: NodeJS.ProcessEnv): string {
  const parts: string[] = ["TYPE s3"];
  const add = (name: string, value: string | undefined) => {
    if (value !== undefined && value !== "") parts.push(`${name} ${quoteString(value)}`);
  };
  add("KEY_ID", env.AWS_ACCESS_KEY_ID);
  add("SECRET", env.AWS_SECRET_ACCESS_KEY);
  add("SESSION_TOKEN", env.AWS_SESSION_TOKEN);
  add("REGION", env.AWS_REGION ?? env.AWS_DEFAULT_REGION);
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (endpoint) {
    // A custom endpoint (MinIO, moto, R2…) is addressed by path, over TLS only if it says https.
    const url = new URL(endpoint);
    add("ENDPOINT", url.host);
    parts.push("URL_STYLE 'path'", `USE_SSL ${url.protocol === "https:"}`);
  }
  return `CREATE OR REPLACE SECRET lakelogic_s3 (${parts.join(", ")})`;
}
