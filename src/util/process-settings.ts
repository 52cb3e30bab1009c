/**
 * Side effect only: applies the process-wide part of the memory profile (memory-profile.ts):
 * V8's old-generation growth under either profile, DuckDB's allocator under `lean`. It must run
 * before DuckDB's native library loads — jemalloc reads its configuration then, never again —
 * which is why src/util/duckdb.ts imports this module ahead of `@duckdb/node-api`.
 * A setting the user made (even an empty `DUCKDB_JE_MALLOC_CONF`, or their own
 * `--heap-growing-percent`) is left alone; a bad profile is reported when a lake opens.
 */
import { setFlagsFromString } from "node:v8";
import {
  DUCKDB_ALLOCATOR_ENV,
  HEAP_GROWING_PERCENT,
  LEAN_ALLOCATOR_CONF,
  MEMORY_PROFILE_ENV,
} from "./memory-profile.js";

const lean = process.env[MEMORY_PROFILE_ENV] === "lean";
if (lean && process.env[DUCKDB_ALLOCATOR_ENV] === undefined) process.env[DUCKDB_ALLOCATOR_ENV] = LEAN_ALLOCATOR_CONF;
const given = [...process.execArgv, process.env["NODE_OPTIONS"] ?? ""].some((a) => /--heap[-_]growing[-_]percent/.test(a));
// V8 reads this flag each time it sets the next old-generation limit, so setting it now applies.
if (!given) setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT[lean ? "lean" : "default"]}`);
