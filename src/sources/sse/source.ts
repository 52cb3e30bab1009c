import type { Cursor } from "../../checkpoint/types.js";
import { redactUrl } from "../core/errors.js";
import { SSEClient, type SSEStats } from "./client.js";
import { eventJsonDecoder } from "../core/common.js";
import { decoderFrom, type PayloadDecoder } from "../core/decoders/index.js";
import { sseSpec, type SSEOptions } from "./spec.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { CursorMismatchError } from "../core/errors.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

export type SSEOffsetSourceOptions = Omit<SSEOptions, "lastEventId">;

const SSE_OFFSET_OPTIONS = optionNames<SSEOffsetSourceOptions>()(["fetch", "retry", "deserialize", "decoder", "headers", "eventTypes", "stallTimeoutMs", "drainIdleMs", "drainMaxMs", "dedupeWindow", "maxEventBytes", "onRetry"]);

/**
 * SSE as a StreamSink source. The cursor is the last event id (a string): after a commit it is
 * the id of the last event handed to the sink, and the next run sends it as `Last-Event-ID` so a
 * server that supports resuming replays exactly what follows.
 *
 * - An event without its own `id:` inherits the previous id and does not move the cursor.
 * - `available_now` ends once the stream has caught up: connected, and no event for `drainIdleMs`
 *   (keep-alive comments do not count as events), or after `drainMaxMs` in any case.
 * - Event data that is a JSON object is the record; any other data arrives as `{ data }`.
 *   Data that is not valid UTF-8 is quarantined with its exact bytes (I6).
 */
export class SSEOffsetSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  private readonly client: SSEClient;
  private readonly closer = new AbortController();
  private cursor: string | undefined;
  private readonly decoder: PayloadDecoder;

  constructor(
    url: string | URL,
    private readonly options: SSEOffsetSourceOptions = {},
  ) {
    refuseUnknownOptions("SSEOffsetSource", options, SSE_OFFSET_OPTIONS);
    this.client = new SSEClient(url, options);
    this.description = `sse ${redactUrl(this.client.url)}`;
    this.decoder = decoderFrom(options, "source sse", eventJsonDecoder);
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (cursor !== undefined && cursor !== null && typeof cursor !== "string") {
      throw new CursorMismatchError(
        `${this.description}: the stored cursor ${JSON.stringify(cursor)} is not an SSE event id; ` +
          `this checkpoint key belongs to another kind of source.`,
      );
    }
    this.cursor = cursor ?? undefined;
    this.client.setLastEventId(cursor ?? "");
  }

  /** The id of the last event handed out; the sink samples it right after each record. */
  currentCursor(): Cursor | undefined {
    return this.cursor;
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    const drain = options.mode === "available_now";
    const events = this.client.events({
      // close() must end a read that is parked on the network (the sink may stop with one pending).
      signal: AbortSignal.any([options.signal, this.closer.signal]),
      idleMs: drain ? this.options.drainIdleMs ?? sseSpec.options.drainIdleMs.default : undefined,
      maxMs: drain ? this.options.drainMaxMs ?? sseSpec.options.drainMaxMs.default : undefined,
    });
    for await (const e of events) {
      const meta = { event: e.type, id: e.lastEventId, hasId: e.hasId };
      // An event without its own id sits at "<last id>+<n>": stable across replays from that id.
      const position = e.lastEventId === "" ? null : e.sinceId === 0 ? e.lastEventId : `${e.lastEventId}+${e.sinceId}`;
      let record: SourceRecord;
      if (e.invalidUtf8) {
        record = { value: undefined, raw: e.invalidUtf8, decodeError: "event data is not valid UTF-8", position, meta, bytes: e.invalidUtf8.length };
      } else {
        const decoded = this.decoder.decode(e.data, EVENT_DATA);
        record = "error" in decoded
          ? { value: undefined, raw: e.data, decodeError: decoded.error, position, meta, bytes: e.data.length }
          : { value: decoded.value, raw: e.data, position, meta, bytes: e.data.length };
      }
      // Set before the yield: when the sink sees this record, the cursor covers it and nothing after.
      this.cursor = e.lastEventId;
      yield record;
    }
  }

  stats(): SSEStats {
    return this.client.stats();
  }

  /** Drop the connection and stop reconnecting. */
  async close(): Promise<void> {
    this.closer.abort();
  }
}

const EVENT_DATA = { name: "event data", missing: "event has no data" };
