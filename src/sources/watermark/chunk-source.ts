import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError, LakeLogicError } from "../../errors.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { sleep } from "../../util/wait.js";
import { SourceBusyError } from "../core/errors.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

/** A watermark or tie-breaker value. PostgreSQL's `pg` returns bigint as string, timestamps as Date. */
export type WatermarkValue = number | bigint | string | Date;

/**
 * A row's place in keyset order, and the cursor of a WatermarkChunkSource: the position of the
 * last record handed out. `tieBreaker` is present exactly when the source has a `tieBreakerField`.
 */
export interface WatermarkPosition {
  watermark: WatermarkValue;
  tieBreaker?: WatermarkValue;
}

/**
 * Fetch the next chunk in keyset order. Must return rows
 *
 * - strictly after `after` in (watermark, tieBreaker) order — all rows when `after` is undefined,
 * - and, when `until` is given, at or before `until`,
 * - ordered by (watermark, tieBreaker) ascending, at most `limit` of them,
 * - never rows whose watermark (or tie-breaker) is NULL.
 *
 * Without a tie-breaker, compare the watermark alone (`wm > $1`, `wm <= $2`). The source may
 * pass an `after` it has already passed (it re-reads one row per chunk to check that positions
 * are unique), so the query must depend on its arguments only. `signal` aborts with the read;
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
   * Row field that makes (watermark, tieBreaker) unique, usually the primary key. Needed
   * whenever two rows can share a watermark value; without it set `uniqueWatermark: true`.
   */
  tieBreakerField?: string;
  /**
   * Declare that no two rows share a watermark value (e.g. the watermark is an identity column).
   * Required when `tieBreakerField` is absent, so watermark-only paging is never chosen by
   * accident: with ties it would skip rows at chunk boundaries. Checked while reading.
   */
  uniqueWatermark?: boolean;
  /** Rows per `fetchChunk` call. */
  chunkSize: number;
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
export class WatermarkOrderError extends LakeLogicError {
  readonly source: string;
  constructor(source: string, message: string) {
    super("WATERMARK_ORDER", `${source}: ${message}`, { retriable: false });
    this.source = source;
  }
}


const DEFAULT_BACKOFF = { initial: 200, max: 5_000 };
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
    if (!Number.isSafeInteger(options.chunkSize) || options.chunkSize < 1) {
      throw new ConfigError("chunkSize", `expected an integer >= 1, got ${String(options.chunkSize)}`);
    }
    if (options.tieBreakerField === undefined && options.uniqueWatermark !== true) {
      throw new ConfigError(
        "tieBreakerField",
        `paging on "${options.watermarkField}" alone skips rows that share a watermark value at a chunk ` +
          `boundary. Set tieBreakerField to a column that makes (watermark, tieBreaker) unique (usually the ` +
          `primary key), or set uniqueWatermark: true if no two rows can share a watermark value`,
      );
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
    this.chunkSize = options.chunkSize;
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
        const { rows, positions, start, full } = chunk;
        for (let i = start; i < rows.length; i++) {
          const position = positions[i]!;
          this.previous = this.cursor;
          this.cursor = position;
          this.remember(position);
          yield { value: rows[i], position: copy(position) };
          // Stopping at the snapshot row itself also holds I7 for a fetchChunk that ignores `until`.
          if (signal.aborted || (until !== undefined && samePosition(position, until))) return;
        }
        // A short chunk means nothing more is there right now; with a snapshot it is the end of the drain.
        if (!full && (until !== undefined || mode === "available_now")) return;
        if (rows.length > start) {
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
  private async nextChunk(
    until: WatermarkPosition | undefined,
    signal: AbortSignal,
  ): Promise<
    | { rows: ReadonlyArray<Record<string, unknown>>; positions: WatermarkPosition[]; start: number; full: boolean }
    | typeof aborted
  > {
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
        return { rows, positions, start: 1, full: rows.length >= limit };
      }
      // The last row is gone, moved, or a late row landed before it: JS cannot order every
      // value type, so ask again from the last position itself (without the check this once).
    }
    const rows = await abortable(this.fetchChunk(last, this.chunkSize, until, signal), signal);
    if (rows === aborted) return aborted;
    const positions = rows.map((row, i) => this.positionOf(row, i));
    this.checkOrder(last, positions);
    this.checkRepeats(positions, 0);
    return { rows, positions, start: 0, full: rows.length >= this.chunkSize };
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
  private checkOrder(after: WatermarkPosition | undefined, positions: WatermarkPosition[]): void {
    let prev = after;
    for (let i = 0; i < positions.length; i++) {
      const p = positions[i]!;
      if (prev !== undefined) {
        const cmp = comparePositions(prev, p);
        if (cmp === 0 || (cmp === undefined && samePosition(prev, p))) {
          throw new WatermarkOrderError(
            this.description,
            (i === 0
              ? `fetchChunk returned a row at the position it was asked to read after (${show(p)}); the ` +
                `query must compare with a strict ">"`
              : `two rows share the position ${show(p)}`) +
              (this.tieBreakerField
                ? `. (${this.watermarkField}, ${this.tieBreakerField}) must be unique`
                : `. "${this.watermarkField}" is not unique: set tieBreakerField (e.g. the primary key)`) +
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
      : "{ watermark } (uniqueWatermark: true)";
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

function isWatermarkValue(value: unknown): value is WatermarkValue {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value);
    case "bigint":
    case "string":
      return true;
    case "object":
      return value instanceof Date && !Number.isNaN(value.getTime());
    default:
      return false;
  }
}

function copy(p: WatermarkPosition): WatermarkPosition {
  const clone = (v: WatermarkValue): WatermarkValue => (v instanceof Date ? new Date(v.getTime()) : v);
  return p.tieBreaker === undefined
    ? { watermark: clone(p.watermark) }
    : { watermark: clone(p.watermark), tieBreaker: clone(p.tieBreaker) };
}

/** Identity of a value within one tie group (type-tagged so 1 and "1" differ). */
function valueKey(v: WatermarkValue | undefined): string {
  if (v === undefined) return "u";
  if (v instanceof Date) return `d${v.getTime()}`;
  return `${(typeof v)[0]}${String(v)}`;
}

function sameValue(a: WatermarkValue | undefined, b: WatermarkValue | undefined): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return a === b;
}

function samePosition(a: WatermarkPosition, b: WatermarkPosition): boolean {
  return sameValue(a.watermark, b.watermark) && sameValue(a.tieBreaker, b.tieBreaker);
}

/** Order of two values of one numeric kind; undefined when JS cannot know the database's order. */
function compareValues(a: WatermarkValue, b: WatermarkValue): number | undefined {
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime());
  const numeric = (v: WatermarkValue) => typeof v === "number" || typeof v === "bigint";
  if (numeric(a) && numeric(b)) return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

function comparePositions(a: WatermarkPosition, b: WatermarkPosition): number | undefined {
  const wm = sameValue(a.watermark, b.watermark) ? 0 : compareValues(a.watermark, b.watermark);
  if (wm !== 0 || a.tieBreaker === undefined || b.tieBreaker === undefined) return wm;
  return sameValue(a.tieBreaker, b.tieBreaker) ? 0 : compareValues(a.tieBreaker, b.tieBreaker);
}

function show(p: WatermarkPosition): string {
  const v = (x: WatermarkValue) => (x instanceof Date ? x.toISOString() : typeof x === "bigint" ? `${x}n` : JSON.stringify(x));
  return p.tieBreaker === undefined ? `(${v(p.watermark)})` : `(${v(p.watermark)}, ${v(p.tieBreaker)})`;
}

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (value instanceof Date) return "an invalid Date";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

const aborted = Symbol("aborted");

/** Settle with the promise, or with `aborted` as soon as the signal fires (the promise is left to finish). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof aborted> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.resolve(aborted);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => undefined); // a late failure after abort is nobody's business
      resolve(aborted);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) resolve(aborted);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the wrapped promise's own reason, passed on unchanged
        else reject(error);
      },
    );
  });
}

