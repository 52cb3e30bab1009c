/* What WatermarkChunkSource checks in the chunks `fetchChunk` returns, and the errors it raises. */
import { ConfigError, NonRetriableError } from "../../errors.js";
import {
  comparePositions,
  describeType,
  isWatermarkValue,
  samePosition,
  sameValue,
  show,
  valueKey,
  type WatermarkPosition,
  type WatermarkValue,
} from "./positions.js";

/** The rows coming back from `fetchChunk` break the keyset contract; reading on would lose or repeat rows. */
export class WatermarkOrderError extends NonRetriableError {
  readonly source: string;
  constructor(source: string, message: string) {
    super("WATERMARK_ORDER", `${source}: ${message}`);
    this.source = source;
  }
}

/** Tie-breakers already yielded at one watermark value (capped). */
export interface TieGroup {
  watermark: WatermarkValue;
  keys: Set<string>;
}

const LOSSY_DATES =
  "If the watermark is a timestamp with microseconds read as a JS Date, the precision lost in the Date can also cause this: read it as text or truncate it to milliseconds";

export class KeysetChecks {
  constructor(
    private readonly description: string,
    private readonly watermarkField: string,
    private readonly tieBreakerField: string | undefined,
    /** `fetchChunk` takes plain values (the Python form) rather than positions. */
    private readonly byValue: boolean,
  ) {}

  get field(): string {
    return this.watermarkField;
  }

  error(message: string): WatermarkOrderError {
    return new WatermarkOrderError(this.description, message);
  }

  /** `after` as the caller's fetchChunk received it. */
  private arg(p: WatermarkPosition | undefined): string {
    if (p === undefined) return "undefined";
    return this.byValue ? show(p).slice(1, -1) : show(p);
  }

  /** How the query has to use `after`, for the messages. */
  private howToCompare(): string {
    const wm = this.watermarkField;
    if (this.byValue) return `\`after\` is a plain watermark value (undefined on the first call): the query must select the rows where ${wm} > after`;
    if (this.tieBreakerField === undefined) return `\`after\` is { watermark }: the query must select the rows where ${wm} > after.watermark`;
    return `\`after\` is { watermark, tieBreaker }: the query must select the rows where (${wm}, ${this.tieBreakerField}) > (after.watermark, after.tieBreaker)`;
  }

  /** The chunk itself: an array of at most `limit` rows. */
  checkChunk(rows: unknown, after: WatermarkPosition | undefined, limit: number): asserts rows is ReadonlyArray<Record<string, unknown>> {
    if (!Array.isArray(rows)) throw this.error(`fetchChunk(${this.arg(after)}, ${limit}) returned ${describeType(rows)}; expected an array of rows`);
    if (rows.length > limit) {
      throw this.error(
        `fetchChunk(${this.arg(after)}, ${limit}) returned ${rows.length} rows; expected at most ${limit} (the limit keeps the read memory-bounded)`,
      );
    }
  }

  /** An empty chunk although the rows from `held` on were fetched before and not handed out yet. */
  heldRowsMissing(after: WatermarkPosition | undefined, limit: number, held: WatermarkPosition): WatermarkOrderError {
    return this.error(
      `fetchChunk(${this.arg(after)}, ${limit}) returned no rows, but the chunk before held rows from ${show(held)} on that ` +
        `were not handed out yet: they are after ${this.arg(after)} and must come back. ${this.howToCompare()}. ` +
        `(If those rows were deleted meanwhile, run again: the committed cursor is before them.)`,
    );
  }

  /** The chunk asked from the second-to-last row did not start again with the last row handed out. */
  overlapMissing(after: WatermarkPosition, limit: number, last: WatermarkPosition, first: WatermarkPosition | undefined): WatermarkOrderError {
    return this.error(
      `fetchChunk(${this.arg(after)}, ${limit}) was expected to start again with ${show(last)}, the last row handed out ` +
        `(the source re-reads one row per chunk to check that positions are unique), but returned ` +
        `${first === undefined ? "no rows" : `${show(first)} first`}. ${this.howToCompare()}. ` +
        `(If that row was deleted meanwhile, run again: the committed cursor is at it.)`,
    );
  }

  /** A row came back between the second-to-last and the last row handed out: behind the cursor. */
  behindCursor(previous: WatermarkPosition, last: WatermarkPosition, row: WatermarkPosition, next: WatermarkPosition | undefined): WatermarkOrderError {
    return this.error(
      `a row at ${show(row)} came back between ${show(previous)} and ${show(last)}, the last two rows handed out; asked ` +
        `again after ${show(last)}, the chunk ${next === undefined ? "is empty" : `starts with ${show(next)}`}. The row was not ` +
        `there when the source read past it — committed late behind the cursor, which never reads it — or the query ` +
        `does not order its rows by ${this.keyText()}. Use a watermark assigned in commit order (the PostgreSQL ` +
        `source's settle option waits for transactions in flight), or CDC`,
    );
  }

  private keyText(): string {
    return this.tieBreakerField === undefined ? this.watermarkField : `(${this.watermarkField}, ${this.tieBreakerField})`;
  }

  positionOf(row: Record<string, unknown>, index: number): WatermarkPosition {
    if (typeof row !== "object" || row === null) throw this.error(`fetchChunk returned a non-object row at index ${index}`);
    const watermark = this.valueOf(row, this.watermarkField, index);
    if (this.tieBreakerField === undefined) return { watermark };
    return { watermark, tieBreaker: this.valueOf(row, this.tieBreakerField, index) };
  }

  private valueOf(row: Record<string, unknown>, field: string, index: number): WatermarkValue {
    const value = row[field];
    if (isWatermarkValue(value)) return value;
    throw this.error(
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
  checkOrder(after: WatermarkPosition | undefined, positions: WatermarkPosition[], ties = false): void {
    let prev = after;
    for (let i = 0; i < positions.length; i++) {
      const p = positions[i]!;
      if (prev !== undefined) {
        const cmp = comparePositions(prev, p);
        if ((cmp === 0 || (cmp === undefined && samePosition(prev, p))) && !(ties && i > 0)) {
          throw this.error(
            (i === 0
              ? `fetchChunk returned a row at the position it was asked to read after (${show(p)}); the ` +
                `query must compare with a strict ">"`
              : `two rows share the position ${show(p)}`) +
              (this.tieBreakerField
                ? `. (${this.watermarkField}, ${this.tieBreakerField}) must be unique`
                : ties
                  ? ""
                  : `. "${this.watermarkField}" is not unique: set tieBreakerField (e.g. the primary key), or drop uniqueWatermark to allow ties`) +
              `. ${LOSSY_DATES}`,
          );
        }
        if (cmp !== undefined && cmp > 0) {
          throw this.error(
            `rows out of order: ${show(p)} came after ${show(prev)}${i === 0 ? " (the position asked to read after)" : ""}. ` +
              `fetchChunk must return rows strictly after \`after\`, ordered by ${this.keyText()} ascending; ` +
              `${this.howToCompare()}. ${LOSSY_DATES}`,
          );
        }
      }
      prev = p;
    }
  }

  /** No row of the chunk (from `start`) may repeat a position yielded in the current tie group. */
  checkRepeats(group: TieGroup | undefined, positions: WatermarkPosition[], start: number): void {
    let watermark = group?.watermark;
    let yielded = group?.keys;
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
        throw this.error(
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

  checkCursor(cursor: unknown, what: string): WatermarkPosition {
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
