import { resolve } from "node:path";
import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError } from "../../errors.js";
import { sleep as abortableSleep } from "../../util/wait.js";
import { SourceBusyError } from "../core/errors.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { tableReaderOf, type TableReader } from "./readers.js";

/** The cursor of a lake source: the sequence number of the last row read (docs/lake.md). */
export interface LakeCursor {
  seq: number;
}

export interface LakeSourceOptions {
  /** The lake directory (a contract's `materialization.target_path`) or the `.duckdb` file. */
  path: string;
  table: string;
  /** Default: detected from what `path` holds. */
  format?: "duckdb" | "parquet";
  /** Rows per query. Default 1000. */
  chunkSize?: number;
  /** `continuous`: pause between looks for new commits. Default 1000 ms. */
  pollIntervalMs?: number;
  /** The pause itself (tests pass a fake); resolves false when `signal` aborted. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<boolean>;
}

function checkCursor(cursor: Cursor, what: string): LakeCursor {
  const seq = (cursor as Partial<LakeCursor> | null)?.seq;
  if (typeof cursor !== "object" || cursor === null || !Number.isSafeInteger(seq) || (seq as number) < 0) {
    throw new ConfigError("cursor", `${what} ${JSON.stringify(cursor)} is not a lake source cursor ({"seq": n}, n >= 0)`);
  }
  return { seq: seq as number };
}

/**
 * The good rows of a lake table that another stream writes (bronze → silver), in commit order:
 * each row carries `_lakelogic_seq` (src/lake/row-seq.ts), unique and greater than that of every
 * row committed before it; a merge that changes a row gives it a new one. Reading rows with a
 * sequence number above the cursor therefore yields every row committed or changed since, in the
 * same order every time.
 */
export class LakeTableSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** Rows after a cursor come back the same, in the same order, to this stream only. */
  readonly replays = true;

  private readonly path: string;
  private readonly table: string;
  private readonly format: "duckdb" | "parquet" | undefined;
  private readonly chunkSize: number;
  private readonly pollIntervalMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<boolean>;
  private reader: TableReader | undefined;
  private cursor: LakeCursor | undefined;
  /** The available_now snapshot: the greatest sequence number committed when the drain began. */
  private end: number | undefined;
  private reading = false;

  constructor(options: LakeSourceOptions) {
    if (typeof options.path !== "string" || options.path.trim() === "") throw new ConfigError("path", "expected the lake directory or a .duckdb file");
    if (typeof options.table !== "string" || options.table.trim() === "") throw new ConfigError("table", "expected a table name");
    const chunkSize = options.chunkSize ?? 1000;
    if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) throw new ConfigError("chunkSize", `expected an integer >= 1, got ${String(chunkSize)}`);
    const poll = options.pollIntervalMs ?? 1000;
    if (!(poll > 0)) throw new ConfigError("pollIntervalMs", `expected a number > 0, got ${String(poll)}`);
    this.path = resolve(options.path);
    this.table = options.table;
    this.format = options.format;
    this.chunkSize = chunkSize;
    this.pollIntervalMs = poll;
    this.sleep = options.sleep ?? abortableSleep;
    this.description = `lake ${this.table} (${options.path})`;
  }

  seek(cursor: Cursor | undefined): Promise<void> {
    this.cursor = cursor === undefined || cursor === null ? undefined : checkCursor(cursor, "cursor");
    return Promise.resolve();
  }

  currentCursor(): Cursor | undefined {
    return this.cursor === undefined ? undefined : { ...this.cursor };
  }

  /** The drain's end: what the table had committed now, or the snapshot another worker took. */
  async endCursor(snapshot?: Cursor): Promise<Cursor | undefined> {
    this.end = snapshot === undefined || snapshot === null ? await this.high() : checkCursor(snapshot, "end snapshot").seq;
    return { seq: this.end };
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    const at = (cursor as Partial<LakeCursor> | null)?.seq;
    const to = (end as Partial<LakeCursor> | null)?.seq;
    if (typeof at !== "number" || typeof to !== "number" || to <= 0) return undefined;
    return Math.min(1, at / to);
  }

  read(options: ReadOptions): AsyncIterable<SourceRecord> {
    return this.iterate(options);
  }

  close(): Promise<void> {
    this.reader?.close();
    this.reader = undefined;
    return Promise.resolve();
  }

  private async *iterate({ mode, signal }: ReadOptions): AsyncGenerator<SourceRecord> {
    if (this.reading) throw new SourceBusyError(`${this.description}: read() is already running; one reader at a time`);
    this.reading = true;
    try {
      // Without endCursor(), an available_now run still stops at what was committed when it began.
      if (mode === "available_now" && this.end === undefined) this.end = await this.high();
      while (!signal.aborted) {
        const until = this.end ?? (await this.high());
        const after = this.cursor?.seq ?? 0;
        const rows = until > after && this.reader ? await this.reader.page(after, until, this.chunkSize) : [];
        for (const { row, seq } of rows) {
          this.cursor = { seq };
          yield { value: row, position: { seq } };
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

  /** The greatest committed sequence number; 0 while the table does not exist yet. */
  private async high(): Promise<number> {
    this.reader ??= tableReaderOf(this.path, this.table, this.format);
    return this.reader ? this.reader.high() : 0;
  }
}
