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

/** A connection to an attached DuckLake; `release` when done with it. */
export interface AttachedLake {
  conn: DuckDBConnection;
  /**
   * Run `fn` (its statements on `conn`) with no other work of this process on the same catalog
   * file running meanwhile; on a PostgreSQL catalog, at once (its writers race, and conflicts
   * decide).
   */
  exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
  release: () => Promise<void>;
}

/**
 * One instance per DuckLake catalog file per process, kept for the life of the process (as
 * duckdb-db.ts keeps one per DuckDB lake file): two instances of one process opening the same
 * catalog file are not fenced by its lock, and their writes corrupt it. The stream's writer,
 * maintenance and readers of the lake then each have a connection of the one instance, and take
 * turns: DuckLake 1.5.5 trips an internal assertion when two connections of one instance work on
 * a new catalog file at once, and one process is all a catalog file takes anyway.
 */
const fileLakes = new Map<string, { instance: Promise<DuckDBInstance>; tail: Promise<unknown> }>();

/**
 * A connection with the DuckLake at `location` attached as `lake`, on an in-memory DuckDB
 * instance (which also holds the writers' staging tables, per connection). A PostgreSQL catalog
 * gets an instance of its own per connection, detached on release; a catalog file, the
 * process's one (above). Object-store credentials come from the environment, as for every other
 * client here (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
 * AWS_ENDPOINT_URL); a PostgreSQL catalog's password from libpq's own variables (PGPASSWORD) or
 * the parameters given.
 */
export async function attachDuckLake(location: DuckLakeLocation, env: NodeJS.ProcessEnv = process.env): Promise<AttachedLake> {
  if (sharedCatalog(location)) {
    const conn = await (await attachedInstance(location, env)).connect();
    return { conn, exclusive: (fn) => fn(), release: () => conn.run(`DETACH ${LAKE_ALIAS}`).then(() => undefined, () => undefined) };
  }
  let entry = fileLakes.get(location.catalog);
  if (!entry) {
    const instance = attachedInstance(location, env);
    entry = { instance, tail: Promise.resolve() };
    fileLakes.set(location.catalog, entry);
    instance.catch(() => fileLakes.delete(location.catalog));
  }
  const file = entry;
  const conn = await (await file.instance).connect();
  return {
    conn,
    exclusive<T>(fn: () => Promise<T>): Promise<T> {
      const run = file.tail.then(fn, fn);
      file.tail = run.catch(() => undefined);
      return run;
    },
    // Left to the garbage collector: the instance stays attached for the process's other users.
    release: () => Promise.resolve(),
  };
}

/** A rival created the new catalog's tables between DuckLake's check and its CREATE TABLE. */
function lostCatalogCreation(e: unknown): boolean {
  return /Failed to initialize DuckLake[\s\S]*already exists/i.test((e as Error)?.message ?? "");
}

async function attachedInstance(location: DuckLakeLocation, env: NodeJS.ProcessEnv): Promise<DuckDBInstance> {
  const instance = await DuckDBInstance.create(":memory:", { ...extensionOptions(env), threads: "1" });
  const conn = await instance.connect();
  const s3 = /^(s3a?|r2):\/\//i.test(location.dataPath);
  const gcs = /^(gs|gcs):\/\//i.test(location.dataPath);
  await loadExtensions(conn, ["ducklake", ...(sharedCatalog(location) ? ["postgres_scanner"] : []), ...(s3 || gcs ? ["httpfs"] : [])], "materialization.format");
  if (s3) await conn.run(s3Secret(env));
  if (!isUri(location.dataPath)) mkdirSync(location.dataPath, { recursive: true });
  if (!sharedCatalog(location)) mkdirSync(dirname(location.catalog), { recursive: true });
  const attach = `ATTACH ${quoteString(`ducklake:${location.catalog}`)} AS ${LAKE_ALIAS} (DATA_PATH ${quoteString(location.dataPath)})`;
  // The first writers of a new PostgreSQL catalog race to create its tables: the losers (a
  // duplicate key, or PostgreSQL's "relation … already exists" for a table a rival's CREATE
  // TABLE made first) attach again, and find the catalog made.
  for (let attempt = 1; ; attempt++) {
    try {
      await conn.run(attach);
      break;
    } catch (e) {
      if (attempt < 5 && (isConflict(e) || lostCatalogCreation(e))) continue;
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
  return instance;
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
