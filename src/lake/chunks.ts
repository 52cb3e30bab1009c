import { DuckDBDataChunk, DuckDBVector, type DuckDBType, type DuckDBValue } from "../util/duckdb.js";
import type { Row } from "../engine/types.js";
import type { ColumnPlan } from "./columns.js";
import { LakeWriteError } from "./errors.js";
import { keyPrimitive } from "./key-identity.js";

/**
 * Which rows of a batch are written, and the key columns already converted for them. Keyed
 * strategies keep only the last row per key (arrival order). Keys are compared on converted
 * values, so 1 and 1n, or two spellings of one instant, are one key.
 */
export interface Selection {
  /** Indices into the input rows, in write order. */
  selected: number[];
  /** Converted values of the key columns (by plan index), aligned with `selected`. */
  converted: Map<number, Array<DuckDBValue | null>>;
}

export function selectRows(plans: readonly ColumnPlan[], rows: readonly Row[], keyColumns: readonly number[] | undefined): Selection {
  const n = rows.length;
  if (!keyColumns || keyColumns.length === 0) return { selected: range(n), converted: new Map() };
  const all = range(n);
  const keyValues = keyColumns.map((c) => convertColumn(plans[c]!, rows, all));
  const last = new Map<unknown, number>();
  if (keyColumns.length === 1) {
    // One key column: its primitive value is the Map key (no string building per row).
    const kind = plans[keyColumns[0]!]!.kind;
    const values = keyValues[0]!;
    for (let i = 0; i < n; i++) last.set(keyPrimitive(kind, values[i] ?? null), i);
  } else {
    for (let i = 0; i < n; i++) {
      let key = "";
      for (let k = 0; k < keyColumns.length; k++) key += `${String(keyPrimitive(plans[keyColumns[k]!]!.kind, keyValues[k]![i] ?? null))}\u0000`;
      last.set(key, i);
    }
  }
  if (last.size === n) {
    return { selected: all, converted: new Map(keyColumns.map((c, k) => [c, keyValues[k]!])) };
  }
  const selected = [...last.values()].sort((a, b) => a - b);
  return {
    selected,
    converted: new Map(keyColumns.map((c, k) => [c, selected.map((i) => keyValues[k]![i] ?? null)])),
  };
}

/** One column's values for the selected rows. Throws LakeWriteError naming the row and column. */
export function convertColumn(plan: ColumnPlan, rows: readonly Row[], selected: readonly number[]): Array<DuckDBValue | null> {
  const out = new Array<DuckDBValue | null>(selected.length);
  const { get, convert } = plan;
  for (let j = 0; j < selected.length; j++) {
    const i = selected[j]!;
    try {
      out[j] = convert(get(rows[i]!));
    } catch (e) {
      if (e instanceof LakeWriteError) throw new LakeWriteError(`good row ${i}: ${e.message}`);
      throw e;
    }
  }
  return out;
}

/** Every column for the selected rows (key columns reused from the selection). */
export function convertAll(plans: readonly ColumnPlan[], rows: readonly Row[], selection: Selection): Array<Array<DuckDBValue | null>> {
  return plans.map((p, c) => selection.converted.get(c) ?? convertColumn(p, rows, selection.selected));
}

function range(n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** Data chunks (≤ the vector size each) of `count` rows, for the appender. A missing column is all NULL. */
export function buildChunks(
  types: readonly DuckDBType[],
  columns: ReadonlyArray<ReadonlyArray<DuckDBValue | null> | undefined>,
  count: number,
): DuckDBDataChunk[] {
  const chunks: DuckDBDataChunk[] = [];
  const size = DuckDBVector.standardSize();
  for (let off = 0; off < count; off += size) {
    const n = Math.min(size, count - off);
    const chunk = DuckDBDataChunk.create(types, n);
    for (let c = 0; c < types.length; c++) {
      const vector = chunk.getColumnVector(c);
      const col = columns[c];
      for (let r = 0; r < n; r++) vector.setItem(r, col ? (col[off + r] ?? null) : null);
      vector.flush();
    }
    chunks.push(chunk);
  }
  return chunks;
}
