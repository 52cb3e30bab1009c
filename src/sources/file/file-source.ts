import { isAscii, isUtf8 } from "node:buffer";
import { open, stat, type FileHandle } from "node:fs/promises";
import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError } from "../../errors.js";
import type { BufferedRecordIterator, CursorSource, ReadOptions, SourceLag, SourceRecord } from "../core/types.js";
import { sleep } from "../../util/wait.js";
import { fileSpec, type FileSourceOptions } from "./spec.js";
import { CursorBeyondEndError, CursorMismatchError } from "../core/errors.js";
import { decoderFrom, type PayloadDecoder } from "../core/decoders/index.js";
import { parseJsonRecord } from "../../util/exact-json.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

export type { FileSourceOptions } from "./spec.js";

/** Where a file source stands: the byte offset after the last line read, and that line's number. */
const FILE_SOURCE_OPTIONS = optionNames<FileSourceOptions>()(["deserialize", "decoder", "chunkBytes", "maxRecordBytes", "onWarning", "idleBackoffMs"]);

export interface FileCursor {
  offset: number;
  line: number;
}


const NEWLINE = 0x0a;
const LINE = { name: "line", missing: "empty line" };

/** Part of a line longer than `maxRecordBytes`: quarantined as raw bytes, never parsed. */
class LongPiece {
  constructor(
    readonly bytes: Buffer,
    /** Bytes of the file it covers: its own, plus the newline when it ends the line. */
    readonly consumed: number,
    readonly endsLine: boolean,
  ) {}
}

/**
 * A file of JSON lines (NDJSON) as a replayable cursor source. The cursor is the byte offset of
 * the next unread line, so a resumed run reads exactly the lines after the last commit.
 * A line counts once its newline is there: one still being written is left for later, whole.
 * `available_now` ends after the last complete line when the run started (I7), and warns when it
 * leaves an unterminated one; `continuous` follows the file as it grows, like `tail -f`. A line
 * that is not valid JSON is a decode failure: the sink quarantines it with its text (I6). A line
 * longer than `maxRecordBytes`, finished or not, is quarantined in pieces of that size with their
 * bytes, so a garbage tail that never ends neither stalls the stream nor fills memory.
 */
export class FileSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** A file read again from a byte offset gives the same lines. */
  readonly replays = true;
  private position: FileCursor = { offset: 0, line: 0 };
  private end: number | undefined;
  /** The position is inside a line whose first pieces were quarantined as too long. */
  private midLine = false;
  /** Where a resumed cursor split a line (for the reason of that line's pieces). */
  private splitAt: number | undefined;
  private readonly chunkBytes: number;
  private readonly maxRecordBytes: number;
  private readonly backoff: { initial: number; max: number };
  private readonly warn: (message: string) => void;
  /** Set for `decoder: text` or `deserialize`; JSON lines keep the parse below. */
  private readonly decoder: PayloadDecoder | undefined;

  constructor(
    readonly path: string,
    options: FileSourceOptions = {},
  ) {
    refuseUnknownOptions("FileSource", options, FILE_SOURCE_OPTIONS);
    if (typeof path !== "string" || path === "") throw new ConfigError("path", "expected the path of a JSON-lines file");
    this.description = `file ${path}`;
    this.chunkBytes = options.chunkBytes ?? fileSpec.options.chunkBytes.default;
    this.maxRecordBytes = options.maxRecordBytes ?? fileSpec.options.maxRecordBytes.default;
    if (!Number.isSafeInteger(this.maxRecordBytes) || this.maxRecordBytes < 1) {
      throw new ConfigError("maxRecordBytes", `expected a whole number >= 1; got ${String(options.maxRecordBytes)}`);
    }
    this.backoff = options.idleBackoffMs ?? { initial: 100, max: 2000 };
    this.warn = options.onWarning ?? ((message) => process.emitWarning(message, { code: "LAKELOGIC_FILE" }));
    const decoder = decoderFrom(options, "source file");
    this.decoder = decoder.name === "json" ? undefined : decoder;
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (cursor === undefined || cursor === null) {
      this.position = { offset: 0, line: 0 };
      this.midLine = false;
      this.splitAt = undefined;
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
    // A cursor inside a line (after a quarantined piece of a too-long one) means the rest of that
    // line is quarantined too, never parsed as if it were a line of its own.
    this.midLine = c.offset > 0 && (await this.byteAt(c.offset - 1)) !== NEWLINE;
    this.splitAt = this.midLine ? c.offset : undefined;
  }

  currentCursor(): FileCursor {
    return { offset: this.position.offset, line: this.position.line };
  }

  /**
   * The offset after the file's last complete line now, or the snapshot given by a run that
   * already captured one. An unterminated last line is left for a later run, with a warning.
   */
  async endCursor(snapshot?: Cursor): Promise<FileCursor> {
    if (snapshot !== undefined && snapshot !== null) {
      this.end = (snapshot as FileCursor).offset;
      return snapshot as FileCursor;
    }
    const size = (await stat(this.path)).size;
    this.end = await this.completeEnd(size);
    if (this.end < size) {
      this.warn(
        `${this.description}: the last ${size - this.end} bytes (from byte ${this.end}) are a line with no newline yet; ` +
          `this run stops before it. A later run reads it, whole, once its newline is appended.`,
      );
    }
    return { offset: this.end, line: -1 };
  }

  /**
   * The offset after the last newline before `size` (not before the cursor). When the
   * unterminated tail is already longer than `maxRecordBytes`, `size`: its pieces are quarantined.
   * Only the last `maxRecordBytes + 1` bytes are looked at, a chunk at a time.
   */
  private async completeEnd(size: number): Promise<number> {
    const from = this.position.offset;
    if (size <= from) return from;
    const floor = Math.max(from, size - this.maxRecordBytes - 1);
    const handle = await open(this.path, "r");
    try {
      const buf = Buffer.allocUnsafe(Math.min(this.chunkBytes, size - floor));
      for (let hi = size; hi > floor; ) {
        const lo = Math.max(floor, hi - buf.length);
        const { bytesRead } = await handle.read(buf, 0, hi - lo, lo);
        const nl = buf.subarray(0, bytesRead).lastIndexOf(NEWLINE);
        if (nl !== -1) return lo + nl + 1;
        hi = lo;
      }
    } finally {
      await handle.close();
    }
    return size - from > this.maxRecordBytes ? size : from;
  }

  private async byteAt(offset: number): Promise<number | undefined> {
    const handle = await open(this.path, "r");
    try {
      const one = Buffer.alloc(1);
      const { bytesRead } = await handle.read(one, 0, 1, offset);
      return bytesRead === 1 ? one[0] : undefined;
    } finally {
      await handle.close();
    }
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
    const piece = (p: LongPiece) => this.pieceRecord(p);
    // Lines are parsed one at a time as they are taken, so `position` (and the cursor) always
    // describes exactly the records handed out so far.
    const takeBuffered = (): SourceRecord | undefined => {
      while (at < data.length) {
        let record: SourceRecord | undefined;
        if (text !== undefined) {
          const nl = text.indexOf("\n", at);
          // Every chunk ends with a newline (see `readChunks`); the guard only keeps offsets exact.
          const end = nl === -1 ? text.length : nl;
          record = this.lineRecord(text.slice(at, end), end - at + (nl === -1 ? 0 : 1));
          at = nl === -1 ? end : nl + 1;
        } else {
          const nl = data.indexOf(NEWLINE, at);
          const end = nl === -1 ? data.length : nl;
          // The line's bytes go along, so one that is not UTF-8 is quarantined as it is (decoding
          // would put U+FFFD in place of the bad bytes, silently).
          record = this.lineRecord(data.toString("utf8", at, end), end - at + (nl === -1 ? 0 : 1), data.subarray(at, end));
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
          if (chunk.value instanceof LongPiece) {
            const quarantined = piece(chunk.value);
            if (quarantined) return { value: quarantined, done: false };
            continue;
          }
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
  private async *chunks(options: ReadOptions): AsyncGenerator<Buffer | LongPiece> {
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

  /**
   * Whole lines from the current position to the end (or the snapshot), one read at a time,
   * tracking byte offsets exactly. A line without its newline yet is left for a later read; the
   * pieces of a line longer than `maxRecordBytes` go as they fill, so `carry` stays within it.
   */
  private async *readChunks(handle: FileHandle, signal: AbortSignal): AsyncGenerator<Buffer | LongPiece> {
    const limit = this.end;
    const max = this.maxRecordBytes;
    let carry: Buffer = Buffer.alloc(0);
    let long = this.midLine;
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
      let start = 0;
      if (last !== -1 && long) {
        const nl = data.indexOf(NEWLINE);
        yield* this.pieces(data.subarray(0, nl), true);
        long = false;
        start = nl + 1;
      }
      // Only a stretch longer than maxRecordBytes can hold a line that is too long.
      if (last + 1 - start > max) yield* this.splitLong(data, start, last);
      else if (last + 1 > start) yield data.subarray(start, last + 1);
      carry = data.subarray(last + 1);
      if (carry.length > max) {
        carry = yield* this.pieces(carry, false);
        long = true;
      }
    }
  }

  /** The lines of `data[start..last]` (`last` a newline): runs of normal lines as chunks, each too-long line in pieces. */
  private *splitLong(data: Buffer, start: number, last: number): Generator<Buffer | LongPiece, void, undefined> {
    let group = start;
    for (let at = start; at <= last; ) {
      const nl = data.indexOf(NEWLINE, at);
      if (nl - at > this.maxRecordBytes) {
        if (at > group) yield data.subarray(group, at);
        yield* this.pieces(data.subarray(at, nl), true);
        group = nl + 1;
      }
      at = nl + 1;
    }
    if (last + 1 > group) yield data.subarray(group, last + 1);
  }

  /**
   * `line` (without its newline) in pieces of `maxRecordBytes`. Ended: the last piece, however
   * short, ends the line. Not ended: full pieces only, and the rest is returned to wait for more.
   */
  private *pieces(line: Buffer, ended: boolean): Generator<LongPiece, Buffer, undefined> {
    const max = this.maxRecordBytes;
    let at = 0;
    for (; line.length - at > max; at += max) yield new LongPiece(line.subarray(at, at + max), max, false);
    if (!ended) return line.subarray(at);
    yield new LongPiece(line.subarray(at), line.length - at + 1, true);
    return Buffer.alloc(0);
  }

  private pieceRecord(piece: LongPiece): SourceRecord | undefined {
    const from = this.position.offset;
    const line = this.position.line + 1;
    const position = { line, offset: from };
    this.position = { offset: from + piece.consumed, line: piece.endsLine ? line : this.position.line };
    const splitAt = this.splitAt;
    this.midLine = !piece.endsLine;
    if (piece.endsLine) this.splitAt = undefined;
    // Nothing but the newline after the last full piece.
    if (piece.bytes.length === 0) return undefined;
    const to = from + piece.bytes.length;
    const decodeError =
      `line ${line}: longer than maxRecordBytes (${this.maxRecordBytes}); quarantined in pieces of at most that size, ` +
      `this one bytes ${from}..${to} of the file` +
      (splitAt === undefined ? "" : ` (the line began before byte ${splitAt}, where the resumed checkpoint split it)`);
    // A copy: the piece would otherwise hold the whole read buffer until its batch is written.
    return { value: undefined, raw: new Uint8Array(piece.bytes), position, bytes: piece.bytes.length, decodeError };
  }

  private lineRecord(line: string, consumed: number, lineBytes?: Buffer): SourceRecord | undefined {
    const position = { line: this.position.line + 1, offset: this.position.offset };
    this.position = { offset: this.position.offset + consumed, line: this.position.line + 1 };
    let text = line;
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return undefined;
    if (this.decoder) {
      const payload = lineBytes ? lineBytes.subarray(0, lineBytes.at(-1) === 0x0d ? -1 : undefined) : text;
      const decoded = this.decoder.decode(payload, LINE);
      if (!("error" in decoded)) return { value: decoded.value, raw: text, position, bytes: consumed };
      // Bytes that are not UTF-8 are kept as they are; any other line as its text.
      const raw = lineBytes && !isUtf8(lineBytes) ? new Uint8Array(payload as Buffer) : text;
      return { value: undefined, raw, position, bytes: consumed, decodeError: `line ${position.line}: ${decoded.error}` };
    }
    if (lineBytes && !isUtf8(lineBytes)) {
      return { value: undefined, raw: new Uint8Array(lineBytes), position, bytes: consumed, decodeError: `line ${position.line}: not valid UTF-8` };
    }
    try {
      return { value: parseJsonRecord(text), raw: text, position, bytes: consumed };
    } catch (err) {
      return { value: undefined, raw: text, position, bytes: consumed, decodeError: `line ${position.line}: invalid JSON: ${(err as Error).message}` };
    }
  }
}
