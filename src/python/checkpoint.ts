import Database from "better-sqlite3";
import type { CheckpointRecord, Counts, Cursor } from "../checkpoint/types.js";
import { ConfigError } from "../errors.js";

/**
 * Checkpoints of the Python LakeLogic package, as this runtime stores them. The package keeps
 * one row per stream key in the SQLite table `stream_checkpoints` (`key`, `cursor_json` — the
 * cursor as JSON —, `batch_id`, `committed_at`, and the last batch's `source_count`,
 * `good_count`, `bad_count`). What the cursor means depends on the source that wrote it, which
 * the row does not say; `CursorKind` says it.
 */
export type CursorKind = "auto" | "kafka" | "sse" | "watermark" | "iterable" | "value";
export const CURSOR_KINDS: readonly CursorKind[] = ["auto", "kafka", "sse", "watermark", "iterable", "value"];

/** The Python package's default checkpoint file, relative to where it ran. */
export const PYTHON_DEFAULT_CHECKPOINT = "logs/lakelogic_stream_checkpoints.sqlite";

/** Who an imported record says committed it. */
export const PYTHON_IMPORT_WRITER = "import:python-lakelogic";

export interface PythonCheckpointRow {
  key: string;
  cursorJson: string;
  batchId: number;
  committedAt: string | null;
  sourceCount: number | null;
  goodCount: number | null;
  badCount: number | null;
}

interface RawRow {
  key: string;
  cursor_json: string;
  batch_id: number;
  committed_at: string | null;
  source_count: number | null;
  good_count: number | null;
  bad_count: number | null;
}

/** Every row of a Python checkpoint file (opened read-only), in key order. */
export function readPythonCheckpoints(path: string): PythonCheckpointRow[] {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new ConfigError("python checkpoint", `cannot open ${path} as a SQLite file: ${(err as Error).message}`, { cause: err });
  }
  try {
    const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'stream_checkpoints'").get();
    if (!table) {
      throw new ConfigError("python checkpoint", `${path} has no table stream_checkpoints: it is not a checkpoint file of the Python LakeLogic package`);
    }
    const rows = db
      .prepare<[], RawRow>(
        "SELECT key, cursor_json, batch_id, committed_at, source_count, good_count, bad_count FROM stream_checkpoints ORDER BY key",
      )
      .all();
    return rows.map((r) => ({
      key: r.key,
      cursorJson: r.cursor_json,
      batchId: r.batch_id,
      committedAt: r.committed_at,
      sourceCount: r.source_count,
      goodCount: r.good_count,
      badCount: r.bad_count,
    }));
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError("python checkpoint", `cannot read the checkpoints in ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    db.close();
  }
}

/**
 * The row as this runtime's CheckpointRecord: the same key and batch id (the next batch here is
 * `batchId + 1`), the cursor converted as `kind` says. The Python row keeps only its last batch's
 * counts, so those are the batch counts and also where the totals start.
 */
export function convertPythonCheckpoint(row: PythonCheckpointRow, kind: CursorKind, now: Date = new Date()): CheckpointRecord {
  const where = `checkpoint "${row.key}"`;
  if (!Number.isSafeInteger(row.batchId) || row.batchId < 1) {
    throw new ConfigError(where, `batch_id ${JSON.stringify(row.batchId)} is not a committed batch (a whole number >= 1)`);
  }
  const counts: Counts = {
    sourceCount: count(row.sourceCount, where, "source_count"),
    goodCount: count(row.goodCount, where, "good_count"),
    badCount: count(row.badCount, where, "bad_count"),
    // The Python package does not store it.
    supersededCount: 0,
  };
  return {
    key: row.key,
    cursor: convertCursor(parseCursorJson(row.cursorJson, where), kind, where),
    batchId: row.batchId,
    committedAt: committedAt(row.committedAt, now),
    batch: counts,
    totals: { ...counts },
    writerId: PYTHON_IMPORT_WRITER,
  };
}

function count(v: number | null, where: string, column: string): number {
  if (v === null) return 0;
  if (!Number.isSafeInteger(v) || v < 0) throw new ConfigError(where, `${column} ${JSON.stringify(v)} is not a count`);
  return v;
}

/** Python writes ISO 8601 in UTC (`2024-05-01T10:00:00+00:00`); a missing or unreadable one is the import's time. */
function committedAt(text: string | null, now: Date): Date {
  const d = text === null ? undefined : new Date(text);
  return d === undefined || Number.isNaN(d.getTime()) ? now : d;
}

/** `cursor_json` as a value; refused when JSON.parse would change it (Python's NaN, a huge integer). */
function parseCursorJson(text: string, where: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError(where, `cursor_json is not JSON (${(err as Error).message}): ${preview(text)}`);
  }
  const lossy = findUnsafeNumber(value);
  if (lossy !== undefined) {
    throw new ConfigError(where, `cursor_json holds the number ${lossy}, which JavaScript cannot hold exactly; it is not imported rather than changed`);
  }
  return value;
}

function findUnsafeNumber(v: unknown): string | undefined {
  if (typeof v === "number") return Number.isInteger(v) && !Number.isSafeInteger(v) ? String(v) : undefined;
  if (Array.isArray(v)) return v.map(findUnsafeNumber).find((x) => x !== undefined);
  if (typeof v === "object" && v !== null) return Object.values(v).map(findUnsafeNumber).find((x) => x !== undefined);
  return undefined;
}

const KAFKA_KEY = /^(.+):(0|[1-9][0-9]*)$/;

function isKafkaCursor(v: unknown): v is Record<string, number> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const entries = Object.entries(v);
  return entries.length > 0 && entries.every(([k, o]) => KAFKA_KEY.test(k) && Number.isSafeInteger(o) && (o as number) >= 0);
}

/**
 * The Python cursor in this runtime's shape for `kind`:
 * - kafka: `{"<topic>:<partition>": nextOffset}` in both (Python stores the offset after the
 *   last record read, as here), so it is kept as it is;
 * - sse: the last event id, a string in both;
 * - watermark: the last watermark value → `{ watermark }` (a WatermarkChunkSource with
 *   `uniqueWatermark: true`; one with a tieBreakerField refuses it at seek, as it should);
 * - iterable: the count of records committed → `{ offset, exhausted: false }`: a replayable
 *   IterableSource skips them, a plain one refuses to guess (NotReplayableError);
 * - value: a `cursor_fn` value, kept as it is for `cursorFn` (the function source receives it).
 * `auto` recognises a Kafka cursor and nothing else: a number or string could be any of the others.
 */
export function convertCursor(value: unknown, kind: CursorKind, where: string): Cursor {
  if (value === null) return null; // nothing to resume from, whatever the source
  switch (kind) {
    case "auto":
      if (isKafkaCursor(value)) return value;
      throw new ConfigError(
        where,
        `the cursor ${preview(JSON.stringify(value))} could come from several kinds of source; say which with --cursor ` +
          `(sse: an event id; watermark: a WatermarkChunkSource's last value; iterable: a count of records; value: a cursor_fn value)`,
      );
    case "kafka":
      if (isKafkaCursor(value)) return value;
      throw new ConfigError(where, `expected a Kafka cursor {"<topic>:<partition>": nextOffset}; got ${preview(JSON.stringify(value))}`);
    case "sse":
      if (typeof value === "string") return value;
      throw new ConfigError(where, `expected an SSE event id (a string); got ${preview(JSON.stringify(value))}`);
    case "watermark":
      if (typeof value === "string" || (typeof value === "number" && Number.isFinite(value))) return { watermark: value };
      throw new ConfigError(where, `expected a watermark value (a number or string); got ${preview(JSON.stringify(value))}`);
    case "iterable":
      if (Number.isSafeInteger(value) && (value as number) >= 0) return { offset: value as number, exhausted: false };
      throw new ConfigError(where, `expected a count of records (a whole number >= 0); got ${preview(JSON.stringify(value))}`);
    case "value":
      return value;
  }
}

function preview(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
