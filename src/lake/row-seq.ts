import { DuckDBBigIntVector, type DuckDBConnection, type DuckDBDataChunk } from "../util/duckdb.js";
import { quoteIdent } from "../util/sql-text.js";
import { readPlanned } from "./duckdb-run.js";

/**
 * Every good row the lake writes carries `_lakelogic_seq`: a number unique in its table, greater
 * than that of every row committed before it. A merge that replaces a row writes it with a new,
 * greater number. Readers of the table (the `lake` source: bronze → silver) resume after the
 * last number they consumed and see every row written or changed since (docs/lake.md).
 */
export const SEQ_COLUMN = "_lakelogic_seq";
/** DuckDB format: per table, the greatest number handed out, updated in the batch's transaction. */
export const SEQS_TABLE = "_lakelogic_seqs";
const TABLE = quoteIdent(SEQS_TABLE);

export async function ensureSeqTable(conn: DuckDBConnection): Promise<void> {
  await conn.run(`CREATE TABLE IF NOT EXISTS ${TABLE} (table_name VARCHAR PRIMARY KEY, last_seq BIGINT NOT NULL)`);
}

/** The greatest number handed out in `table` (0 when none). */
export async function loadSeq(conn: DuckDBConnection, table: string): Promise<number> {
  const rows = await readPlanned(conn, `SELECT last_seq FROM ${TABLE} WHERE table_name = $1`, (p) => p.bindVarchar(1, table));
  return rows.length === 0 ? 0 : Number(rows[0]![0]);
}

/** Record, inside the caller's transaction, that numbers up to `last` are taken. */
export async function storeSeq(conn: DuckDBConnection, table: string, last: number): Promise<void> {
  await readPlanned(
    conn,
    `INSERT INTO ${TABLE} VALUES ($1, $2) ON CONFLICT (table_name) DO UPDATE SET last_seq = excluded.last_seq`,
    (p) => {
      p.bindVarchar(1, table);
      p.bindBigInt(2, BigInt(last));
    },
  );
}

/**
 * Number the rows of GoodColumns chunks after `last`, in their slot (column `slot`, a BIGINT
 * vector the engine fills with positions): last + 1, last + 2, … in chunk order.
 */
export function numberRows(chunks: readonly DuckDBDataChunk[], slot: number, last: number): void {
  let next = BigInt(last);
  for (const chunk of chunks) {
    const vector = chunk.getColumnVector(slot);
    if (!(vector instanceof DuckDBBigIntVector)) throw new Error(`internal error: column ${slot} of the good rows is not their BIGINT row slot`);
    // rowCount is a native call: read once.
    const n = chunk.rowCount;
    for (let r = 0; r < n; r++) vector.setItem(r, ++next);
    vector.flush();
  }
}
