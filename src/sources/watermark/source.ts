import type { Cursor } from "../../checkpoint/types.js";
import type { CursorSource, ReadOptions, SourceBacklog, SourceRecord } from "../core/types.js";
import { sleep } from "../../util/wait.js";
import { SourceBusyError } from "../core/errors.js";
import { KeysetChecks, type TieGroup } from "./checks.js";
import {
  resolveOptions,
  type FetchChunk,
  type FetchChunkByPosition,
  type FetchMaxByPosition,
  type WatermarkPositionOptions,
  type WatermarkValueOptions,
} from "./options.js";
import { aborted, abortable, copy, samePosition, sameValue, show, valueKey, type WatermarkPosition } from "./positions.js";

export type { WatermarkPosition, WatermarkValue } from "./positions.js";
export { WatermarkOrderError } from "./checks.js";
export type {
  FetchChunk,
  FetchChunkByPosition,
  FetchMax,
  FetchMaxByPosition,
  WatermarkChunkSourceOptions,
  WatermarkPositionOptions,
  WatermarkValueOptions,
} from "./options.js";

/** A fetched chunk: rows `start` to `end` (exclusive) are to be yielded. */
interface Chunk {
  rows: ReadonlyArray<Record<string, unknown>>;
  positions: WatermarkPosition[];
  start: number;
  end: number;
  /** More rows may follow at once (the chunk was full). */
  full: boolean;
}

/** Most rows one watermark value may have when paging on the watermark alone with ties allowed. */
const MAX_TIE_GROUP = 100_000;
/** How many tie-breakers of the current watermark group are kept to spot repeated rows. */
const GROUP_MEMORY = 100_000;

/**
 * A keyset-paged table (or any ordered store) as a cursor source: reads `chunkSize` rows at a
 * time after a cursor, one chunk in memory at a time. In the Python form
 * (`new WatermarkChunkSource(fetchChunk, { watermarkField: "id", chunkSize: 1000 })`)
 * `fetchChunk(after, limit)` gets the last watermark as a plain value; with a `tieBreakerField`
 * it gets the composite position `{ watermark, tieBreaker }`, so rows sharing a watermark are
 * never lost at a chunk boundary. `available_now` stops at the `fetchMax()` snapshot taken by
 * `endCursor()`; `continuous` keeps polling, backing off exponentially while there is nothing new.
 * A chunk that cannot be right stops the read with a WatermarkOrderError, never ends it.
 */
export class WatermarkChunkSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** Keyset paging from a (watermark, tie-breaker) cursor reads the same rows again. */
  readonly replays = true;
  /** Present only when `fetchMax` was given. */
  readonly endCursor?: (snapshot?: Cursor) => Promise<Cursor | undefined>;

  /** The caller's fetchChunk, in the position form (a Python-form one is wrapped). */
  private readonly fetchChunk: FetchChunkByPosition;
  private readonly checks: KeysetChecks;
  /** Watermark-only paging that allows ties: only whole tie groups are yielded. */
  private readonly groups: boolean;
  private readonly chunkSize: number;
  private readonly backoff: { initial: number; max: number };
  /** Position of the last record yielded (what `currentCursor()` reports). */
  private cursor: WatermarkPosition | undefined;
  /** Position yielded just before `cursor` in this run: lets the next chunk overlap by one row. */
  private previous: WatermarkPosition | undefined;
  /**
   * The first row fetched but not handed out yet (the rest of a chunk, a tie group held back for
   * the next chunk). The next chunk must bring it back: an empty one then means the query does
   * not select the rows after `after`, and ending there would lose them.
   */
  private ahead: WatermarkPosition | undefined;
  /**
   * Tie-breakers already yielded at the cursor's watermark (capped). A chunk that brings one of
   * them back means the query does not really resume after the cursor — typically a timestamp
   * whose microseconds a JS Date dropped — and reading on would repeat rows forever.
   */
  private group: TieGroup | undefined;
  /** `null` = snapshot taken and the table was empty; `undefined` = no snapshot. */
  private end: WatermarkPosition | null | undefined;
  private reading = false;
  /** The page being handed out: its rows not handed out yet, and whether it came back full. */
  private page: { left: number; full: boolean } | undefined;

  /** The Python form: `fetchChunk(after, limit)`, `after` the last watermark value (undefined at first). */
  constructor(fetchChunk: FetchChunk, options: WatermarkValueOptions);
  /** The position form (`tieBreakerField`, or `fetchAfter: "position"`): `after` is `{ watermark, tieBreaker }`. */
  constructor(fetchChunk: FetchChunkByPosition, options: WatermarkPositionOptions);
  constructor(fetchChunk: FetchChunk | FetchChunkByPosition, options: WatermarkValueOptions | WatermarkPositionOptions) {
    const o = resolveOptions(fetchChunk, options);
    this.fetchChunk = o.fetchChunk;
    this.checks = new KeysetChecks(o.description, o.watermarkField, o.tieBreakerField, o.byValue);
    this.groups = o.groups;
    this.chunkSize = o.chunkSize;
    this.backoff = o.backoff;
    this.description = o.description;
    const fetchMax: FetchMaxByPosition | undefined = o.fetchMax;
    if (fetchMax) {
      this.endCursor = async (snapshot?: Cursor) => {
        // A snapshot captured by an earlier fetch (another worker) is adopted as it is.
        const max = snapshot === undefined ? await fetchMax() : (snapshot as WatermarkPosition | null);
        this.end = max === undefined || max === null ? null : this.checks.checkCursor(max, "fetchMax() result");
        return this.end === null ? undefined : copy(this.end);
      };
    }
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    this.cursor = cursor === undefined || cursor === null ? undefined : this.checks.checkCursor(cursor, "cursor");
    this.previous = undefined;
    this.ahead = undefined;
    this.group =
      this.cursor === undefined
        ? undefined
        : { watermark: this.cursor.watermark, keys: new Set([valueKey(this.cursor.tieBreaker)]) };
  }

  currentCursor(): Cursor | undefined {
    return this.cursor === undefined ? undefined : copy(this.cursor);
  }

  read(options: ReadOptions): AsyncIterable<SourceRecord> {
    return this.iterate(options);
  }

  /** The rows of the page not handed out yet; a page that came back full says more follows (a backfill). */
  backlog(): SourceBacklog | undefined {
    const page = this.page;
    return page && (page.full ? { records: page.left, pageFull: true } : { records: page.left });
  }

  private async *iterate({ mode, signal }: ReadOptions): AsyncGenerator<SourceRecord> {
    if (this.reading) throw new SourceBusyError(`${this.description}: read() is already running; one reader at a time`);
    this.reading = true;
    try {
      const until = this.end;
      if (until === null) return; // the snapshot found an empty table: nothing to drain
      let idleMs = this.backoff.initial;
      while (!signal.aborted) {
        const chunk = await this.nextChunk(until, signal);
        if (chunk === aborted) return;
        const { rows, positions, start, end, full } = chunk;
        this.ahead = positions[start];
        const page = (this.page = { left: end - start, full });
        for (let i = start; i < end; i++) {
          const position = positions[i]!;
          // With ties allowed the cursor moves only at the last row of a tie group, so a
          // checkpoint taken inside a group resumes at its start (read again, merged), never after it.
          const moves = !this.groups || i === end - 1 || !sameValue(positions[i + 1]!.watermark, position.watermark);
          if (moves) {
            this.previous = this.groups ? undefined : this.cursor;
            this.cursor = position;
            if (!this.groups) this.remember(position);
          }
          // Stopping at the snapshot row itself also holds I7 for a fetchChunk that ignores `until`.
          const last = moves && until !== undefined && samePosition(position, until);
          this.ahead = last ? undefined : positions[i + 1];
          page.left = end - i - 1;
          yield { value: rows[i], position: copy(position) };
          if (signal.aborted || last) return;
        }
        // A short chunk means nothing more is there right now; with a snapshot it is the end of the drain.
        if (!full && (until !== undefined || mode === "available_now")) return;
        if (end > start) {
          idleMs = this.backoff.initial;
        } else {
          if (!(await sleep(idleMs, signal))) return;
          idleMs = Math.min(idleMs * 2, this.backoff.max);
        }
      }
    } finally {
      this.reading = false;
      this.page = undefined;
    }
  }

  /** One `fetchChunk` call, checked: an array of at most `limit` rows in order after `after`. */
  private async fetch(
    after: WatermarkPosition | undefined,
    limit: number,
    until: WatermarkPosition | undefined,
    signal: AbortSignal,
    ties = false,
  ): Promise<{ rows: ReadonlyArray<Record<string, unknown>>; positions: WatermarkPosition[] } | typeof aborted> {
    const rows: unknown = await abortable(this.fetchChunk(after, limit, until, signal), signal);
    if (rows === aborted) return aborted;
    this.checks.checkChunk(rows, after, limit);
    const positions = rows.map((row, i) => this.checks.positionOf(row, i));
    this.checks.checkOrder(after, positions, ties);
    return { rows, positions };
  }

  /**
   * Fetch the rows after the cursor. Once two rows were yielded in this run, the chunk is asked
   * from the one before the last and must start with the last one again: a second row at that
   * position (a duplicate key, which keyset paging would skip) then shows up and is refused.
   * `start` is the index of the first row not yet yielded.
   */
  private async nextChunk(until: WatermarkPosition | undefined, signal: AbortSignal): Promise<Chunk | typeof aborted> {
    if (this.groups) return this.nextGroups(until, signal);
    const last = this.cursor;
    if (last !== undefined && this.previous !== undefined) return this.overlapping(this.previous, last, until, signal);
    const page = await this.fetch(last, this.chunkSize, until, signal);
    if (page === aborted) return aborted;
    this.checkHeld(page.positions, last, this.chunkSize);
    this.checks.checkRepeats(this.group, page.positions, 0);
    return { ...page, start: 0, end: page.rows.length, full: page.rows.length >= this.chunkSize };
  }

  /**
   * The chunk after `previous`, which must start with `last` again. When it starts with another
   * row, `last` is gone (deleted, or moved on by an update) or a row appeared between the two:
   * the chunk asked after `last` itself tells which — it starts with the same row only in the
   * first case. (JS cannot order every value type, so this is asked rather than compared.)
   */
  private async overlapping(
    previous: WatermarkPosition,
    last: WatermarkPosition,
    until: WatermarkPosition | undefined,
    signal: AbortSignal,
  ): Promise<Chunk | typeof aborted> {
    const limit = this.chunkSize + 1;
    const page = await this.fetch(previous, limit, until, signal);
    if (page === aborted) return aborted;
    const first = page.positions[0];
    if (first === undefined) throw this.checks.overlapMissing(previous, limit, last, first);
    if (samePosition(first, last)) {
      this.checks.checkRepeats(this.group, page.positions, 1);
      return { ...page, start: 1, end: page.rows.length, full: page.rows.length >= limit };
    }
    const again = await this.fetch(last, this.chunkSize, until, signal);
    if (again === aborted) return aborted;
    const next = again.positions[0];
    if (next === undefined || !samePosition(next, first)) throw this.checks.behindCursor(previous, last, first, next);
    this.checks.checkRepeats(this.group, again.positions, 0);
    return { ...again, start: 0, end: again.rows.length, full: again.rows.length >= this.chunkSize };
  }

  /**
   * Watermark-only paging with ties allowed: a full chunk may have cut the rows of its last
   * watermark value in two, so that group is left for the next chunk, which starts after the
   * previous value and reads it whole. A chunk that is one group only is fetched again with a
   * doubled limit until the group ends inside it (up to MAX_TIE_GROUP rows).
   */
  private async nextGroups(until: WatermarkPosition | undefined, signal: AbortSignal): Promise<Chunk | typeof aborted> {
    const last = this.cursor;
    const most = Math.max(MAX_TIE_GROUP, this.chunkSize);
    for (let limit = this.chunkSize; ; limit = Math.min(limit * 2, most)) {
      const page = await this.fetch(last, limit, until, signal, true);
      if (page === aborted) return aborted;
      const { rows, positions } = page;
      this.checkHeld(positions, last, limit);
      if (rows.length < limit) return { rows, positions, start: 0, end: rows.length, full: false };
      const tail = positions.at(-1)!.watermark;
      let end = positions.length - 1;
      while (end > 0 && sameValue(positions[end - 1]!.watermark, tail)) end--;
      if (end > 0) return { rows, positions, start: 0, end, full: true };
      if (limit >= most) {
        throw this.checks.error(
          `more than ${most} rows share ${show({ watermark: tail })} in "${this.checks.field}"; paging on the ` +
            `watermark alone cannot split them. Set tieBreakerField to a column that makes ` +
            `(${this.checks.field}, tieBreaker) unique, usually the primary key`,
        );
      }
    }
  }

  /** Rows fetched before and not handed out yet are after the cursor: an empty chunk cannot be right. */
  private checkHeld(positions: WatermarkPosition[], after: WatermarkPosition | undefined, limit: number): void {
    if (positions.length === 0 && this.ahead !== undefined) throw this.checks.heldRowsMissing(after, limit, this.ahead);
  }

  private remember(p: WatermarkPosition): void {
    if (this.group === undefined || !sameValue(p.watermark, this.group.watermark)) {
      this.group = { watermark: p.watermark, keys: new Set() };
    }
    // Bounded memory: a huge tie group is only checked for its first GROUP_MEMORY rows.
    if (this.group.keys.size < GROUP_MEMORY) this.group.keys.add(valueKey(p.tieBreaker));
  }
}
