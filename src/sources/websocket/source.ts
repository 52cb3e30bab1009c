import type { Cursor } from "../../checkpoint/types.js";
import { decodeEventData } from "../core/common.js";
import { redactUrl } from "../core/errors.js";
import type { SourceFactory } from "../core/registry.js";
import { WS_END, WS_IDLE, WebSocketConnector, type WebSocketStats } from "./connector.js";
import { websocketSpec, type WebSocketOptions } from "./spec.js";
import type { OptionsInput } from "../core/spec.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";

/** The options of WebSocketSource (the URL apart): WebSocketOptions and `drainIdleMs`. */
export type WebSocketSourceOptions = WebSocketOptions & Pick<OptionsInput<typeof websocketSpec>, "drainIdleMs">;

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

  constructor(
    url: string | URL,
    private readonly options: WebSocketSourceOptions = {},
  ) {
    this.connector = new WebSocketConnector(url, options);
    this.description = `websocket ${redactUrl(this.connector.url)}`;
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
      if (typeof m.data === "string") {
        yield { value: decodeEventData(m.data), raw: m.data, position, meta, bytes: m.data.length };
      } else {
        yield { value: undefined, raw: m.data, decodeError: "binary message is not UTF-8 text", position, meta, bytes: m.data.byteLength };
      }
    }
  }

  stats(): WebSocketStats {
    return this.connector.stats();
  }

  async close(): Promise<void> {
    await this.connector.close();
  }
}

/** `{ "type": "websocket", "url": "wss://...", "subscribeMessage": {...} }` */
export const websocketSourceFactory: SourceFactory<typeof websocketSpec> = {
  spec: websocketSpec,
  create(o) {
    const { url, headers, subscribeMessages, ...rest } = o;
    return new WebSocketSource(url, {
      ...rest,
      // A JSON `headers` object goes to the handshake as it is, which sends each value as text.
      headers: headers as Record<string, string> | undefined,
      // websocketSpec.check accepts only a list here.
      subscribeMessages: Array.isArray(subscribeMessages) ? subscribeMessages : undefined,
    });
  },
};
