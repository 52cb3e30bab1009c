import type { DuckDBConnection, DuckDBPreparedStatement } from "../util/duckdb.js";

/**
 * Run a statement that reads a table, prepared now so that DuckDB plans it with the table's
 * current statistics (see Statements in duckdb-statements.ts), with its parameters bound on the
 * prepared statement. `conn.run(sql, [doc])` would be simpler but costs ~2–4 ms more per
 * statement and 10k-row batch (measured on 1.5.6): a value passed that way is folded into the
 * plan as a constant and copied with it; preparing costs ~0.4 ms. Returns the rows changed.
 */
export async function runPlanned(conn: DuckDBConnection, sql: string, bind: (p: DuckDBPreparedStatement) => void): Promise<number> {
  const p = await conn.prepare(sql);
  try {
    return await runBound(p, bind);
  } finally {
    p.destroySync();
  }
}

/** Bind a prepared statement's parameters and run it; returns the rows changed. */
export async function runBound(p: DuckDBPreparedStatement, bind: (p: DuckDBPreparedStatement) => void): Promise<number> {
  bind(p);
  return (await p.run()).rowsChanged;
}

/** runPlanned for a statement that returns rows (few of them). */
export async function readPlanned(conn: DuckDBConnection, sql: string, bind: (p: DuckDBPreparedStatement) => void): Promise<unknown[][]> {
  const p = await conn.prepare(sql);
  try {
    bind(p);
    return (await p.runAndReadAll()).getRows();
  } finally {
    p.destroySync();
  }
}
