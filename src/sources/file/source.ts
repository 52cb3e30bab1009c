import { isAscii, isUtf8 } from "node:buffer";
import { open, stat, type FileHandle } from "node:fs/promises";
import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError } from "../../errors.js";
import type { BufferedRecordIterator, CursorSource, ReadOptions, SourceBacklog, SourceLag, SourceRecord } from "../core/types.js";
import { sleep } from "../../util/wait.js";
import { fileSpec, type FileSourceOptions } from "./spec.js";
import { CursorMismatchError } from "../core/errors.js";
import { decoderFrom, type PayloadDecoder } from "../core/decoders/index.js";
import { parseJsonRecord } from "../../util/exact-json.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";
import { FileReplacedError } from "./errors.js";
import { describeId, fileIdOf, findBeside, headDigest, readAt, HEAD_BYTES, sameFile, statFile, type FileId } from "./identity.js";
import { completeEnd, LongPiece, NEWLINE, pieces, splitLong } from "./lines.js";
import { locate, type FileCursor, type Located, type OpenFile } from "./rotation.js";

export type { FileSourceOptions } from "./spec.js";
export type { FileCursor } from "./rotation.js";

const FILE_SOURCE_OPTIONS = optionNames<FileSourceOptions>()(["deserialize", "decoder", "chunkBytes", "maxRecordBytes", "onWarning", "idleBackoffMs"]);

const LINE = { name: "line", missing: "empty line" };

/** The end of an available_now run: an offset in the file it names (any file, for a snapshot without identity). */
interface FileEnd {
  offset: number;
  id: FileId | undefined;
}

/**
 * A file of JSON lines (NDJSON) as a replayable cursor source. The cursor is the byte offset of
 * the next unread line and the file's identity (device, inode, a digest of its first bytes), so
 * a resumed run reads exactly the lines after the last commit, of that file.
 * A line counts once its newline is there: one still being written is left for later, whole.
 * `available_now` ends after the last complete line when the run started (I7), and warns when it
 * leaves an unterminated one; `continuous` follows the file as it grows, like `tail -f`. A line
 * that is not valid JSON is a decode failure: the sink quarantines it with its text (I6). A line
 * longer than `maxRecordBytes`, finished or not, is quarantined in pieces of that size with their
 * bytes, so a garbage tail that never ends neither stalls the stream nor fills memory.
 * Rotation is followed as log shippers do (see `locate` and `nextFile`): a file renamed away is
 * read to its end before the new file at the path, a `copytruncate` copy is read on before the
 * truncated file is read from its beginning, and a file replaced by other content is refused
 * (FileReplacedError) rather than read from a wrong offset.
 */
export class FileSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** A file read again from a byte offset gives the same lines. */
  readonly replays = true;
  private position = { offset: 0, line: 0 };
  private end: FileEnd | undefined;
  /** The position is inside a line whose first pieces were quarantined as too long. */
  private midLine = false;
  /** Where a resumed cursor split a line (for the reason of that line's pieces). */
  private splitAt: number | undefined;
  /** The file read; undefined until a cursor or the first read names it. */
  private file: OpenFile | undefined;
  /** `dev:ino` of the file, in each record's position (line numbers start again in a new file). */
  private fileTag: string | undefined;
  /** The file's first bytes as read or checked (up to HEAD_BYTES; at least min(HEAD_BYTES, offset)). */
  private head: Buffer = Buffer.alloc(0);
  private digest = { bytes: -1, hex: "" };
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
      this.moveTo(undefined, { offset: 0, line: 0, inLine: false, head: Buffer.alloc(0) });
      return;
    }
    const c = cursor as Partial<FileCursor>;
    if (typeof c.offset !== "number" || typeof c.line !== "number") {
      throw new CursorMismatchError(
        `${this.description}: the stored cursor ${JSON.stringify(cursor)} is not a file cursor {offset, line}; ` +
          `this checkpoint key belongs to another kind of source.`,
      );
    }
    // The cursor says whether it is inside a too-long line (after a quarantined piece), and that
    // is checked against the byte before it: never inferred from the file, which may have changed.
    const at = await locate(this.path, c as FileCursor, this.warn);
    this.moveTo(at, at);
  }

  currentCursor(): FileCursor {
    const { offset, line } = this.position;
    const file = this.file;
    if (!file) return this.midLine ? { offset, line, inLine: true } : { offset, line };
    // Sampled after every record: the digest is computed again only while the offset is within the first 1 KiB.
    const headBytes = Math.min(HEAD_BYTES, offset);
    if (this.digest.bytes !== headBytes) this.digest = { bytes: headBytes, hex: headDigest(this.head.subarray(0, headBytes)) };
    const cursor: FileCursor = { offset, line, dev: file.id.dev, ino: file.id.ino, head: this.digest.hex, headBytes };
    if (this.midLine) cursor.inLine = true;
    return cursor;
  }

  /**
   * The offset after the last complete line now, or the snapshot given by a run that already
   * captured one; in the file at the path, unless the run reads a rotated file whose successor
   * has no data yet. An unterminated last line is left for a later run, with a warning.
   */
  async endCursor(snapshot?: Cursor): Promise<FileCursor> {
    if (snapshot !== undefined && snapshot !== null) {
      const s = snapshot as FileCursor;
      this.end = { offset: s.offset, id: s.dev !== undefined && s.ino !== undefined ? { dev: s.dev, ino: s.ino } : undefined };
      return s;
    }
    const file = this.file ?? { path: this.path, id: await this.idAtPath(), kind: "live" };
    this.file ??= file;
    this.fileTag = `${file.id.dev}:${file.id.ino}`;
    let target: { path: string; id: FileId; from: number } = { path: file.path, id: file.id, from: this.position.offset };
    const now = file.kind === "live" ? undefined : await statFile(this.path);
    if (now && !sameFile(now.id, file.id) && (now.size > 0 || file.kind === "copy")) target = { path: this.path, id: now.id, from: 0 };
    const size = (await statFile(target.path))?.size ?? target.from;
    const end = await completeEnd(target.path, target.from, size, this.maxRecordBytes, this.chunkBytes);
    if (end < size) {
      this.warn(
        `${this.description}: the last ${size - end} bytes (from byte ${end}) are a line with no newline yet; ` +
          `this run stops before it. A later run reads it, whole, once its newline is appended.`,
      );
    }
    this.end = { offset: end, id: target.id };
    return { offset: end, line: -1, dev: target.id.dev, ino: target.id.ino };
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    const e = end as FileCursor | undefined;
    const c = cursor as FileCursor | undefined;
    const total = e?.offset;
    const at = c?.offset;
    if (typeof total !== "number" || typeof at !== "number") return undefined;
    // Offsets of two files (a rotated one being finished, the next) do not compare.
    if (e?.ino !== undefined && c?.ino !== undefined && (e.ino !== c.ino || e.dev !== c.dev)) return undefined;
    return total === 0 ? 1 : Math.min(1, at / total);
  }

  async lag(): Promise<SourceLag | undefined> {
    const file = this.file ?? { path: this.path, id: undefined, kind: "live" };
    const here = await statFile(file.path);
    let bytes = here && (file.id === undefined || sameFile(here.id, file.id)) ? Math.max(0, here.size - this.position.offset) : 0;
    if (file.kind !== "live") bytes += (await statFile(this.path))?.size ?? 0;
    return { bytes };
  }

  /** Bytes after the cursor: to a drain's end in the file being read (no syscall), else to the files' sizes (`lag`). */
  backlog(): SourceBacklog | Promise<SourceLag | undefined> {
    const end = this.end;
    const file = this.file;
    if (end && file && (end.id === undefined || sameFile(end.id, file.id))) return { bytes: Math.max(0, end.offset - this.position.offset) };
    return this.lag();
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
          // Every chunk ends with a newline, but the last line of a finished (rotated) file may not.
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

  /** Take the position `at` in `file` (undefined: the file at the path, named by the first read). */
  private moveTo(file: OpenFile | undefined, at: { offset: number; line: number; inLine: boolean; head: Buffer }): void {
    this.file = file && { path: file.path, id: file.id, kind: file.kind };
    this.fileTag = file && `${file.id.dev}:${file.id.ino}`;
    this.position = { offset: at.offset, line: at.line };
    this.midLine = at.inLine;
    this.splitAt = at.inLine ? at.offset : undefined;
    this.head = at.head;
    this.digest = { bytes: -1, hex: "" };
  }

  /**
   * Chunks of whole lines from the current position: to the end (or the snapshot), on through a
   * rotation, then, in continuous mode, as the file grows.
   */
  private async *chunks(options: ReadOptions): AsyncGenerator<Buffer | LongPiece> {
    let handle = await this.openFile();
    try {
      let wait = this.backoff.initial;
      while (!options.signal.aborted) {
        const from = this.position.offset;
        const end = this.end;
        const stopAt = end && (end.id === undefined || sameFile(end.id, this.file!.id)) ? end.offset : undefined;
        // Each chunk is parsed before the next is asked for, so `position` follows the reads.
        const read = yield* this.readChunks(handle, options.signal, stopAt, false);
        if (stopAt !== undefined && read === "eof" && this.position.offset >= stopAt) return;
        const next = read === "changed" ? read : await this.nextFile(handle);
        if (next === "changed") {
          handle = await this.relocate(handle);
          continue;
        }
        if (next) {
          // This file is finished: its last line counts without a newline. Then the next one, from its start.
          yield* this.readChunks(handle, options.signal, undefined, true);
          if (options.signal.aborted) return;
          handle = await this.switchTo(handle, next);
          wait = this.backoff.initial;
          continue;
        }
        if (options.mode === "available_now") return;
        // Continuous: wait for the file to grow, backing off while it does not.
        wait = this.position.offset > from ? this.backoff.initial : Math.min(wait * 2, this.backoff.max);
        await sleep(wait, options.signal);
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /**
   * At the end of the file read: whether its content changed under the reader (truncated or
   * rewritten in place: `relocate`), or the file to read next once this one is finished — the
   * run's end snapshot's file; else, when this one was rotated away (the path holds another
   * file), that file as soon as it has data (the writer has moved to it: until then the old file
   * may still grow), or at once after a copy (which nobody writes).
   */
  private async nextFile(handle: FileHandle): Promise<"changed" | { path: string; id: FileId } | undefined> {
    const file = this.file!;
    if (file.kind === "live" && ((await handle.stat()).size < this.position.offset || !(await this.headHolds(handle)))) return "changed";
    const end = this.end?.id;
    if (end) return sameFile(end, file.id) ? undefined : this.endFile(end);
    const now = await statFile(this.path);
    if (!now) return undefined;
    if (sameFile(now.id, file.id)) {
      file.kind = "live";
      return undefined;
    }
    if (file.kind === "live") file.kind = "renamed";
    return now.size > 0 || file.kind === "copy" ? { path: this.path, id: now.id } : undefined;
  }

  /** The file an end snapshot names: at the path, or rotated away beside it since the snapshot. */
  private async endFile(id: FileId): Promise<{ path: string; id: FileId }> {
    const now = await statFile(this.path);
    if (now && sameFile(now.id, id)) return { path: this.path, id };
    const found = await findBeside(this.path, { id, mark: { offset: 0, head: headDigest(Buffer.alloc(0)), headBytes: 0, inLine: false } }, []);
    if (found && !("mismatch" in found)) return found;
    throw new FileReplacedError(this.path, `this run's end snapshot is in the file with ${describeId(id)}, which is neither at that path nor beside it any more`);
  }

  /** The file changed under the reader (copytruncate, or rewritten): go on where a resumed run would (`locate`). */
  private async relocate(handle: FileHandle): Promise<FileHandle> {
    await handle.close();
    const at: Located = await locate(this.path, this.currentCursor(), this.warn);
    this.moveTo(at, at);
    return this.openFile();
  }

  private async switchTo(handle: FileHandle, next: { path: string; id: FileId }): Promise<FileHandle> {
    await handle.close();
    this.moveTo({ ...next, kind: next.path === this.path ? "live" : "renamed" }, { offset: 0, line: 0, inLine: false, head: Buffer.alloc(0) });
    return this.openFile();
  }

  /**
   * Open the file read (on the first read, the file at the path) by its name, checking that the
   * name still leads to it; renamed since, it is looked for beside the path by its identity.
   */
  private async openFile(): Promise<FileHandle> {
    const file = this.file;
    if (!file) {
      const handle = await open(this.path, "r");
      const id = fileIdOf(await handle.stat({ bigint: true }));
      this.file = { path: this.path, id, kind: "live" };
      this.fileTag = `${id.dev}:${id.ino}`;
      return handle;
    }
    const handle = await open(file.path, "r").catch(() => undefined);
    if (handle && sameFile(fileIdOf(await handle.stat({ bigint: true })), file.id)) return handle;
    await handle?.close();
    const mark = { offset: this.position.offset, head: this.currentCursor().head!, headBytes: Math.min(HEAD_BYTES, this.position.offset), inLine: this.midLine };
    const found = await findBeside(this.path, { id: file.id, mark }, []);
    if (!found || "mismatch" in found) {
      throw new FileReplacedError(this.path, `the file it was reading (${describeId(file.id)}) is neither at ${file.path} nor beside it any more`);
    }
    this.file = { path: found.path, id: found.id, kind: file.kind === "copy" ? "copy" : "renamed" };
    return open(found.path, "r");
  }

  private async idAtPath(): Promise<FileId> {
    return fileIdOf(await stat(this.path, { bigint: true }));
  }

  /** Whether the file still begins with the bytes read of it (not truncated and written again). */
  private async headHolds(handle: FileHandle): Promise<boolean> {
    return this.head.length === 0 || (await readAt(handle, 0, this.head.length)).equals(this.head);
  }

  /** Keep the first HEAD_BYTES bytes of the file as they are read (`n` bytes of `buf`, read at `at`). */
  private learnHead(buf: Buffer, at: number, n: number): void {
    const known = this.head.length;
    if (known >= HEAD_BYTES || at > known || at + n <= known) return;
    this.head = Buffer.concat([this.head, buf.subarray(known - at, Math.min(HEAD_BYTES, at + n) - at)]);
  }

  /**
   * Whole lines from the current position to the end (or `limit`), one read at a time, tracking
   * byte offsets exactly. A line without its newline yet is left for a later read — unless the
   * file is `final` (finished: rotated away), where it is the last line. The pieces of a line
   * longer than `maxRecordBytes` go as they fill, so `carry` stays within it. "changed": the
   * file no longer begins as it did (truncated and rewritten), and what was just read is dropped.
   */
  private async *readChunks(handle: FileHandle, signal: AbortSignal, limit: number | undefined, final: boolean): AsyncGenerator<Buffer | LongPiece, "eof" | "changed"> {
    const max = this.maxRecordBytes;
    const live = this.file!.kind === "live";
    let carry: Buffer = Buffer.alloc(0);
    let long = this.midLine;
    let readAt = this.position.offset;
    const buf = Buffer.allocUnsafe(this.chunkBytes);
    while (!signal.aborted) {
      const want = limit === undefined ? buf.length : Math.min(buf.length, limit - readAt);
      if (want <= 0) break;
      const { bytesRead } = await handle.read(buf, 0, want, readAt);
      if (bytesRead === 0) break;
      // Checked after the read: bytes read once the file was truncated and written again are never used.
      if (live && !(await this.headHolds(handle))) return "changed";
      this.learnHead(buf, readAt, bytesRead);
      readAt += bytesRead;
      // A copy: `buf` is reused by the next read while the lines of this one are still parsed.
      const data = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : Buffer.from(buf.subarray(0, bytesRead));
      const last = data.lastIndexOf(NEWLINE);
      let start = 0;
      if (last !== -1 && long) {
        const nl = data.indexOf(NEWLINE);
        yield* pieces(data.subarray(0, nl), max, true);
        long = false;
        start = nl + 1;
      }
      // Only a stretch longer than maxRecordBytes can hold a line that is too long.
      if (last + 1 - start > max) yield* splitLong(data, start, last, max);
      else if (last + 1 > start) yield data.subarray(start, last + 1);
      carry = data.subarray(last + 1);
      if (carry.length > max) {
        carry = yield* pieces(carry, max, false);
        long = true;
      }
    }
    if (final && carry.length > 0 && !signal.aborted) {
      if (long) yield* pieces(carry, max, true, false);
      else yield carry;
    }
    return "eof";
  }

  private pieceRecord(piece: LongPiece): SourceRecord | undefined {
    const from = this.position.offset;
    const line = this.position.line + 1;
    const position = { line, offset: from, file: this.fileTag };
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
    const position = { line: this.position.line + 1, offset: this.position.offset, file: this.fileTag };
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
