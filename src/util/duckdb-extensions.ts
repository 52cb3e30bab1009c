/**
 * DuckDB extensions that are not built into the Node bindings (ducklake, postgres_scanner,
 * httpfs). Where DuckDB can reach its extension repository it installs them itself, as it always
 * does. Where it cannot (CI, air-gapped sites), `LAKELOGIC_DUCKDB_EXTENSIONS` names a DuckDB
 * extension directory holding them (`<dir>/<version>/<platform>/<name>.duckdb_extension`, the
 * layout `scripts/provision-duckdb-extensions.sh` fills from DuckDB's own signed binaries); the
 * provisioning cache's directory is used when it exists. An extension loads only into the exact
 * DuckDB version it was built for.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import type { DuckDBConnection } from "./duckdb.js";

export const EXTENSIONS_ENV = "LAKELOGIC_DUCKDB_EXTENSIONS";

/** The extension directory to use, or undefined to let DuckDB install from its repository. */
export function extensionDirectory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const given = env[EXTENSIONS_ENV]?.trim();
  if (given) return given;
  const cached = join(env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic"), "duckdb-extensions");
  return existsSync(cached) ? cached : undefined;
}

/** Instance options for an instance that loads extensions from `extensionDirectory()`. */
export function extensionOptions(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const dir = extensionDirectory(env);
  // Never reach out for an extension when a directory is given: a missing one is named instead.
  return dir === undefined ? {} : { extension_directory: dir, autoinstall_known_extensions: "false" };
}

/** Load `names` on `conn` (an instance made with `extensionOptions()`), naming what to do when one is missing. */
export async function loadExtensions(conn: DuckDBConnection, names: readonly string[], option: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dir = extensionDirectory(env);
  for (const name of names) {
    try {
      if (dir === undefined) await conn.run(`INSTALL ${name}`);
      await conn.run(`LOAD ${name}`);
    } catch (e) {
      const version = await conn.runAndReadAll("SELECT version()").then((r) => String(r.getRows()[0]?.[0]), () => "this version");
      throw new ConfigError(
        option,
        `DuckDB's ${name} extension (for DuckDB ${version}) could not be loaded` +
          (dir === undefined
            ? ": DuckDB could not install it from its extension repository. Offline, put the extension binaries in a directory " +
              `(scripts/provision-duckdb-extensions.sh does) and set ${EXTENSIONS_ENV} to it`
            : ` from the extension directory ${dir}: put ${name}.duckdb_extension for exactly DuckDB ${version} there ` +
              `(scripts/provision-duckdb-extensions.sh does), or unset ${EXTENSIONS_ENV} to let DuckDB install it`) +
          ` (${(e as Error).message})`,
        { cause: e },
      );
    }
  }
}
