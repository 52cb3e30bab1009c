import { ConfigError } from "../errors.js";

/**
 * `LAKELOGIC_MEMORY_PROFILE`: `default` favours throughput; `lean` trades about 40 % of it for
 * a smaller, steadier resident set (a long-running stream in a small container). It picks the
 * defaults of the lake's DuckDB settings (src/lake/duckdb-db.ts), of DuckDB's allocator and of
 * V8's heap growth (src/util/process-settings.ts); settings made explicitly still win.
 * docs/lake.md, "The lean memory profile".
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

/**
 * After a full collection V8 lets the old generation grow to up to ~4× what survived it before
 * the next one; a batch pipeline promotes each batch's records and strings, so most of that is
 * garbage (~20 MB reachable of 100+ MB on the soak). The default profile caps the growth at 2×:
 * ~60 MB less RSS over the 10M soak's second half at ~6 % of its throughput; lean's 1.5× saves
 * ~35 MB more at ~13 % (more full collections). docs/lake.md, "The lean memory profile".
 */
export const HEAP_GROWING_PERCENT: Readonly<Record<MemoryProfile, number>> = { default: 100, lean: 50 };
