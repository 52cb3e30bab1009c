/**
 * A Delta table's current rows without starting Spark, for tests that only count what Spark
 * wrote: the live data files are replayed from the JSON commits of `_delta_log` (add minus
 * remove) and read with DuckDB. Only the plain tables SparkStreamSink writes here are accepted:
 * no log checkpoints, no deletion vectors, no partitions — anything else is an error, not a guess.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "../../src/util/duckdb.js";

interface Action {
  add?: { path: string; deletionVector?: unknown; partitionValues?: Record<string, unknown> };
  remove?: { path: string };
}

/** The table's rows as JSON values (BIGINT as text), ordered by `orderBy`. */
export async function readDeltaFiles(table: string, orderBy: string[] = []): Promise<Array<Record<string, unknown>>> {
  const log = join(table, "_delta_log");
  const entries = readdirSync(log);
  if (entries.some((f) => f.endsWith(".checkpoint.parquet"))) throw new Error(`${table}: the log has a checkpoint; read it with Spark`);
  const live = new Set<string>();
  for (const f of entries.filter((e) => /^\d{20}\.json$/.test(e)).sort()) {
    for (const line of readFileSync(join(log, f), "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const a = JSON.parse(line) as Action;
      if (a.add) {
        if (a.add.deletionVector || Object.keys(a.add.partitionValues ?? {}).length > 0) throw new Error(`${table}: deletion vectors or partitions; read it with Spark`);
        live.add(a.add.path);
      }
      if (a.remove) live.delete(a.remove.path);
    }
  }
  if (live.size === 0) return [];
  const files = [...live].map((p) => `'${join(table, decodeURIComponent(p)).replace(/'/g, "''")}'`);
  const instance = await DuckDBInstance.create(":memory:");
  const conn = await instance.connect();
  try {
    const order = orderBy.length ? ` ORDER BY ${orderBy.map((c) => `"${c}"`).join(", ")}` : "";
    const reader = await conn.runAndReadAll(`SELECT * FROM read_parquet([${files.join(", ")}])${order}`);
    return reader.getRowObjectsJson();
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}
