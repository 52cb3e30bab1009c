import type { Cursor } from "../../checkpoint/types.js";
import { eventJsonDecoder } from "../core/common.js";
import { DECODE_OPTIONS, decoderFrom, rawPayload, type Deserialize, type PayloadDecoder } from "../core/decoders/index.js";
import { redactUrl } from "../core/errors.js";
import { WEBSOCKET_CONNECTOR_OPTIONS, WS_END, WS_IDLE, WebSocketConnector, type WebSocketStats } from "./client.js";
import { websocketSpec, type WebSocketOptions } from "./spec.js";
import type { OptionsInput } from "../core/spec.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

/** The options of WebSocketSource (the URL apart): WebSocketOptions and `drainIdleMs`. */
export type WebSocketSourceOptions = WebSocketOptions &
  Pick<OptionsInput<typeof websocketSpec>, "drainIdleMs" | Exclude<keyof typeof DECODE_OPTIONS, "deserialize">> & { deserialize?: Deserialize };

const WEBSOCKET_SOURCE_OPTIONS = optionNames<WebSocketSourceOptions>()(["retry", "headers", "onRetry", "subscribeMessage", "subscribeMessages", "protocols", "pingIntervalMs", "maxBuffered", "maxBufferedBytes", "overflow", "maxMessageBytes", "handshakeTimeoutMs", "deserialize", "decoder", "schemaRegistryUrl", "schemaRegistryAuth", "drainIdleMs"]);

/**
 * A WebSocket feed as a StreamSink source. It has no cursor (always `null`), so it never refuses
 * a checkpoint and never resumes from one: each run starts with whatever the server sends after
 * it connects.
 *
 * What a crash loses: messages sent while no run was connected, plus messages buffered here or
 * in the batch not yet committed — at-most-once for that window. Everything committed stays
 * committed. For guarantees across crashes, put a replayable transport (Kafka, a queue, an SSE
 * endpoint with ids) between the feed and the lake. Lint STREAM-004 flags `available_now` on it.
 */
export class WebSocketSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  private readonly connector: WebSocketConnector;
  private readonly decoder: PayloadDecoder;

  constructor(
    url: string | URL,
    private readonly options: WebSocketSourceOptions = {},
  ) {
    refuseUnknownOptions("WebSocketSource", options, WEBSOCKET_SOURCE_OPTIONS);
    // The connector refuses options it does not know: hand it only its own.
    const own = Object.entries(options).filter(([k]) => WEBSOCKET_CONNECTOR_OPTIONS.includes(k));
    this.connector = new WebSocketConnector(url, Object.fromEntries(own));
    this.description = `websocket ${redactUrl(this.connector.url)}`;
    this.decoder = decoderFrom(options, "source websocket", eventJsonDecoder);
  }

  /** Any stored cursor is accepted and ignored: there is nothing to seek to. */
  async seek(_cursor: Cursor | undefined): Promise<void> {}

  currentCursor(): Cursor | undefined {
    return null;
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    const idleMs = options.mode === "available_now" ? this.options.drainIdleMs ?? websocketSpec.options.drainIdleMs.default : undefined;
    while (true) {
      const m = await this.connector.take(idleMs, options.signal);
      if (m === WS_END || m === WS_IDLE) return;
      const position = { connection: m.connection, seq: m.seq };
      const meta = { binary: m.binary };
      const bytes = typeof m.data === "string" ? m.data.length : m.data.byteLength;
      // A binary frame reaches a binary decoder as its bytes (the connector hands UTF-8 ones over as text).
      const payload = m.binary && typeof m.data === "string" && this.decoder !== eventJsonDecoder ? Buffer.from(m.data, "utf8") : m.data;
      const pending = this.decoder.prepare?.([payload]);
      if (pending) await pending;
      const decoded = this.decoder.decode(payload, typeof payload === "string" ? MESSAGE : BINARY_MESSAGE);
      yield "error" in decoded
        ? { value: undefined, raw: rawPayload(this.decoder, payload), decodeError: decoded.error, position, meta, bytes }
        : { value: decoded.value, raw: m.data, position, meta, bytes };
    }
  }

  stats(): WebSocketStats {
    return this.connector.stats();
  }

  async close(): Promise<void> {
    await this.connector.close();
  }
}

const MESSAGE = { name: "message", missing: "empty message" };
const BINARY_MESSAGE = { name: "binary message", missing: "empty message" };
