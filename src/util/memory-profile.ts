import { ConfigError } from "../errors.js";

/**
 * `LAKELOGIC_MEMORY_PROFILE`: `default` favours throughput; `lean` trades about a third of it for
 * a smaller, steadier resident set (a long-running stream in a small container). It picks the
 * defaults of the lake's DuckDB settings (src/lake/duckdb-db.ts) and of DuckDB's allocator
 * (src/util/duckdb-allocator.ts); variables set explicitly still win. docs/lake.md, "Memory".
 */
export const MEMORY_PROFILE_ENV = "LAKELOGIC_MEMORY_PROFILE";

export const MEMORY_PROFILES = ["default", "lean"] as const;
export type MemoryProfile = (typeof MEMORY_PROFILES)[number];

/** The profile named by the environment; a ConfigError naming the variable if it is not one. */
export function memoryProfile(): MemoryProfile {
  const value = process.env[MEMORY_PROFILE_ENV];
  if (value === undefined || value === "") return "default";
  if ((MEMORY_PROFILES as readonly string[]).includes(value)) return value as MemoryProfile;
  throw new ConfigError(MEMORY_PROFILE_ENV, `unknown profile ${JSON.stringify(value)}; expected one of ${MEMORY_PROFILES.join(", ")}`);
}

/**
 * DuckDB's bundled jemalloc keeps freed pages for ~1 s as "dirty", then ~1 s as "muzzy" (still
 * resident on Linux), so every batch's transient allocations stay in RSS for about two seconds
 * (~70 MB on the 10M soak). Purging at once returns them; it costs page faults when they are
 * needed again, which is why only `lean` does it.
 */
export const LEAN_ALLOCATOR_CONF = "dirty_decay_ms:0,muzzy_decay_ms:0";

/** jemalloc reads this variable once, when DuckDB's native library loads. */
export const DUCKDB_ALLOCATOR_ENV = "DUCKDB_JE_MALLOC_CONF";
