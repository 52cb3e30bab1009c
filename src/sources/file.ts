import { open, stat, type FileHandle } from "node:fs/promises";
import type { Cursor } from "../checkpoint/types.js";
import { ConfigError, LakeLogicError } from "../errors.js";
import type { CursorSource, ReadOptions, SourceLag, SourceRecord } from "./types.js";
import { sleep } from "../util/wait.js";

/** Where a file source stands: the byte offset after the last line read, and that line's number. */
export interface FileCursor {
  offset: number;
  line: number;
}

export interface FileSourceOptions {
  /** Read size per system call. Default 1 MiB. */
  chunkBytes?: number;
  /** In continuous mode, how long to wait before looking for new lines again (doubles up to max). */
  idleBackoffMs?: { initial: number; max: number };
}

const NEWLINE = 0x0a;

/**
 * A file of JSON lines (NDJSON) as a replayable cursor source. The cursor is the byte offset of
 * the next unread line, so a resumed run reads exactly the lines after the last commit.
 * `available_now` ends at the file's size when the run started (I7); `continuous` follows the
 * file as it grows, like `tail -f`. A line that is not valid JSON is a decode failure: the sink
 * quarantines it with its text (I6). Writers must append whole lines.
 */
export class FileSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  private position: FileCursor = { offset: 0, line: 0 };
  private end: number | undefined;
  private readonly chunkBytes: number;
  private readonly backoff: { initial: number; max: number };

  constructor(
    readonly path: string,
    options: FileSourceOptions = {},
  ) {
    if (typeof path !== "string" || path === "") throw new ConfigError("path", "expected the path of a JSON-lines file");
    this.description = `file ${path}`;
    this.chunkBytes = options.chunkBytes ?? 1024 * 1024;
    this.backoff = options.idleBackoffMs ?? { initial: 100, max: 2000 };
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (cursor === undefined || cursor === null) {
      this.position = { offset: 0, line: 0 };
      return;
    }
    const c = cursor as Partial<FileCursor>;
    if (typeof c.offset !== "number" || typeof c.line !== "number") {
      throw new LakeLogicError(
        "CURSOR_MISMATCH",
        `${this.description}: the stored cursor ${JSON.stringify(cursor)} is not a file cursor {offset, line}; ` +
          `this checkpoint key belongs to another kind of source.`,
      );
    }
    const size = (await stat(this.path)).size;
    if (c.offset > size) {
      throw new LakeLogicError(
        "CURSOR_BEYOND_END",
        `${this.description}: the checkpoint is at byte ${c.offset} but the file has only ${size} bytes. ` +
          `It was truncated or replaced; resuming could skip or repeat data. Start over with a new checkpointKey.`,
      );
    }
    this.position = { offset: c.offset, line: c.line };
  }

  currentCursor(): FileCursor {
    return { offset: this.position.offset, line: this.position.line };
  }

  /** The file's size now, or the snapshot given by a run that already captured one. */
  async endCursor(snapshot?: Cursor): Promise<FileCursor> {
    if (snapshot !== undefined && snapshot !== null) {
      this.end = (snapshot as FileCursor).offset;
      return snapshot as FileCursor;
    }
    this.end = (await stat(this.path)).size;
    return { offset: this.end, line: -1 };
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    const total = (end as FileCursor | undefined)?.offset;
    const at = (cursor as FileCursor | undefined)?.offset;
    if (typeof total !== "number" || typeof at !== "number") return undefined;
    return total === 0 ? 1 : Math.min(1, at / total);
  }

  async lag(): Promise<SourceLag | undefined> {
    const size = (await stat(this.path)).size;
    return { bytes: Math.max(0, size - this.position.offset) };
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    const handle = await open(this.path, "r");
    try {
      let wait = this.backoff.initial;
      while (!options.signal.aborted) {
        let progressed = false;
        for await (const record of this.readLines(handle, options.signal)) {
          progressed = true;
          yield record;
        }
        if (this.end !== undefined && this.position.offset >= this.end) return;
        if (options.mode === "available_now") return;
        // Continuous: wait for the file to grow, backing off while it does not.
        wait = progressed ? this.backoff.initial : Math.min(wait * 2, this.backoff.max);
        await sleep(wait, options.signal);
      }
    } finally {
      await handle.close();
    }
  }

  /** Lines from the current position to the end (or the snapshot), tracking byte offsets exactly. */
  private async *readLines(handle: FileHandle, signal: AbortSignal): AsyncIterable<SourceRecord> {
    const limit = this.end;
    let carry: Buffer = Buffer.alloc(0);
    let readAt = this.position.offset;
    const buf = Buffer.allocUnsafe(this.chunkBytes);
    while (!signal.aborted) {
      const want = limit === undefined ? buf.length : Math.min(buf.length, limit - readAt);
      if (want <= 0) break;
      const { bytesRead } = await handle.read(buf, 0, want, readAt);
      if (bytesRead === 0) break;
      readAt += bytesRead;
      const data = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : Buffer.from(buf.subarray(0, bytesRead));
      let start = 0;
      let nl = data.indexOf(NEWLINE, start);
      while (nl !== -1) {
        const record = this.lineRecord(data.subarray(start, nl), nl - start + 1);
        if (record) yield record;
        start = nl + 1;
        nl = data.indexOf(NEWLINE, start);
      }
      carry = data.subarray(start);
    }
    // An unterminated last line counts once the snapshot (or, without one, the file) ends there.
    if (carry.length > 0 && (limit === undefined || readAt >= limit)) {
      const record = this.lineRecord(carry, carry.length);
      if (record) yield record;
    }
  }

  private lineRecord(bytes: Buffer, consumed: number): SourceRecord | undefined {
    const position = { line: this.position.line + 1, offset: this.position.offset };
    this.position = { offset: this.position.offset + consumed, line: this.position.line + 1 };
    let text = bytes.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return undefined;
    try {
      return { value: JSON.parse(text), raw: text, position, bytes: consumed };
    } catch (err) {
      return { value: undefined, raw: text, position, bytes: consumed, decodeError: `line ${position.line}: invalid JSON: ${(err as Error).message}` };
    }
  }
}
