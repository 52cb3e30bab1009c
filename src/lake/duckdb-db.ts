import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
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

/** WAL size that triggers a checkpoint; larger than DuckDB's 16MB default so that merge batches
 * of ~10k rows do not pay a checkpoint every few commits (measured: commit 13ms → 7ms). Rows
 * written since the last checkpoint stay in memory, so a smaller threshold (for small
 * containers: LAKELOGIC_DUCKDB_CHECKPOINT_THRESHOLD, e.g. "16MB") lowers RSS at some speed. */
const INSTANCE_OPTIONS: Record<string, string> = {
  checkpoint_threshold: process.env.LAKELOGIC_DUCKDB_CHECKPOINT_THRESHOLD ?? "64MB",
  // The lake file is persistent, so DuckDB can evict clean blocks: without a limit its cache grows
  // with the table (80 % of RAM by default) and a long stream's RSS with it. Override with
  // LAKELOGIC_DUCKDB_MEMORY_LIMIT (e.g. "1GB", "64MB"); see docs/lake.md, "Memory".
  memory_limit: process.env.LAKELOGIC_DUCKDB_MEMORY_LIMIT ?? "128MB",
};

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
    pending = DuckDBInstance.create(path, INSTANCE_OPTIONS).then(
      (instance) => ({ instance, refs: 0, tail: Promise.resolve() }),
      (e: unknown) => {
        const message = (e as Error).message ?? String(e);
        // DuckDB takes an OS lock on the file: one writing process at a time.
        if (/lock/i.test(message)) {
          throw new LakeBusyError(
            `${path} is open in another process (DuckDB allows one process per database file; stop the other writer or reader first): ${message}`,
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
