import { DuckDBInstance, type DuckDBConnection } from "../util/duckdb.js";
import { ConfigError } from "../errors.js";
import { memoryProfile, type MemoryProfile } from "../util/memory-profile.js";
import { LakeBusyError } from "./errors.js";

/**
 * One DuckDB instance per database file per process, kept for the life of the process. DuckDB
 * lets a single process open a file for writing, so the lake writer, its checkpoint store and
 * `readTable` share the instance.
 *
 * Instances and connections are never closed explicitly. Results of a query live on in JS until
 * the garbage collector frees them, and freeing a result after its database was closed corrupts
 * the native heap (seen here as `malloc_consolidate` / `bad_weak_ptr` aborts). DuckDB's Node
 * maintainers recommend one instance per file per process, released by the garbage collector;
 * so the file stays locked to this process until it exits.
 */
interface Entry {
  instance: DuckDBInstance;
  refs: number;
  /** Serialises write transactions on this file: writer batches and checkpoint commits. */
  tail: Promise<unknown>;
}

const entries = new Map<string, Promise<Entry>>();

/**
 * Settings of a lake's DuckDB instance, each overridable by an environment variable read when
 * the process first opens the file. DuckDB refuses a bad value with a bare "Failed to set
 * config", so the variable at fault is found and named (see `refusedSetting`).
 */
const INSTANCE_SETTINGS: ReadonlyArray<{
  setting: string;
  env: string;
  /** The value when the variable is not set, by memory profile (src/util/memory-profile.ts). */
  fallback: Partial<Record<MemoryProfile, string>>;
  expected: string;
}> = [
  // WAL size that triggers a checkpoint; larger than DuckDB's 16MB default so that merge batches
  // of ~10k rows do not pay a checkpoint every few commits (measured: commit 13ms → 7ms, and
  // bench:validate 15 % faster). Rows written since the last checkpoint stay in memory, so a
  // smaller threshold (DuckDB's 16MB, the lean profile's) lowers RSS by ~50 MB at ~15 % of throughput.
  {
    setting: "checkpoint_threshold",
    env: "LAKELOGIC_DUCKDB_CHECKPOINT_THRESHOLD",
    fallback: { default: "64MB", lean: "16MB" },
    expected: "a size such as 16MB or 256MB",
  },
  // The lake file is persistent, so DuckDB can evict clean blocks: without a limit its cache grows
  // with the table (80 % of RAM by default) and a long stream's RSS with it (docs/lake.md, "Memory").
  {
    setting: "memory_limit",
    env: "LAKELOGIC_DUCKDB_MEMORY_LIMIT",
    fallback: { default: "128MB", lean: "64MB" },
    expected: "a size such as 64MB or 1GB",
  },
  // One thread, where DuckDB's default is one per core. Measured side by side on 2 cores (1M
  // events, merge, checkpoints included): file → lake 6 % and StreamSink 8–9 % faster, the lake's
  // writes alone ~12 % less CPU at the same speed. The core it frees goes to the JavaScript thread
  // and the engine. The cost: a checkpoint compresses on one core (~100 ms longer per ~600k
  // rows) and `readTable` scans on one; set the variable to read a large table faster.
  {
    setting: "threads",
    env: "LAKELOGIC_DUCKDB_THREADS",
    fallback: { default: "1", lean: "1" },
    expected: "a whole number of threads, at least 1",
  },
];

/** A variable's value; set but empty counts as unset, as for LAKELOGIC_MEMORY_PROFILE. */
function envValue(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value.trim() === "" ? undefined : value;
}

function instanceOptions(): Record<string, string> {
  const profile = memoryProfile();
  const options: Record<string, string> = {};
  for (const s of INSTANCE_SETTINGS) {
    const value = envValue(s.env) ?? s.fallback[profile];
    if (value !== undefined) options[s.setting] = value;
  }
  return options;
}

/** The environment variable whose value DuckDB refuses, as a ConfigError; undefined if none does. */
async function refusedSetting(): Promise<ConfigError | undefined> {
  for (const s of INSTANCE_SETTINGS) {
    const value = envValue(s.env);
    if (value === undefined) continue;
    try {
      await DuckDBInstance.create(":memory:", { [s.setting]: value });
    } catch (e) {
      return new ConfigError(s.env, `DuckDB refuses ${JSON.stringify(value)} as its ${s.setting}; expected ${s.expected}`, { cause: e });
    }
  }
  return undefined;
}

export interface Database {
  readonly path: string;
  connect(): Promise<DuckDBConnection>;
  /** Run `fn` with no other write transaction of this process on the same file. */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  release(): void;
}

export async function acquireDatabase(path: string): Promise<Database> {
  let pending = entries.get(path);
  if (!pending) {
    // Inside the chain: a bad memory profile (instanceOptions throws) rejects like DuckDB does,
    // and the failed entry is dropped below.
    pending = Promise.resolve()
      .then(() => DuckDBInstance.create(path, instanceOptions()))
      .then(
        (instance) => ({ instance, refs: 0, tail: Promise.resolve() }),
        async (e: unknown) => {
          const message = (e as Error).message ?? String(e);
          if (/failed to set config/i.test(message)) throw (await refusedSetting()) ?? e;
          // DuckDB takes an OS lock on the file: one writing process at a time.
          if (/lock/i.test(message)) {
            // DuckDB's message names the holder: "Conflicting lock is held in <program> (PID <n>)".
            const held = /held in (.+?) \(PID (\d+)\)/.exec(message);
            throw new LakeBusyError(
              `${path} is open in another process (DuckDB allows one process per database file; stop the other writer or reader first): ${message}`,
              held ? { program: held[1]!, pid: Number(held[2]) } : undefined,
            );
          }
          throw e;
        },
      );
    entries.set(path, pending);
    pending.catch(() => entries.delete(path));
  }
  const entry = await pending;
  entry.refs++;
  let released = false;
  return {
    path,
    connect() {
      return entry.instance.connect();
    },
    exclusive<T>(fn: () => Promise<T>): Promise<T> {
      const run = entry.tail.then(fn, fn);
      entry.tail = run.catch(() => undefined);
      return run;
    },
    release() {
      if (released) return;
      released = true;
      // Only bookkeeping: the instance stays open (see above); its connections are freed by GC.
      entry.refs--;
    },
  };
}
