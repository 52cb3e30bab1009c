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

/** Rows of `sql` (tables as `lake.main.<name>`); integers beyond 2^53 as bigint. */
export async function queryDuckLake(o: DuckLakeReadOptions, sql: string): Promise<Array<Record<string, unknown>>> {
  const instance = await DuckDBInstance.create(":memory:", { extension_directory: extensionDir(), autoinstall_known_extensions: "false" });
  const conn = await instance.connect();
  if (o.s3) {
    await conn.run("LOAD httpfs");
    const host = new URL(o.s3.endpoint).host;
    await conn.run(`CREATE SECRET (TYPE s3, KEY_ID 'test', SECRET 'test', REGION 'us-east-1', ENDPOINT '${host}', URL_STYLE 'path', USE_SSL false)`);
  }
  if (o.catalog.startsWith("postgres:")) await conn.run("LOAD postgres_scanner");
  await conn.run(`ATTACH 'ducklake:${o.catalog}' AS lake (DATA_PATH '${o.dataPath}', READ_ONLY)`);
  const reader = await conn.runAndReadAll(sql);
  const rows = reader.getRowObjectsJS() as Array<Record<string, unknown>>;
  await conn.run("DETACH lake");
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "bigint" && Number.isSafeInteger(Number(v)) ? Number(v) : v])));
}
