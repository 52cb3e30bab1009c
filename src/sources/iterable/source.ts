import type { Cursor } from "../../checkpoint/types.js";
import { ConfigError, NonRetriableError } from "../../errors.js";
import type { CursorSource, ReadOptions, RunMode, SourceRecord, StreamConnector } from "../core/types.js";
import { CursorBeyondEndError, CursorMismatchError } from "../core/errors.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

/** The cursor of an iterable: how many items were consumed, and whether it was read to the end. */
export interface IterableCursor {
  offset: number;
  exhausted: boolean;
}

export interface IterableSourceOptions {
  /**
   * Declare that iterating again yields the same items in the same order (a file, a fixed
   * array, a deterministic generator). Only then can a partial run resume, by skipping the
   * items already committed. Default false.
   */
  replayable?: boolean;
  /** Name for messages. */
  description?: string;
  /** Called by `close()`, e.g. to close the connector behind the iterable. */
  onClose?: () => Promise<void>;
  /**
   * The iterable never ends (a live feed): `available_now` is refused at once instead of never
   * finishing. Default false.
   */
  continuousOnly?: boolean;
  /** Called before each iteration with the run's mode (a connector's `drain` flag). */
  onRead?: (mode: RunMode) => void;
}

const ITERABLE_OPTIONS = optionNames<IterableSourceOptions>()(["replayable", "description", "onClose", "continuousOnly", "onRead"]);

/** A restart was asked of a source that cannot replay what it already gave. */
export class NotReplayableError extends NonRetriableError {
  constructor(description: string, offset: number) {
    super(
      "NOT_REPLAYABLE",
      `${description}: the previous run stopped after ${offset} records without reaching the end, ` +
        `and this source has no cursor to resume from. Skipping ${offset} records of a new iteration ` +
        `could silently drop data, so LakeLogic refuses. If the iterable yields the same items in the ` +
        `same order every time, wrap it as IterableSource(items, { replayable: true }); otherwise use a ` +
        `source with a native cursor, or start over with a new checkpointKey.`,
    );
  }
}

type AnyIterable = Iterable<unknown> | AsyncIterable<unknown>;

/**
 * Any sync or async iterable as a cursor source. The cursor is `{ offset, exhausted }`:
 * resuming skips `offset` items, which is only sound for a replayable iterable; a non-replayable
 * one may only start fresh, or after a run that read it to the end.
 */
export class IterableSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /** Declared replayable: the same items in the same order on every iteration. */
  readonly replays: boolean;
  private offset = 0;
  private skip = 0;
  private exhausted = false;
  readonly continuousOnly: boolean;
  private readonly items: AnyIterable | (() => AnyIterable);
  private readonly onClose: (() => Promise<void>) | undefined;
  private readonly onRead: ((mode: RunMode) => void) | undefined;

  constructor(items: AnyIterable | (() => AnyIterable), options: IterableSourceOptions = {}) {
    if (items === null || items === undefined) throw new ConfigError("source", "expected an iterable, got nothing");
    refuseUnknownOptions("IterableSource", options, ITERABLE_OPTIONS);
    this.items = items;
    this.replays = options.replayable ?? false;
    this.description = options.description ?? (this.replays ? "replayable iterable" : "iterable");
    this.onClose = options.onClose;
    this.continuousOnly = options.continuousOnly ?? false;
    this.onRead = options.onRead;
  }

  async close(): Promise<void> {
    await this.onClose?.();
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    const c = parseCursor(cursor, this.description);
    this.exhausted = false;
    if (!c) {
      this.offset = 0;
      this.skip = 0;
      return;
    }
    if (this.replays) {
      this.offset = c.offset;
      this.skip = c.offset;
    } else if (c.exhausted) {
      // The last run consumed its iterable completely: this one is new data, starting at 0.
      this.offset = c.offset;
      this.skip = 0;
    } else {
      throw new NotReplayableError(this.description, c.offset);
    }
  }

  currentCursor(): IterableCursor {
    return { offset: this.offset, exhausted: this.exhausted };
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    this.onRead?.(options.mode);
    const iterable = typeof this.items === "function" ? this.items() : this.items;
    let toSkip = this.skip;
    for await (const value of iterable as AsyncIterable<unknown>) {
      if (options.signal.aborted) return;
      if (toSkip > 0) {
        toSkip--;
        continue;
      }
      this.offset++;
      yield { value, position: this.offset - 1 };
    }
    if (toSkip > 0) {
      throw new CursorBeyondEndError(
        `${this.description}: the checkpoint says ${this.skip} records were committed, but the iterable ` +
          `now has only ${this.skip - toSkip}. It is not replaying the same items.`,
      );
    }
    this.exhausted = true;
  }
}

function parseCursor(cursor: Cursor | undefined, description: string): IterableCursor | undefined {
  if (cursor === undefined || cursor === null) return undefined;
  const c = cursor as Partial<IterableCursor>;
  if (typeof c === "object" && typeof c.offset === "number" && typeof c.exhausted === "boolean") {
    return { offset: c.offset, exhausted: c.exhausted };
  }
  throw new CursorMismatchError(
    `${description}: the stored cursor ${JSON.stringify(cursor)} was not written by an iterable source; ` +
      `this checkpoint key belongs to another kind of source.`,
  );
}

/**
 * A connector with the iterator API, read once: it has no cursor, so it can only start fresh.
 * Its `continuousOnly` (or the Python package's `continuous_only`) makes it a continuous-only
 * source, and a `drain` property it has is set to whether the run is available_now.
 */
export function connectorSource(connector: StreamConnector, description = "connector"): IterableSource {
  const python = connector as { continuous_only?: unknown };
  const continuousOnly = connector.continuousOnly === true || python.continuous_only === true;
  return new IterableSource(() => connector.stream(), {
    description,
    continuousOnly,
    onClose: connector.close ? () => connector.close!() : undefined,
    ...("drain" in connector ? { onRead: (mode: RunMode) => void (connector.drain = mode === "available_now") } : {}),
  });
}
