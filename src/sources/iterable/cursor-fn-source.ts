import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError } from "../../errors.js";
import { isMissing, showValue } from "../core/field-cursor.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

type AnyIterable = Iterable<unknown> | AsyncIterable<unknown>;

/** The cursor of a record: where a new iteration must resume so that this record is not read again. */
export type CursorFn = (record: unknown) => Cursor;

/**
 * Opens the records after `after` — the cursor committed last (`cursorFn` of the last record of
 * that batch), or undefined when the stream has committed nothing yet.
 */
export type ResumableIterable = (after: Cursor | undefined) => AnyIterable;

export interface CursorFnSourceOptions {
  /** Name for messages. */
  description?: string;
  /** Called by `close()`. */
  onClose?: () => Promise<void>;
}

const CURSOR_FN_OPTIONS = optionNames<CursorFnSourceOptions>()(["description", "onClose"]);

/**
 * An iterable that resumes from a cursor the caller derives from its own records (an event time,
 * an id): after each batch the checkpoint stores `cursorFn(last record of the batch)`, and a new
 * run calls `open(storedCursor)` so the iteration starts after it. Unlike a plain iterable (which
 * has no cursor and may only start over), nothing is skipped by counting: where to resume is the
 * caller's query, e.g. `WHERE updated_at > $after`.
 *
 * A record for which `cursorFn` gives no cursor (undefined or null) fails the run before its
 * batch commits: a stream whose cursor stopped moving would read everything again on restart,
 * and one whose cursor went back to null would start over.
 */
export class CursorFnSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  private after: Cursor | undefined;
  private cursor: Cursor | undefined;
  private readonly onClose: (() => Promise<void>) | undefined;

  constructor(
    private readonly open: ResumableIterable,
    private readonly cursorFn: CursorFn,
    options: CursorFnSourceOptions = {},
  ) {
    if (typeof open !== "function") {
      throw new ConfigError(
        "source",
        "with cursorFn, expected a function (after) => iterable that resumes after the stored cursor; " +
          "a plain iterable cannot be told where to resume",
      );
    }
    if (typeof cursorFn !== "function") throw new ConfigError("cursorFn", `expected a function (record) => cursor; got ${typeof cursorFn}`);
    refuseUnknownOptions("CursorFnSource", options, CURSOR_FN_OPTIONS);
    this.description = options.description ?? "iterable with cursorFn";
    this.onClose = options.onClose;
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    this.after = cursor ?? undefined;
    this.cursor = this.after;
  }

  currentCursor(): Cursor | undefined {
    return this.cursor;
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    let n = 0;
    for await (const value of this.open(this.after) as AsyncIterable<unknown>) {
      if (options.signal.aborted) return;
      const cursor = this.cursorFn(value);
      // The caller's own cursor (any JSON, in the caller's order): only a missing one is refused.
      if (isMissing(cursor)) {
        throw new ConfigError(
          "cursorFn",
          `returned ${String(cursor)} for record ${n + 1} of this run (after cursor ${describe(this.after)}); ` +
            `every record needs a cursor to resume after it — check the field cursorFn reads`,
        );
      }
      n++;
      // Set before the yield: when the batch takes this record, the cursor covers it and nothing after.
      this.cursor = cursor;
      // The cursor is where the record sits: stable across replays, unlike its ordinal in one run.
      yield { value, position: cursor };
    }
  }

  async close(): Promise<void> {
    await this.onClose?.();
  }
}

function describe(cursor: Cursor | undefined): string {
  if (cursor === undefined) return "none";
  const text = showValue(cursor);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
