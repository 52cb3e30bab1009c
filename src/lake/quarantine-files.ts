import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync } from "node:fs";

/**
 * Names of the lake's Parquet files: `<prefix>-b<batch id, 8 digits>-<8 random hex>[suffix].parquet`.
 * The batch id and the random part keep two batches, or two attempts at one, from ever sharing a
 * file, so no file is overwritten and a crashed attempt's file is told apart from the committed one.
 */
export function uniqueParquetName(prefix: string, batchId: number, suffix = ""): string {
  return `${prefix}-b${String(batchId).padStart(8, "0")}-${randomBytes(4).toString("hex")}${suffix}.parquet`;
}

/**
 * Is `name` a quarantine file of `table` (or one being written)? A quarantine directory may be
 * shared with other tables, so only files named after this table are its own to collect.
 */
export function isQuarantineFileOf(table: string, name: string): boolean {
  const own = new RegExp(`^${table.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-b\\d{8,}-[0-9a-f]{8}\\.parquet(\\.tmp)?$`);
  return own.test(name);
}

/** fsync a file (flags "r+") or a directory ("r"). */
export function fsyncPath(path: string, flags: string): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
