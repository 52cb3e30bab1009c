/* The options of WatermarkChunkSource: the two forms of `fetchChunk`, and their validation. */
import { ConfigError } from "../../errors.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";
import { describeType, isWatermarkValue, type WatermarkPosition, type WatermarkValue } from "./positions.js";

type Rows = Promise<ReadonlyArray<Record<string, unknown>>>;

/**
 * Fetch the next chunk, as the Python original's `fetch_chunk(after, limit)`: at most `limit`
 * rows whose watermark is strictly greater than `after` (`undefined` on the first call: from the
 * beginning), ordered by the watermark, never rows whose watermark is NULL. `until`, when given,
 * is the `available_now` snapshot: rows above it may be left out (the source stops there anyway).
 *
 * ```ts
 * const fetchChunk: FetchChunk = async (after, limit) =>
 *   (await pool.query(after === undefined
 *     ? "SELECT * FROM orders WHERE id IS NOT NULL ORDER BY id LIMIT $1"
 *     : "SELECT * FROM orders WHERE id > $2 ORDER BY id LIMIT $1", after === undefined ? [limit] : [limit, after])).rows;
 * ```
 *
 * The query must depend on its arguments only: the source may ask again after a value it has
 * already passed (to check that values are unique, or to read a tie group whole).
 */
export type FetchChunk = (after: WatermarkValue | undefined, limit: number, until: WatermarkValue | undefined, signal: AbortSignal) => Rows;

/**
 * The form for paging on (watermark, tieBreaker), with `tieBreakerField` (or `fetchAfter:
 * "position"`): `after` and `until` are positions `{ watermark, tieBreaker }`, and the rows must be
 * strictly after `after` in (watermark, tieBreaker) order, at or before `until`, ordered by both
 * ascending — in SQL a row-value comparison, `(updated_at, id) > ($1, $2)`. Without a
 * tieBreakerField the positions are `{ watermark }`. See `postgresChunkFetcher`.
 */
export type FetchChunkByPosition = (
  after: WatermarkPosition | undefined,
  limit: number,
  until: WatermarkPosition | undefined,
  signal: AbortSignal,
) => Rows;

/** The greatest watermark now in the table, or undefined (null) when it is empty — `SELECT max(id) FROM orders`. */
export type FetchMax = () => Promise<WatermarkValue | null | undefined>;

/** The greatest (watermark, tieBreaker) position now in the table, or undefined when it is empty. */
export type FetchMaxByPosition = () => Promise<WatermarkPosition | undefined>;

interface CommonOptions {
  /** Row field holding the watermark (e.g. `id`, `updated_at`). */
  watermarkField: string;
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
  /** Continuous mode: pause after an empty chunk, doubling from `initial` to `max`. Default 200 / 5000 ms. */
  idleBackoffMs?: { initial: number; max: number };
  description?: string;
}

/** The Python form: `fetchChunk(after, limit)` with `after` a plain watermark value. */
export interface WatermarkValueOptions extends CommonOptions {
  tieBreakerField?: undefined;
  /** What `fetchChunk` receives as `after` and `until`: `"value"` (the default without a tieBreakerField). */
  fetchAfter?: "value";
  /** Enables `endCursor()` for `available_now` (I7): the drain stops at this watermark. */
  fetchMax?: FetchMax;
}

/** The position form: `after` is `{ watermark, tieBreaker }` (`{ watermark }` without a tie-breaker). */
export type WatermarkPositionOptions = CommonOptions & {
  /** Enables `endCursor()` for `available_now` (I7): the drain stops at this position. */
  fetchMax?: FetchMaxByPosition;
} & (
    | {
        /**
         * Row field that makes (watermark, tieBreaker) unique, usually the primary key. Pages on
         * the pair, so any number of rows may share a watermark value; `fetchChunk` then gets positions.
         */
        tieBreakerField: string;
        fetchAfter?: "position";
      }
    | { tieBreakerField?: string; fetchAfter: "position" }
  );

export type WatermarkChunkSourceOptions = WatermarkValueOptions | WatermarkPositionOptions;

/** The option names, for the refusal of unknown ones (the compiler keeps the list complete). */
const WATERMARK_OPTIONS = optionNames<WatermarkValueOptions & { tieBreakerField?: string; fetchAfter?: "value" | "position" }>()([
  "watermarkField",
  "tieBreakerField",
  "uniqueWatermark",
  "fetchAfter",
  "chunkSize",
  "fetchMax",
  "idleBackoffMs",
  "description",
]);

/** The options checked, with `fetchChunk` and `fetchMax` in the position form the source works in. */
export interface ResolvedOptions {
  fetchChunk: FetchChunkByPosition;
  fetchMax: FetchMaxByPosition | undefined;
  watermarkField: string;
  tieBreakerField: string | undefined;
  /** `fetchChunk` takes plain values (the Python form). */
  byValue: boolean;
  /** Watermark-only paging that allows ties: only whole tie groups are yielded. */
  groups: boolean;
  chunkSize: number;
  backoff: { initial: number; max: number };
  description: string;
}

const DEFAULT_BACKOFF = { initial: 200, max: 5_000 };
const DEFAULT_CHUNK_SIZE = 1000;

export function resolveOptions(fetchChunk: unknown, options: WatermarkChunkSourceOptions): ResolvedOptions {
  if (typeof fetchChunk !== "function") throw new ConfigError("fetchChunk", "expected a function");
  refuseUnknownOptions("WatermarkChunkSource", options, WATERMARK_OPTIONS);
  if (!options.watermarkField) throw new ConfigError("watermarkField", "expected a field name");
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
    throw new ConfigError("chunkSize", `expected an integer >= 1, got ${String(options.chunkSize)}`);
  }
  const tieBreakerField = options.tieBreakerField;
  if (tieBreakerField !== undefined && options.uniqueWatermark === true) {
    throw new ConfigError("uniqueWatermark", "give either tieBreakerField or uniqueWatermark: true, not both");
  }
  if (tieBreakerField !== undefined && !tieBreakerField) throw new ConfigError("tieBreakerField", "expected a field name");
  const fetchAfter: unknown = options.fetchAfter ?? (tieBreakerField === undefined ? "value" : "position");
  if (fetchAfter !== "value" && fetchAfter !== "position") {
    throw new ConfigError("fetchAfter", `expected "value" or "position", got ${JSON.stringify(fetchAfter)}`);
  }
  if (fetchAfter === "value" && tieBreakerField !== undefined) {
    throw new ConfigError("fetchAfter", `"value" cannot carry the tie-breaker: with tieBreakerField, fetchChunk gets { watermark, tieBreaker } ("position")`);
  }
  const backoff = options.idleBackoffMs ?? DEFAULT_BACKOFF;
  if (!(backoff.initial > 0) || !(backoff.max >= backoff.initial)) {
    throw new ConfigError("idleBackoffMs", `expected 0 < initial <= max, got initial ${backoff.initial}, max ${backoff.max}`);
  }
  const byValue = fetchAfter === "value";
  return {
    fetchChunk: byValue ? valueFetch(fetchChunk as FetchChunk) : (fetchChunk as FetchChunkByPosition),
    fetchMax: options.fetchMax === undefined ? undefined : byValue ? valueMax(options.fetchMax as FetchMax) : (options.fetchMax as FetchMaxByPosition),
    watermarkField: options.watermarkField,
    tieBreakerField,
    byValue,
    groups: tieBreakerField === undefined && options.uniqueWatermark !== true,
    chunkSize,
    backoff: { initial: backoff.initial, max: backoff.max },
    description: options.description ?? `watermark ${options.watermarkField}${tieBreakerField ? `, ${tieBreakerField}` : ""}`,
  };
}

function valueFetch(fetch: FetchChunk): FetchChunkByPosition {
  return (after, limit, until, signal) => fetch(after?.watermark, limit, until?.watermark, signal);
}

function valueMax(fetchMax: FetchMax): FetchMaxByPosition {
  return async () => {
    const max = await fetchMax();
    if (max === undefined || max === null) return undefined;
    if (!isWatermarkValue(max)) {
      throw new ConfigError(
        "fetchMax() result",
        `expected the greatest watermark as a plain value (a number, bigint, string or valid Date), got ${describeType(max)}; ` +
          `{ watermark } objects go with fetchAfter: "position"`,
      );
    }
    return { watermark: max };
  };
}
