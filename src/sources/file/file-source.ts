import { isAscii } from "node:buffer";
import { open, stat, type FileHandle } from "node:fs/promises";
import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError } from "../../errors.js";
import type { BufferedRecordIterator, CursorSource, ReadOptions, SourceLag, SourceRecord } from "../core/types.js";
import { sleep } from "../../util/wait.js";
import { fileSpec, type FileSourceOptions } from "./spec.js";
import { CursorBeyondEndError, CursorMismatchError } from "../core/errors.js";

export type { FileSourceOptions } from "./spec.js";

/** Where a file source stands: the byte offset after the last line read, and that line's number. */
export interface FileCursor {
  offset: number;
  line: number;
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
  /** A file read again from a byte offset gives the same lines. */
  readonly replays = true;
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
    this.chunkBytes = options.chunkBytes ?? fileSpec.options.chunkBytes.default;
    this.backoff = options.idleBackoffMs ?? { initial: 100, max: 2000 };
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (cursor === undefined || cursor === null) {
      this.position = { offset: 0, line: 0 };
      return;
    }
    const c = cursor as Partial<FileCursor>;
    if (typeof c.offset !== "number" || typeof c.line !== "number") {
      throw new CursorMismatchError(
        `${this.description}: the stored cursor ${JSON.stringify(cursor)} is not a file cursor {offset, line}; ` +
          `this checkpoint key belongs to another kind of source.`,
      );
    }
    const size = (await stat(this.path)).size;
    if (c.offset > size) {
      throw new CursorBeyondEndError(
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

  read(options: ReadOptions): AsyncIterable<SourceRecord> {
    const chunks = this.chunks(options);
    let data: Buffer = Buffer.alloc(0);
    /** The chunk decoded once, when it is all ASCII (one byte per character, so offsets agree). */
    let text: string | undefined;
    let at = 0;
    // Lines are parsed one at a time as they are taken, so `position` (and the cursor) always
    // describes exactly the records handed out so far.
    const takeBuffered = (): SourceRecord | undefined => {
      while (at < data.length) {
        let record: SourceRecord | undefined;
        if (text !== undefined) {
          const nl = text.indexOf("\n", at);
          // Only the unterminated last line of a drain comes without a newline (see `chunks`).
          const end = nl === -1 ? text.length : nl;
          record = this.lineRecord(text.slice(at, end), end - at + (nl === -1 ? 0 : 1));
          at = nl === -1 ? end : nl + 1;
        } else {
          const nl = data.indexOf(NEWLINE, at);
          const end = nl === -1 ? data.length : nl;
          record = this.lineRecord(data.toString("utf8", at, end), end - at + (nl === -1 ? 0 : 1));
          at = nl === -1 ? end : nl + 1;
        }
        if (record) return record;
      }
      return undefined;
    };
    const iterator: BufferedRecordIterator & AsyncIterableIterator<SourceRecord> = {
      takeBuffered,
      async next() {
        while (true) {
          const record = takeBuffered();
          if (record) return { value: record, done: false };
          const chunk = await chunks.next();
          if (chunk.done) return { value: undefined, done: true };
          data = chunk.value;
          // Decoding the whole chunk once is much cheaper than a Buffer and a decode per line;
          // with a multi-byte character (or an invalid byte) in it, lines are decoded one by one
          // so that byte offsets stay exact.
          text = isAscii(data) ? data.toString("latin1") : undefined;
          at = 0;
        }
      },
      async return() {
        await chunks.return(undefined);
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    return iterator;
  }

  /** Chunks of whole lines from the current position: to the end (or the snapshot), then, in continuous mode, as the file grows. */
  private async *chunks(options: ReadOptions): AsyncGenerator<Buffer> {
    const handle = await open(this.path, "r");
    try {
      let wait = this.backoff.initial;
      while (!options.signal.aborted) {
        const from = this.position.offset;
        // Each chunk is parsed before the next is asked for, so `position` follows the reads.
        yield* this.readChunks(handle, options.signal);
        if (this.end !== undefined && this.position.offset >= this.end) return;
        if (options.mode === "available_now") return;
        // Continuous: wait for the file to grow, backing off while it does not.
        wait = this.position.offset > from ? this.backoff.initial : Math.min(wait * 2, this.backoff.max);
        await sleep(wait, options.signal);
      }
    } finally {
      await handle.close();
    }
  }

  /** Whole lines from the current position to the end (or the snapshot), one read at a time, tracking byte offsets exactly. */
  private async *readChunks(handle: FileHandle, signal: AbortSignal): AsyncGenerator<Buffer> {
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
      // A copy: `buf` is reused by the next read while the lines of this one are still parsed.
      const data = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : Buffer.from(buf.subarray(0, bytesRead));
      const last = data.lastIndexOf(NEWLINE);
      if (last !== -1) yield data.subarray(0, last + 1);
      carry = data.subarray(last + 1);
    }
    // An unterminated last line counts once the snapshot (or, without one, the file) ends there.
    if (carry.length > 0 && (limit === undefined || readAt >= limit)) yield carry;
  }

  private lineRecord(line: string, consumed: number): SourceRecord | undefined {
    const position = { line: this.position.line + 1, offset: this.position.offset };
    this.position = { offset: this.position.offset + consumed, line: this.position.line + 1 };
    let text = line;
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return undefined;
    try {
      return { value: JSON.parse(text), raw: text, position, bytes: consumed };
    } catch (err) {
      return { value: undefined, raw: text, position, bytes: consumed, decodeError: `line ${position.line}: invalid JSON: ${(err as Error).message}` };
    }
  }
}
