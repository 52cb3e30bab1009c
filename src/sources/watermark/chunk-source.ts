import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError, NonRetriableError } from "../../errors.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { sleep } from "../../util/wait.js";
import type { WatermarkPosition, WatermarkValue } from "./positions.js";

export type { WatermarkPosition, WatermarkValue } from "./positions.js";
import { SourceBusyError } from "../core/errors.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";
import {
  aborted,
  abortable,
  comparePositions,
  copy,
  describeType,
  isWatermarkValue,
  samePosition,
  sameValue,
  show,
  valueKey,
} from "./positions.js";

/** A watermark or tie-breaker value. PostgreSQL's `pg` returns bigint as string, timestamps as Date. */


/**
 * Fetch the next chunk in keyset order. Must return rows
 *
 * - strictly after `after` in (watermark, tieBreaker) order — all rows when `after` is undefined,
 * - and, when `until` is given, at or before `until`,
 * - ordered by (watermark, tieBreaker) ascending, at most `limit` of them,
 * - never rows whose watermark (or tie-breaker) is NULL.
 *
 * Without a tie-breaker, compare the watermark alone (`wm > $1`, `wm <= $2`; the value is
 * `after.watermark`). The source may pass an `after` it has already passed (it re-reads one row
 * per chunk to check that positions are unique, and re-reads a tie group a chunk cut in two), so
 * the query must depend on its arguments only. A function of `(after, limit)` alone fits. `signal` aborts with the read;
 * passing it on to the driver is optional.
 *
 * @example PostgreSQL with `pg` (see also `postgresChunkFetcher`, which builds this for you):
 * ```ts
 * const fetchChunk: FetchChunk = async (after, limit, until) => {
 *   const where = ["updated_at IS NOT NULL"], values: unknown[] = [];
 *   if (after) { values.push(after.watermark, after.tieBreaker); where.push(`(updated_at, id) > ($${values.length - 1}, $${values.length})`); }
 *   if (until) { values.push(until.watermark, until.tieBreaker); where.push(`(updated_at, id) <= ($${values.length - 1}, $${values.length})`); }
 *   values.push(limit);
 *   const { rows } = await client.query(
 *     `SELECT * FROM orders WHERE ${where.join(" AND ")} ORDER BY updated_at, id LIMIT $${values.length}`, values);
 *   return rows;
 * };
 * ```
 */
export type FetchChunk = (
  after: WatermarkPosition | undefined,
  limit: number,
  until: WatermarkPosition | undefined,
  signal: AbortSignal,
) => Promise<ReadonlyArray<Record<string, unknown>>>;

/**
 * The greatest (watermark, tieBreaker) position now in the table, or undefined when it is
 * empty — e.g. `SELECT updated_at, id FROM orders ORDER BY updated_at DESC, id DESC LIMIT 1`.
 */
export type FetchMax = () => Promise<WatermarkPosition | undefined>;

export interface WatermarkChunkSourceOptions {
  /** Row field holding the watermark (e.g. `updated_at`). */
  watermarkField: string;
  /**
   * Row field that makes (watermark, tieBreaker) unique, usually the primary key. Pages on the
   * pair, so any number of rows may share a watermark value.
   */
  tieBreakerField?: string;
  /**
   * Declare that no two rows share a watermark value (e.g. an identity column): pages on the
   * watermark alone and refuses (WatermarkOrderError) a tie it sees. Without this option and
   * without `tieBreakerField`, ties are allowed: a tie group that a chunk cuts in two is read
   * again from its start in the next chunk (fetching more rows when one group fills a chunk, up
   * to 100,000), and the cursor only moves past a watermark once all its rows were read.
   */
  uniqueWatermark?: boolean;
  /** Rows per `fetchChunk` call. Default 1000. */
  chunkSize?: number;
  /** Enables `endCursor()` for `available_now` (I7): the drain stops at this position. */
  fetchMax?: FetchMax;
  /** Continuous mode: pause after an empty chunk, doubling from `initial` to `max`. Default 200 / 5000 ms. */
  idleBackoffMs?: { initial: number; max: number };
  description?: string;
}

/** The option names, for the refusal of unknown ones (the compiler keeps the list complete). */
const WATERMARK_OPTIONS = optionNames<WatermarkChunkSourceOptions>()([
  "watermarkField",
  "tieBreakerField",
  "uniqueWatermark",
  "chunkSize",
  "fetchMax",
  "idleBackoffMs",
  "description",
]);

/** The rows coming back from `fetchChunk` break the keyset contract; reading on would lose or repeat rows. */
export class WatermarkOrderError extends NonRetriableError {
  readonly source: string;
  constructor(source: string, message: string) {
    super("WATERMARK_ORDER", `${source}: ${message}`);
    this.source = source;
  }
}


/** A fetched chunk: rows `start` to `end` (exclusive) are to be yielded. */
interface Chunk {
  rows: ReadonlyArray<Record<string, unknown>>;
  positions: WatermarkPosition[];
  start: number;
  end: number;
  /** More rows may follow at once (the chunk was full). */
  full: boolean;
}

const DEFAULT_BACKOFF = { initial: 200, max: 5_000 };
const DEFAULT_CHUNK_SIZE = 1000;
/** Most rows one watermark value may have when paging on the watermark alone with ties allowed. */
const MAX_TIE_GROUP = 100_000;
/** How many tie-breakers of the current watermark group are kept to spot repeated rows. */
const GROUP_MEMORY = 100_000;

/**
 * A keyset-paged table (or any ordered store) as a cursor source: reads `chunkSize` rows at a time
 * after a composite (watermark, tieBreaker) cursor, so rows sharing a watermark are never lost at
 * a chunk boundary. `available_now` stops at the `fetchMax()` snapshot taken by `endCursor()`;
 * `continuous` keeps polling, backing off exponentially while there is nothing new.
 */
export class WatermarkChunkSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** Keyset paging from a (watermark, tie-breaker) cursor reads the same rows again. */
  readonly replays = true;
  /** Present only when `fetchMax` was given. */
  readonly endCursor?: (snapshot?: Cursor) => Promise<Cursor | undefined>;

  private readonly fetchChunk: FetchChunk;
  private readonly watermarkField: string;
  private readonly tieBreakerField: string | undefined;
  /** Watermark-only paging that allows ties: only whole tie groups are yielded. */
  private readonly groups: boolean;
  private readonly chunkSize: number;
  private readonly backoff: { initial: number; max: number };
  /** Position of the last record yielded (what `currentCursor()` reports). */
  private cursor: WatermarkPosition | undefined;
  /** Position yielded just before `cursor` in this run: lets the next chunk overlap by one row. */
  private previous: WatermarkPosition | undefined;
  /**
   * Tie-breakers already yielded at the cursor's watermark (capped). A chunk that brings one of
   * them back means the query does not really resume after the cursor — typically a timestamp
   * whose microseconds a JS Date dropped — and reading on would repeat rows forever.
   */
  private group: { watermark: WatermarkValue; keys: Set<string> } | undefined;
  /** `null` = snapshot taken and the table was empty; `undefined` = no snapshot. */
  private end: WatermarkPosition | null | undefined;
  private reading = false;

  constructor(fetchChunk: FetchChunk, options: WatermarkChunkSourceOptions) {
    if (typeof fetchChunk !== "function") throw new ConfigError("fetchChunk", "expected a function");
    refuseUnknownOptions("WatermarkChunkSource", options, WATERMARK_OPTIONS);
    if (!options.watermarkField) throw new ConfigError("watermarkField", "expected a field name");
    const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
    if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
      throw new ConfigError("chunkSize", `expected an integer >= 1, got ${String(options.chunkSize)}`);
    }
    if (options.tieBreakerField !== undefined && options.uniqueWatermark === true) {
      throw new ConfigError("uniqueWatermark", "give either tieBreakerField or uniqueWatermark: true, not both");
    }
    if (options.tieBreakerField !== undefined && !options.tieBreakerField) {
      throw new ConfigError("tieBreakerField", "expected a field name");
    }
    const backoff = options.idleBackoffMs ?? DEFAULT_BACKOFF;
    if (!(backoff.initial > 0) || !(backoff.max >= backoff.initial)) {
      throw new ConfigError(
        "idleBackoffMs",
        `expected 0 < initial <= max, got initial ${backoff.initial}, max ${backoff.max}`,
      );
    }
    this.fetchChunk = fetchChunk;
    this.watermarkField = options.watermarkField;
    this.tieBreakerField = options.tieBreakerField;
    this.groups = options.tieBreakerField === undefined && options.uniqueWatermark !== true;
    this.chunkSize = chunkSize;
    this.backoff = { initial: backoff.initial, max: backoff.max };
    this.description =
      options.description ??
      `watermark ${this.watermarkField}${this.tieBreakerField ? `, ${this.tieBreakerField}` : ""}`;
    const fetchMax = options.fetchMax;
    if (fetchMax) {
      this.endCursor = async (snapshot?: Cursor) => {
        // A snapshot captured by an earlier fetch (another worker) is adopted as it is.
        const max = snapshot === undefined ? await fetchMax() : (snapshot as WatermarkPosition | null);
        this.end = max === undefined || max === null ? null : this.checkCursor(max, "fetchMax() result");
        return this.end === null ? undefined : copy(this.end);
      };
    }
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    this.cursor = cursor === undefined || cursor === null ? undefined : this.checkCursor(cursor, "cursor");
    this.previous = undefined;
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
          yield { value: rows[i], position: copy(position) };
          // Stopping at the snapshot row itself also holds I7 for a fetchChunk that ignores `until`.
          if (signal.aborted || (moves && until !== undefined && samePosition(position, until))) return;
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
    }
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
    if (last !== undefined && this.previous !== undefined) {
      const after = this.previous;
      const limit = this.chunkSize + 1;
      const rows = await abortable(this.fetchChunk(after, limit, until, signal), signal);
      if (rows === aborted) return aborted;
      const positions = rows.map((row, i) => this.positionOf(row, i));
      this.checkOrder(after, positions);
      if (positions.length > 0 && samePosition(positions[0]!, last)) {
        this.checkRepeats(positions, 1);
        return { rows, positions, start: 1, end: rows.length, full: rows.length >= limit };
      }
      // The last row is gone, moved, or a late row landed before it: JS cannot order every
      // value type, so ask again from the last position itself (without the check this once).
    }
    const rows = await abortable(this.fetchChunk(last, this.chunkSize, until, signal), signal);
    if (rows === aborted) return aborted;
    const positions = rows.map((row, i) => this.positionOf(row, i));
    this.checkOrder(last, positions);
    this.checkRepeats(positions, 0);
    return { rows, positions, start: 0, end: rows.length, full: rows.length >= this.chunkSize };
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
      const rows = await abortable(this.fetchChunk(last, limit, until, signal), signal);
      if (rows === aborted) return aborted;
      const positions = rows.map((row, i) => this.positionOf(row, i));
      this.checkOrder(last, positions, true);
      if (rows.length < limit) return { rows, positions, start: 0, end: rows.length, full: false };
      const tail = positions.at(-1)!.watermark;
      let end = positions.length - 1;
      while (end > 0 && sameValue(positions[end - 1]!.watermark, tail)) end--;
      if (end > 0) return { rows, positions, start: 0, end, full: true };
      if (limit >= most) {
        throw new WatermarkOrderError(
          this.description,
          `more than ${most} rows share ${show({ watermark: tail })} in "${this.watermarkField}"; paging on the ` +
            `watermark alone cannot split them. Set tieBreakerField to a column that makes ` +
            `(${this.watermarkField}, tieBreaker) unique, usually the primary key`,
        );
      }
    }
  }

  private positionOf(row: Record<string, unknown>, index: number): WatermarkPosition {
    if (typeof row !== "object" || row === null) {
      throw new WatermarkOrderError(this.description, `fetchChunk returned a non-object row at index ${index}`);
    }
    const watermark = this.valueOf(row, this.watermarkField, index);
    if (this.tieBreakerField === undefined) return { watermark };
    return { watermark, tieBreaker: this.valueOf(row, this.tieBreakerField, index) };
  }

  private valueOf(row: Record<string, unknown>, field: string, index: number): WatermarkValue {
    const value = row[field];
    if (isWatermarkValue(value)) return value;
    throw new WatermarkOrderError(
      this.description,
      value === null || value === undefined
        ? `row ${index} of a chunk has no "${field}" value; select that column and exclude NULLs ` +
            `in the query (WHERE ${field} IS NOT NULL)`
        : `row ${index} of a chunk has a "${field}" of unsupported type ${describeType(value)}; ` +
            `expected a number, bigint, string or valid Date`,
    );
  }

  /**
   * Positions must be strictly increasing, starting after `after`. Strings are only compared for
   * equality (their order is the database's collation); numbers, bigints and Dates fully.
   */
  private checkOrder(after: WatermarkPosition | undefined, positions: WatermarkPosition[], ties = false): void {
    let prev = after;
    for (let i = 0; i < positions.length; i++) {
      const p = positions[i]!;
      if (prev !== undefined) {
        const cmp = comparePositions(prev, p);
        if ((cmp === 0 || (cmp === undefined && samePosition(prev, p))) && !(ties && i > 0)) {
          throw new WatermarkOrderError(
            this.description,
            (i === 0
              ? `fetchChunk returned a row at the position it was asked to read after (${show(p)}); the ` +
                `query must compare with a strict ">"`
              : `two rows share the position ${show(p)}`) +
              (this.tieBreakerField
                ? `. (${this.watermarkField}, ${this.tieBreakerField}) must be unique`
                : ties
                  ? ""
                  : `. "${this.watermarkField}" is not unique: set tieBreakerField (e.g. the primary key), or drop uniqueWatermark to allow ties`) +
              ". If the watermark is a timestamp with microseconds read as a JS Date, the precision " +
              "lost in the Date can also cause this: read it as text or truncate it to milliseconds",
          );
        }
        if (cmp !== undefined && cmp > 0) {
          throw new WatermarkOrderError(
            this.description,
            `rows out of order: ${show(p)} came after ${show(prev)}${i === 0 ? " (the cursor)" : ""}. ` +
              `fetchChunk must return rows strictly after its cursor, ordered by ` +
              `${this.watermarkField}${this.tieBreakerField ? `, ${this.tieBreakerField}` : ""} ascending. ` +
              `Timestamps with microseconds read as JS Dates lose precision and can also cause this: ` +
              `read them as text or truncate them to milliseconds`,
          );
        }
      }
      prev = p;
    }
  }

  /** No row of the chunk (from `start`) may repeat a position yielded in the current tie group. */
  private checkRepeats(positions: WatermarkPosition[], start: number): void {
    let watermark = this.group?.watermark;
    let yielded = this.group?.keys;
    let seen = new Set<string>();
    for (let i = start; i < positions.length; i++) {
      const p = positions[i]!;
      if (watermark === undefined || !sameValue(p.watermark, watermark)) {
        watermark = p.watermark;
        yielded = undefined;
        seen = new Set();
      }
      const key = valueKey(p.tieBreaker);
      if (yielded?.has(key) || seen.has(key)) {
        throw new WatermarkOrderError(
          this.description,
          `fetchChunk returned ${show(p)} again after the cursor had passed it, so the query does not ` +
            `resume strictly after the cursor. The usual cause is a timestamp watermark with microseconds ` +
            `read as a JS Date (which keeps milliseconds): the cursor then points before rows already read. ` +
            `Keep the column at millisecond precision (timestamptz(3)) or read it as text ` +
            `(docs/sources.md, WatermarkChunkSource). Otherwise check that the query uses a strict ">"`,
        );
      }
      seen.add(key);
    }
  }

  private remember(p: WatermarkPosition): void {
    if (this.group === undefined || !sameValue(p.watermark, this.group.watermark)) {
      this.group = { watermark: p.watermark, keys: new Set() };
    }
    // Bounded memory: a huge tie group is only checked for its first GROUP_MEMORY rows.
    if (this.group.keys.size < GROUP_MEMORY) this.group.keys.add(valueKey(p.tieBreaker));
  }

  private checkCursor(cursor: unknown, what: string): WatermarkPosition {
    const expected = this.tieBreakerField
      ? `{ watermark, tieBreaker } (tieBreakerField "${this.tieBreakerField}")`
      : "{ watermark } (no tieBreakerField)";
    if (typeof cursor !== "object" || cursor === null || !("watermark" in cursor)) {
      throw new ConfigError(what, `expected ${expected}, got ${describeType(cursor)}`);
    }
    const c = cursor as { watermark: unknown; tieBreaker?: unknown };
    if (!isWatermarkValue(c.watermark)) {
      throw new ConfigError(what, `watermark must be a number, bigint, string or valid Date, got ${describeType(c.watermark)}`);
    }
    if (this.tieBreakerField === undefined) {
      if (c.tieBreaker !== undefined) {
        throw new ConfigError(what, `has a tieBreaker but this source has no tieBreakerField; expected ${expected}`);
      }
      return { watermark: c.watermark };
    }
    if (!isWatermarkValue(c.tieBreaker)) {
      throw new ConfigError(
        what,
        `expected ${expected}; tieBreaker must be a number, bigint, string or valid Date, got ${describeType(c.tieBreaker)}`,
      );
    }
    return { watermark: c.watermark, tieBreaker: c.tieBreaker };
  }
}
