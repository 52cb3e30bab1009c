import { createHash } from "node:crypto";
import { open, readdir, stat, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * How much of a file's beginning its cursor vouches for: the first 1 KiB, or all of it up to the
 * cursor's offset when that is less. 1 KiB holds a few log lines (their timestamps make two
 * files' heads differ) and costs one small read to check; the cursor's offset itself is checked
 * as well, by the byte before it (a line's end, or not).
 */
export const HEAD_BYTES = 1024;

const NEWLINE = 0x0a;

/** Which file, whatever its name now: device and inode, as decimal text (an inode may pass 2^53). */
export interface FileId {
  dev: string;
  ino: string;
}

/** What a cursor says about the file's bytes before its offset. */
export interface ContentMark {
  offset: number;
  /** sha256 (hex) of the first `headBytes` bytes. */
  head: string;
  headBytes: number;
  /** The offset is inside a line (after a quarantined piece of a too-long one), not after a newline. */
  inLine: boolean;
}

export function fileIdOf(st: { dev: bigint; ino: bigint }): FileId {
  return { dev: String(st.dev), ino: String(st.ino) };
}

export function sameFile(a: FileId | undefined, b: FileId | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

export function describeId(id: FileId): string {
  return `device ${id.dev} inode ${id.ino}`;
}

export function headDigest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The file at `path` now (size and identity), or undefined when nothing is there. */
export async function statFile(path: string): Promise<{ id: FileId; size: number; mtimeMs: number } | undefined> {
  try {
    const st = await stat(path, { bigint: true });
    if (!st.isFile()) return undefined;
    return { id: fileIdOf(st), size: Number(st.size), mtimeMs: Number(st.mtimeMs) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Up to `n` bytes from `at` (fewer at the end of the file). */
export async function readAt(handle: FileHandle, at: number, n: number): Promise<Buffer> {
  const buf = Buffer.alloc(n);
  let got = 0;
  while (got < n) {
    const { bytesRead } = await handle.read(buf, got, n - got, at + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/**
 * The first bytes of the file open as `handle` when it holds what `mark` describes — at least
 * `offset` bytes, the same first bytes, and a line's end right before `offset` unless the mark
 * is inside a line — else undefined. The bytes returned are the file's first min(1 KiB, offset).
 * `finished`: the file was rotated away, and a cursor at its very end may follow a last line
 * that had no newline (a finished file's last line counts without one).
 */
export async function headIfHolds(handle: FileHandle, mark: ContentMark, finished = false): Promise<Buffer | undefined> {
  const { size } = await handle.stat();
  if (size < mark.offset) return undefined;
  const head = await readAt(handle, 0, Math.min(HEAD_BYTES, mark.offset));
  if (head.length !== mark.headBytes || headDigest(head) !== mark.head) return undefined;
  if (mark.offset === 0) return head;
  const before = (await readAt(handle, mark.offset - 1, 1))[0];
  if (finished && !mark.inLine && size === mark.offset) return head;
  return (before === NEWLINE) === !mark.inLine ? head : undefined;
}

/** A file found where rotation puts it. */
export interface Found {
  path: string;
  id: FileId;
  mtimeMs: number;
  /** Its first bytes, up to min(1 KiB, the mark's offset), checked against the mark. */
  head: Buffer;
}

/**
 * The file beside `path` (in its directory) that rotation moved the cursor's file to: the one with
 * identity `id` (renamed: `mv app.log app.log.1`), or, without `id`, one whose content the mark
 * describes (a copy: logrotate's `copytruncate`). Names that begin with the file's name are tried
 * first (a file beside the path counts as finished: see `headIfHolds`). Files in `skip` are not candidates. Undefined when none fits; a file with identity `id`
 * whose content no longer fits the mark is `{ mismatch }` (its path).
 */
export async function findBeside(
  path: string,
  want: { id?: FileId; mark: ContentMark },
  skip: FileId[],
): Promise<Found | { mismatch: string } | undefined> {
  const dir = dirname(path);
  const base = basename(path);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return undefined;
  }
  names = names.filter((n) => n !== base).sort((a, b) => Number(b.startsWith(base)) - Number(a.startsWith(base)) || a.localeCompare(b));
  for (const name of names) {
    const candidate = join(dir, name);
    const st = await statFile(candidate).catch(() => undefined);
    if (!st || skip.some((s) => sameFile(s, st.id))) continue;
    if (want.id ? !sameFile(want.id, st.id) : st.size < want.mark.offset) continue;
    const handle = await open(candidate, "r").catch(() => undefined);
    if (!handle) continue;
    try {
      const opened = fileIdOf(await handle.stat({ bigint: true }));
      const head = sameFile(opened, st.id) ? await headIfHolds(handle, want.mark, true) : undefined;
      if (head) return { path: candidate, id: opened, mtimeMs: st.mtimeMs, head };
      if (want.id && sameFile(opened, want.id)) return { mismatch: candidate };
    } finally {
      await handle.close();
    }
  }
  return undefined;
}

/**
 * Files beside `path` whose names begin with its name, written after `mtimeMs`, other than the
 * ones in `skip`: after a rotation found by `findBeside`, files rotated later than it, whose
 * lines a run that goes on from it to the file at the path does not read.
 */
export async function rotatedSince(path: string, mtimeMs: number, skip: FileId[]): Promise<string[]> {
  const base = basename(path);
  const names = (await readdir(dirname(path)).catch(() => [] as string[])).filter((n) => n !== base && n.startsWith(base)).sort();
  const later: string[] = [];
  for (const name of names) {
    const st = await statFile(join(dirname(path), name)).catch(() => undefined);
    if (st && st.size > 0 && st.mtimeMs > mtimeMs && !skip.some((s) => sameFile(s, st.id))) later.push(name);
  }
  return later;
}
