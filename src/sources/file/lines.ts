import { open } from "node:fs/promises";

export const NEWLINE = 0x0a;

/** Part of a line longer than `maxRecordBytes`: quarantined as raw bytes, never parsed. */
export class LongPiece {
  constructor(
    readonly bytes: Buffer,
    /** Bytes of the file it covers: its own, plus the newline when it ends the line. */
    readonly consumed: number,
    readonly endsLine: boolean,
  ) {}
}

/**
 * `line` (without its newline) in pieces of `max`. Ended: the last piece, however short, ends the
 * line (`newline`: and covers its newline, absent at the end of a finished file). Not ended: full
 * pieces only, and the rest is returned to wait for more.
 */
export function* pieces(line: Buffer, max: number, ended: boolean, newline = true): Generator<LongPiece, Buffer, undefined> {
  let at = 0;
  for (; line.length - at > max; at += max) yield new LongPiece(line.subarray(at, at + max), max, false);
  if (!ended) return line.subarray(at);
  yield new LongPiece(line.subarray(at), line.length - at + (newline ? 1 : 0), true);
  return Buffer.alloc(0);
}

/** The lines of `data[start..last]` (`last` a newline): runs of normal lines as chunks, each line longer than `max` in pieces. */
export function* splitLong(data: Buffer, start: number, last: number, max: number): Generator<Buffer | LongPiece, void, undefined> {
  let group = start;
  for (let at = start; at <= last; ) {
    const nl = data.indexOf(NEWLINE, at);
    if (nl - at > max) {
      if (at > group) yield data.subarray(group, at);
      yield* pieces(data.subarray(at, nl), max, true);
      group = nl + 1;
    }
    at = nl + 1;
  }
  if (last + 1 > group) yield data.subarray(group, last + 1);
}

/**
 * The offset after the last newline of `path` before `size` (not before `from`). When the
 * unterminated tail is already longer than `max`, `size`: its pieces are quarantined. Only the
 * last `max + 1` bytes are looked at, `chunkBytes` at a time.
 */
export async function completeEnd(path: string, from: number, size: number, max: number, chunkBytes: number): Promise<number> {
  if (size <= from) return from;
  const floor = Math.max(from, size - max - 1);
  const handle = await open(path, "r");
  try {
    const buf = Buffer.allocUnsafe(Math.min(chunkBytes, size - floor));
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
  return size - from > max ? size : from;
}
