import { open } from "node:fs/promises";
import { dirname } from "node:path";
import { CursorBeyondEndError } from "../core/errors.js";
import { FileReplacedError } from "./errors.js";
import { describeId, fileIdOf, findBeside, headDigest, headIfHolds, readAt, rotatedSince, HEAD_BYTES, sameFile, statFile, type ContentMark, type FileId, type Found } from "./identity.js";

/**
 * Where a file source stands: the byte offset after the last line read, that line's number, and
 * which file that is — its device and inode, and a digest of its first bytes (see `HEAD_BYTES`) —
 * so that a run resuming after the file was rotated or replaced notices it. A cursor without the
 * identity (made before anything was read) means the file at the path.
 */
export interface FileCursor {
  offset: number;
  line: number;
  dev?: string;
  ino?: string;
  /** sha256 (hex) of the file's first `headBytes` bytes: min(1 KiB, offset). */
  head?: string;
  headBytes?: number;
  /** The offset is inside a line longer than maxRecordBytes, after a piece of it was quarantined. */
  inLine?: boolean;
}

/**
 * What the file being read is to the source's path: the file there (`live`); a file rotated away
 * from it by a rename, read to its end once the path holds a new file with data (`renamed`); or a
 * copy of it (`copytruncate`), read to its end and then the path from its beginning (`copy`).
 */
export type FileKind = "live" | "renamed" | "copy";

export interface OpenFile {
  path: string;
  id: FileId;
  kind: FileKind;
}

/** Where reading goes on: the file, the position in it, and its first bytes (min(1 KiB, offset)). */
export interface Located extends OpenFile {
  offset: number;
  line: number;
  inLine: boolean;
  head: Buffer;
}

export function markOf(c: FileCursor): ContentMark | undefined {
  if (c.head === undefined) return undefined;
  return { offset: c.offset, head: c.head, headBytes: c.headBytes ?? Math.min(HEAD_BYTES, c.offset), inLine: c.inLine === true };
}

/**
 * Find the file a cursor points into and check that it still holds what the cursor describes.
 * - the file at `path` is the cursor's and unchanged: read on;
 * - the cursor's file was renamed (same device and inode, in the same directory): read it on,
 *   then the file at `path` from its beginning;
 * - the file at `path` is the cursor's but its content changed (copytruncate): read on in a copy
 *   of the old content beside it (same first bytes, long enough) if there is one, then `path` from
 *   its beginning; with no copy, a file now shorter than the offset with other first bytes was
 *   truncated and is read from its beginning, with a warning;
 * - anything else (another file at `path` and the old one gone, content changed in place with no
 *   copy): FileReplacedError.
 */
export async function locate(path: string, c: FileCursor, warn: (message: string) => void): Promise<Located> {
  const mark = markOf(c);
  const at = { offset: c.offset, line: c.line, inLine: c.inLine === true };
  if (c.dev === undefined || c.ino === undefined || mark === undefined) return locateUnidentified(path, at);
  const id: FileId = { dev: c.dev, ino: c.ino };
  const now = await statFile(path);
  const where = `the checkpoint is at byte ${c.offset} (line ${c.line}) of the file with ${describeId(id)}`;
  if (now && sameFile(now.id, id)) {
    const head = await headAt(path, id, mark);
    if (head) return { path, id, kind: "live", ...at, head };
    const copy = await findBeside(path, { mark }, [id]);
    if (copy && !("mismatch" in copy)) return rotated(path, { ...copy, kind: "copy", ...at }, [id], warn);
    if (now.size < c.offset && !(await headAt(path, id, mark, true))) {
      warn(
        `file ${path}: the file was truncated (it holds ${now.size} bytes; the checkpoint was at byte ${c.offset}) and no ` +
          `copy of its old content is in ${dirname(path)}: reading it from its beginning. Lines written after the last ` +
          `commit and before the truncation, if there were any, could not be read (logrotate's delaycompress keeps ` +
          `a copytruncate copy readable until the next rotation).`,
      );
      return { path, id, kind: "live", offset: 0, line: 0, inLine: false, head: Buffer.alloc(0) };
    }
    throw new FileReplacedError(
      path,
      `${where}, which is still the file at that path, but ` +
        (now.size < c.offset
          ? `it was cut short to ${now.size} bytes (its first bytes unchanged)`
          : `its content changed: its first ${mark.headBytes} bytes or the line's end before byte ${c.offset} are not the ones recorded`) +
        `, and no copy of the old content is in ${dirname(path)}`,
    );
  }
  const others = now ? [now.id] : [];
  const renamed = await findBeside(path, { id, mark }, others);
  if (renamed && !("mismatch" in renamed)) return rotated(path, { ...renamed, kind: "renamed", ...at }, others, warn);
  if (renamed) {
    throw new FileReplacedError(path, `${where}, now ${renamed.mismatch}, which no longer holds the content the checkpoint recorded`);
  }
  const copy = await findBeside(path, { mark }, others);
  if (copy && !("mismatch" in copy)) return rotated(path, { ...copy, kind: "copy", ...at }, others, warn);
  throw new FileReplacedError(
    path,
    `${where}; ${now ? `the file at that path now is another one (${describeId(now.id)})` : "nothing is at that path now"}, and no ` +
      `file in ${dirname(path)} is that file or a copy of it (the same first bytes): it was replaced, or rotated away and removed`,
  );
}

/**
 * The rotated file found, after a warning when files rotated after it lie beside it: the file
 * rotated more than once since the checkpoint, and the run goes on from this one to the file at
 * the path, so their lines are not read.
 */
async function rotated(path: string, found: Located & Found, skip: FileId[], warn: (message: string) => void): Promise<Located> {
  const later = await rotatedSince(path, found.mtimeMs, [found.id, ...skip]);
  if (later.length > 0) {
    warn(
      `file ${path}: the checkpoint is in ${found.path}, and ${later.join(", ")} beside it ${later.length === 1 ? "was" : "were"} ` +
        `written after it: the file rotated more than once since the last commit. This run reads ${found.path} on, then ` +
        `${path}; the lines of ${later.join(", ")} are not read (run the stream more often than the file rotates).`,
    );
  }
  const { mtimeMs: _mtime, ...located } = found;
  return located;
}

/** A cursor without the file's identity: the file at `path`, checked by its size and the line's end before the offset. */
async function locateUnidentified(path: string, at: { offset: number; line: number; inLine: boolean }): Promise<Located> {
  const handle = await open(path, "r");
  try {
    const st = await handle.stat({ bigint: true });
    const size = Number(st.size);
    if (at.offset > size) {
      throw new CursorBeyondEndError(
        `file ${path}: the checkpoint is at byte ${at.offset} but the file has only ${size} bytes. ` +
          `It was truncated or replaced; resuming could skip or repeat data. Start over with a new checkpointKey.`,
      );
    }
    const head = await readAt(handle, 0, Math.min(HEAD_BYTES, at.offset));
    const mark: ContentMark = { offset: at.offset, head: headDigest(head), headBytes: head.length, inLine: at.inLine };
    if (!(await headIfHolds(handle, mark))) {
      throw new FileReplacedError(
        path,
        `the checkpoint is at byte ${at.offset} (line ${at.line}), ${at.inLine ? "inside a too-long line" : "after a line's end"}, ` +
          `but in the file there now that byte is ${at.inLine ? "after a line's end" : "inside a line"}: the file was replaced`,
      );
    }
    return { path, id: fileIdOf(st), kind: "live", ...at, head };
  } finally {
    await handle.close();
  }
}

/**
 * The first bytes of the file at `path` when it is file `id` and holds `mark`, else undefined.
 * `headOnly`: compare only the first `mark.headBytes` bytes against the digest (no size or line-end check).
 */
async function headAt(path: string, id: FileId, mark: ContentMark, headOnly = false): Promise<Buffer | undefined> {
  const handle = await open(path, "r").catch(() => undefined);
  if (!handle) return undefined;
  try {
    if (!sameFile(fileIdOf(await handle.stat({ bigint: true })), id)) return undefined;
    if (!headOnly) return await headIfHolds(handle, mark);
    const head = await readAt(handle, 0, mark.headBytes);
    return head.length === mark.headBytes && headDigest(head) === mark.head ? head : undefined;
  } finally {
    await handle.close();
  }
}
