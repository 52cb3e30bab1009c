/**
 * Reading a DuckLake back with DuckDB's own DuckLake extension on a fresh connection (what a
 * DuckDB user does: `ATTACH 'ducklake:…'`), not through the project's reader.
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { provisioned } from "./objectstores.js";

export function extensionDir(): string {
  return provisioned("provision-duckdb-extensions.sh", "run `bash scripts/provision-duckdb-extensions.sh` (DuckDB's extension wheels from PyPI)");
}

export interface DuckLakeReadOptions {
  /** `postgres:…` or a catalog file path. */
  catalog: string;
  dataPath: string;
  /** AWS_* variables for s3:// data (moto). */
  s3?: { endpoint: string };
}

/** A connection with the lake attached read-only: `query` many times (each sees the newest snapshot), then `close`. */
export async function openDuckLakeReader(o: DuckLakeReadOptions): Promise<{ query(sql: string): Promise<Array<Record<string, unknown>>>; close(): Promise<void> }> {
  const instance = await DuckDBInstance.create(":memory:", { extension_directory: extensionDir(), autoinstall_known_extensions: "false" });
  const conn = await instance.connect();
  if (o.s3) {
    await conn.run("LOAD httpfs");
    const host = new URL(o.s3.endpoint).host;
    await conn.run(`CREATE SECRET (TYPE s3, KEY_ID 'test', SECRET 'test', REGION 'us-east-1', ENDPOINT '${host}', URL_STYLE 'path', USE_SSL false)`);
  }
  if (o.catalog.startsWith("postgres:")) await conn.run("LOAD postgres_scanner");
  await conn.run(`ATTACH 'ducklake:${o.catalog}' AS lake (DATA_PATH '${o.dataPath}', READ_ONLY)`);
  return {
    async query(sql) {
      const rows = (await conn.runAndReadAll(sql)).getRowObjectsJS() as Array<Record<string, unknown>>;
      return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "bigint" && Number.isSafeInteger(Number(v)) ? Number(v) : v])));
    },
    async close() {
      await conn.run("DETACH lake");
    },
  };
}

/** Rows of `sql` (tables as `lake.main.<name>`); integers beyond 2^53 as bigint. */
export async function queryDuckLake(o: DuckLakeReadOptions, sql: string): Promise<Array<Record<string, unknown>>> {
  const reader = await openDuckLakeReader(o);
  try {
    return await reader.query(sql);
  } finally {
    await reader.close();
  }
}
