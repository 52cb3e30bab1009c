import { resolve } from "node:path";
import type { Cursor } from "../../checkpoint/types.js";
import type { Row } from "../../engine/types.js";
import { ConfigError } from "../../errors.js";
import { isUri, joinLocation } from "../../lake/config.js";
import { sleep as abortableSleep } from "../../util/wait.js";
import { SourceBusyError } from "../core/errors.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { DeltaChangesReader, type DeltaPosition } from "./delta-reader.js";
import { isDeltaTable, tableReaderOf, type TableReader } from "./readers.js";

/**
 * The cursor of a lake source (docs/connectors.md): on duckdb and parquet the sequence number of
 * the last row read; on Delta the table version and how many of its rows were read.
 */
export type LakeCursor = { seq: number } | DeltaPosition;

export type LakeFormat = "duckdb" | "parquet" | "delta";

export interface LakeSourceOptions {
  /** The lake directory (a contract's `materialization.target_path`) or the `.duckdb` file. */
  path: string;
  table: string;
  /** Default: detected from what `path` holds (an object-storage URI is Delta). */
  format?: LakeFormat;
  /** Rows per query. Default 1000. */
  chunkSize?: number;
  /** `continuous`: pause between looks for new commits. Default 1000 ms. */
  pollIntervalMs?: number;
  /** The pause itself (tests pass a fake); resolves false when `signal` aborted. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<boolean>;
}

const count = (v: unknown, min = 0): v is number => Number.isSafeInteger(v) && (v as number) >= min;

function checkSeq(cursor: Cursor, what: string): { seq: number } {
  const c = cursor as { seq?: unknown; version?: unknown } | null;
  if (typeof c === "object" && c !== null && count(c.version, -1)) {
    throw new ConfigError("cursor", `${what} ${JSON.stringify(cursor)} is a position in a Delta table, and this table is a duckdb or parquet one: give the stream a new checkpoint key`);
  }
  if (typeof c !== "object" || c === null || !count(c.seq)) {
    throw new ConfigError("cursor", `${what} ${JSON.stringify(cursor)} is not a lake source cursor ({"seq": n}, n >= 0)`);
  }
  return { seq: c.seq };
}

function checkPosition(cursor: Cursor, what: string): DeltaPosition {
  const c = cursor as { seq?: unknown; version?: unknown; row?: unknown } | null;
  if (typeof c === "object" && c !== null && count(c.seq)) {
    throw new ConfigError("cursor", `${what} ${JSON.stringify(cursor)} is a row sequence number of a duckdb or parquet lake, and this table is Delta: give the stream a new checkpoint key`);
  }
  if (typeof c !== "object" || c === null || !count(c.version) || !count(c.row)) {
    throw new ConfigError("cursor", `${what} ${JSON.stringify(cursor)} is not a Delta lake source cursor ({"version": v, "row": n}, both >= 0)`);
  }
  return { version: c.version, row: c.row };
}

/** How positions of one kind are checked and compared (sequence numbers, or Delta versions). */
interface Positions {
  check(cursor: Cursor, what: string): LakeCursor;
  /** The end snapshot of a drain that stops at `until`. */
  end(until: number): Cursor;
  /** `until` from an end snapshot. */
  until(end: Cursor): number;
  /** Where `at` is on the way to `until`, 0 to 1 (rough). */
  progress(at: LakeCursor, until: number): number | undefined;
  /** `until` while the table does not exist. */
  none: number;
}

const SEQ: Positions = {
  check: checkSeq,
  end: (until) => ({ seq: until }),
  // A snapshot taken before anything was written, by a worker that saw no table at all.
  until: (end) => ((end as { version?: unknown } | null)?.version === -1 ? 0 : checkSeq(end, "end snapshot").seq),
  progress: (at, until) => (until <= 0 ? undefined : Math.min(1, (at as { seq: number }).seq / until)),
  none: 0,
};

const DELTA: Positions = {
  check: checkPosition,
  end: (until) => ({ version: until }),
  until: (end) => {
    const e = end as { seq?: unknown; version?: unknown } | null;
    if (e?.seq === 0) return -1; // as SEQ.until: nothing was there
    if (!count(e?.version, -1)) throw new ConfigError("cursor", `end snapshot ${JSON.stringify(end)} is not a Delta lake source snapshot ({"version": v})`);
    return e.version;
  },
  progress: (at, until) => (until <= 0 ? undefined : Math.min(1, (at as DeltaPosition).version / until)),
  none: -1,
};

/** What the source reads through. */
interface Lane {
  positions: Positions;
  /** The end of what is committed now: a sequence number, or a table version. */
  high(): Promise<number>;
  /** Up to `limit` rows after `after` through `until`, with the position after each. */
  page(after: LakeCursor | undefined, until: number, limit: number): Promise<Array<{ row: Row; position: LakeCursor }>>;
  close(): Promise<void>;
}

function seqLane(reader: TableReader): Lane {
  return {
    positions: SEQ,
    high: () => reader.high(),
    page: async (after, until, limit) => {
      const from = after === undefined ? 0 : (after as { seq: number }).seq;
      if (until <= from) return [];
      return (await reader.page(from, until, limit)).map(({ row, seq }) => ({ row, position: { seq } }));
    },
    close: () => {
      reader.close();
      return Promise.resolve();
    },
  };
}

function deltaLane(reader: DeltaChangesReader): Lane {
  return {
    positions: DELTA,
    high: () => reader.latest(),
    page: async (after, until, limit) => (until < 0 ? [] : reader.page(after as DeltaPosition | undefined, until, limit)),
    close: () => reader.close(),
  };
}

/**
 * The good rows of a lake table that another stream writes (bronze → silver), in commit order:
 * each row carries `_lakelogic_seq` (src/lake/row-seq.ts), unique and greater than that of every
 * row committed before it; a merge that changes a row gives it a new one. Reading rows with a
 * sequence number above the cursor therefore yields every row committed or changed since, in the
 * same order every time. A Delta table (any writer's) is read version by version instead: the
 * rows each version inserted or changed (delta-reader.ts).
 */
export class LakeTableSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** Rows after a cursor come back the same, in the same order, to this stream only. */
  readonly replays = true;

  private readonly path: string;
  private readonly table: string;
  private readonly format: LakeFormat | undefined;
  private readonly chunkSize: number;
  private readonly pollIntervalMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<boolean>;
  private lane: Lane | undefined;
  private cursor: LakeCursor | undefined;
  /** The available_now snapshot: the greatest sequence number (or Delta version) committed when the drain began. */
  private end: number | undefined;
  private reading = false;

  constructor(options: LakeSourceOptions) {
    if (typeof options.path !== "string" || options.path.trim() === "") throw new ConfigError("path", "expected the lake directory or a .duckdb file");
    if (typeof options.table !== "string" || options.table.trim() === "") throw new ConfigError("table", "expected a table name");
    const chunkSize = options.chunkSize ?? 1000;
    if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) throw new ConfigError("chunkSize", `expected an integer >= 1, got ${String(chunkSize)}`);
    const poll = options.pollIntervalMs ?? 1000;
    if (!(poll > 0)) throw new ConfigError("pollIntervalMs", `expected a number > 0, got ${String(poll)}`);
    if (options.format !== undefined && !["duckdb", "parquet", "delta"].includes(options.format)) {
      throw new ConfigError("format", `expected duckdb, parquet or delta, got ${JSON.stringify(options.format)}`);
    }
    const uri = isUri(options.path);
    if (uri && options.format !== undefined && options.format !== "delta") {
      throw new ConfigError("path", `${options.path} is a URI: the lake source reads object storage for Delta tables only (format: delta)`);
    }
    this.path = uri ? options.path : resolve(options.path);
    this.table = options.table;
    this.format = uri ? "delta" : options.format;
    this.chunkSize = chunkSize;
    this.pollIntervalMs = poll;
    this.sleep = options.sleep ?? abortableSleep;
    this.description = `lake ${this.table} (${options.path})`;
  }

  seek(cursor: Cursor | undefined): Promise<void> {
    // A cursor that is not this table's kind rejects (thrown in the executor).
    return new Promise((resolve) => {
      this.cursor = cursor === undefined || cursor === null ? undefined : this.positions(cursor).check(cursor, "cursor");
      resolve();
    });
  }

  currentCursor(): Cursor | undefined {
    return this.cursor === undefined ? undefined : { ...this.cursor };
  }

  /** The drain's end: what the table had committed now, or the snapshot another worker took. */
  async endCursor(snapshot?: Cursor): Promise<Cursor | undefined> {
    const positions = this.positions(snapshot);
    this.end = snapshot === undefined || snapshot === null ? await this.high() : positions.until(snapshot);
    return positions.end(this.end);
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    try {
      const positions = this.positions(cursor);
      return positions.progress(positions.check(cursor, "cursor"), positions.until(end));
    } catch {
      return undefined;
    }
  }

  read(options: ReadOptions): AsyncIterable<SourceRecord> {
    return this.iterate(options);
  }

  async close(): Promise<void> {
    const lane = this.lane;
    this.lane = undefined;
    await lane?.close();
  }

  private async *iterate({ mode, signal }: ReadOptions): AsyncGenerator<SourceRecord> {
    if (this.reading) throw new SourceBusyError(`${this.description}: read() is already running; one reader at a time`);
    this.reading = true;
    try {
      // Without endCursor(), an available_now run still stops at what was committed when it began.
      if (mode === "available_now" && this.end === undefined) this.end = await this.high();
      while (!signal.aborted) {
        const until = this.end ?? (await this.high());
        const lane = this.laneOf();
        const rows = lane ? await lane.page(this.cursor, until, this.chunkSize) : [];
        for (const { row, position } of rows) {
          this.cursor = position;
          yield { value: row, position: { ...position } };
          if (signal.aborted) return;
        }
        if (rows.length === this.chunkSize) continue;
        if (this.end !== undefined || mode === "available_now") return;
        if (!(await this.sleep(this.pollIntervalMs, signal))) return;
      }
    } finally {
      this.reading = false;
    }
  }

  /** The end of what is committed: a sequence number (0: nothing yet) or a Delta version (-1: no table). */
  private async high(): Promise<number> {
    const lane = this.laneOf();
    return lane ? lane.high() : SEQ.none;
  }

  /** The table's kind of position; while its format is unknown (nothing written), that of `like`. */
  private positions(like?: Cursor): Positions {
    const lane = this.laneOf();
    if (lane) return lane.positions;
    const c = like as { version?: unknown } | null | undefined;
    return typeof c === "object" && c !== null && "version" in c ? DELTA : SEQ;
  }

  private isDelta(): boolean {
    return this.format === "delta" || (this.format === undefined && isDeltaTable(this.path, this.table));
  }

  /** The reader for the table, or undefined while nothing tells its format (no table written yet). */
  private laneOf(): Lane | undefined {
    if (this.lane) return this.lane;
    if (this.isDelta()) {
      this.lane = deltaLane(new DeltaChangesReader(joinLocation(this.path, this.table)));
      return this.lane;
    }
    const reader = tableReaderOf(this.path, this.table, this.format as "duckdb" | "parquet" | undefined);
    if (reader) this.lane = seqLane(reader);
    return this.lane;
  }
}
