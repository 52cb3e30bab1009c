/**
 * Side effect only: tunes DuckDB's allocator for the memory profile. It must run before DuckDB's
 * native library loads (jemalloc reads its configuration then, never again), which is why
 * src/util/duckdb.ts imports this module ahead of `@duckdb/node-api`. A variable the user set,
 * even to an empty string, is left alone; a bad profile is reported when a lake opens.
 */
import { DUCKDB_ALLOCATOR_ENV, LEAN_ALLOCATOR_CONF, MEMORY_PROFILE_ENV } from "./memory-profile.js";

if (process.env[MEMORY_PROFILE_ENV] === "lean" && process.env[DUCKDB_ALLOCATOR_ENV] === undefined) {
  process.env[DUCKDB_ALLOCATOR_ENV] = LEAN_ALLOCATOR_CONF;
}
