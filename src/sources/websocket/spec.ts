import { resolveRetry, type RetryInfo, type RetryPolicy } from "../core/backoff.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { DECODE_OPTIONS } from "../core/decoders/index.js";

/**
 * What happens when the receive buffer is full (I5):
 * - `block` — stop reading the socket until the consumer has taken half the buffer; the server
 *   sees TCP backpressure (some servers then disconnect slow clients; we reconnect and resubscribe).
 * - `drop-oldest` — discard the oldest buffered message, counted in `stats().dropped`.
 * - `fail` — end the stream with BufferOverflowError.
 */
export type OverflowPolicy = "block" | "drop-oldest" | "fail";
export const OVERFLOW_POLICIES: readonly OverflowPolicy[] = ["block", "drop-oldest", "fail"];

export const WS_DEFAULTS = {
  pingIntervalMs: 30_000,
  maxBuffered: 10_000,
  maxBufferedBytes: 64 * 1024 * 1024,
  overflow: "block" as OverflowPolicy,
  maxMessageBytes: 16 * 1024 * 1024,
  handshakeTimeoutMs: 10_000,
};

export const websocketSpec = {
  type: "websocket",
  kind: "push",
  peerDependency: "ws",
  summary:
    "WebSocket feed. No cursor: a crash loses the messages buffered or in the uncommitted batch, and messages " +
    "sent while no run is connected are never seen (at-most-once for that window). Run it `continuous`; " +
    "lint STREAM-004 warns about `available_now`.",
  options: {
    url: { type: "string", required: true, description: "ws:// or wss:// URL." },
    subscribeMessage: { type: "any", description: "Sent after every (re)connect: a string as is, anything else as JSON." },
    subscribeMessages: { type: "any", description: "A list of subscribe messages, sent in order after `subscribeMessage`." },
    headers: { type: "object", description: "Handshake headers, e.g. Authorization.", secret: true },
    protocols: { type: "string[]", description: "WebSocket sub-protocols." },
    pingIntervalMs: { type: "integer", min: 0, default: WS_DEFAULTS.pingIntervalMs, description: "Ping period; no pong or message by the next ping: reconnect. 0 = off." },
    maxBuffered: { type: "integer", min: 1, default: WS_DEFAULTS.maxBuffered, description: "Most messages held between socket and batch." },
    maxBufferedBytes: { type: "integer", min: 1, default: WS_DEFAULTS.maxBufferedBytes, description: "Most bytes held between socket and batch." },
    overflow: {
      type: "string",
      enum: OVERFLOW_POLICIES,
      default: WS_DEFAULTS.overflow,
      description: "Full buffer: `block` pauses reading (TCP backpressure), `drop-oldest` discards and counts, `fail` ends the run.",
    },
    maxMessageBytes: { type: "integer", min: 1, default: WS_DEFAULTS.maxMessageBytes, description: "Largest single message." },
    retry: {
      type: "object",
      description:
        "Reconnect policy: `initialDelayMs` (1000), `maxDelayMs` (30000), `multiplier` (2), `jitter` (0.3), " +
        "`maxAttempts` (unlimited), `maxClientErrorAttempts` (3, for handshake 4xx other than 408/429).",
    },
    handshakeTimeoutMs: { type: "integer", min: 1, default: WS_DEFAULTS.handshakeTimeoutMs, description: "Opening handshake time limit." },
    drainIdleMs: {
      type: "integer",
      min: 1,
      default: 2000,
      description: "`available_now` only (not recommended, see STREAM-004): end the run once no message arrived for this long.",
    },
    ...DECODE_OPTIONS,
  },
  check(o) {
    try {
      resolveRetry(o.retry as RetryPolicy | undefined);
    } catch (err) {
      return { option: "retry", message: (err as Error).message };
    }
    if (o.subscribeMessages !== undefined && !Array.isArray(o.subscribeMessages)) {
      return { option: "subscribeMessages", message: `expected a list; got ${JSON.stringify(o.subscribeMessages)}` };
    }
    return undefined;
  },
} as const satisfies ComponentSpec;

/**
 * The options of WebSocketConnector (the URL apart): those of `websocketSpec` but `drainIdleMs`
 * (see WebSocketSourceOptions), with `headers`, `subscribeMessages` and `retry` typed, and what
 * only code can give.
 */
export type WebSocketOptions = Omit<OptionsInput<typeof websocketSpec>, "url" | "drainIdleMs" | "headers" | "subscribeMessages" | "retry" | keyof typeof DECODE_OPTIONS> & {
  /** Handshake headers (e.g. Authorization). */
  headers?: Record<string, string>;
  /** Several subscribe messages, sent in order after `subscribeMessage`. */
  subscribeMessages?: unknown[];
  /** Reconnect policy: exponential backoff with jitter and a cap. */
  retry?: RetryPolicy;
  /** Called before every reconnect wait. Default: one warning line on stderr. */
  onRetry?: (info: RetryInfo) => void;
};
