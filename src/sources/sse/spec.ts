import { resolveRetry, type RetryInfo, type RetryPolicy } from "../core/backoff.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { TEXT_DECODE_OPTIONS, type Deserialize } from "../core/decoders/index.js";

export const SSE_DEFAULTS = { stallTimeoutMs: 60_000, drainIdleMs: 2000, drainMaxMs: 300_000, dedupeWindow: 1000, maxEventBytes: 16 * 1024 * 1024 };

/** Shared by the JSON config of `sse` (and documented from it). */
export const sseSpec = {
  type: "sse",
  kind: "cursor",
  summary:
    "Server-Sent Events over HTTP(S). The cursor is the last event id, sent as `Last-Event-ID` on every " +
    "connect and reconnect, so a restarted stream resumes after its last committed event (when the server " +
    "supports resuming).",
  options: {
    url: { type: "string", required: true, description: "Stream URL (http or https)." },
    headers: { type: "object", description: "Request headers, e.g. `{\"Authorization\": \"Bearer …\"}`.", secret: true },
    eventTypes: { type: "string[]", description: "Only these `event:` types become records (default: all)." },
    retry: {
      type: "object",
      description:
        "Reconnect policy: `initialDelayMs` (1000; the server's `retry:` replaces it), `maxDelayMs` (30000), " +
        "`multiplier` (2), `jitter` (0.3), `maxAttempts` (unlimited), `maxClientErrorAttempts` (3, for 4xx other than 408/429).",
    },
    stallTimeoutMs: { type: "integer", min: 1, default: SSE_DEFAULTS.stallTimeoutMs, description: "No bytes (not even a keep-alive) for this long: reconnect." },
    drainIdleMs: {
      type: "integer",
      min: 1,
      default: SSE_DEFAULTS.drainIdleMs,
      description: "`available_now`: caught up once no event arrived for this long while connected; the run then ends.",
    },
    drainMaxMs: { type: "integer", min: 1, default: SSE_DEFAULTS.drainMaxMs, description: "`available_now`: end the run after this long even if events keep coming." },
    dedupeWindow: {
      type: "integer",
      min: 0,
      default: SSE_DEFAULTS.dedupeWindow,
      description: "Skip exact replays (same id, type and data) of the last N events, as servers send after a reconnect. 0 = off.",
    },
    maxEventBytes: { type: "integer", min: 1024, default: SSE_DEFAULTS.maxEventBytes, description: "Longest line or event; longer is a protocol error." },
    ...TEXT_DECODE_OPTIONS,
  },
  check(o) {
    try {
      resolveRetry(o.retry as RetryPolicy | undefined);
    } catch (err) {
      return { option: "retry", message: (err as Error).message };
    }
    return undefined;
  },
} as const satisfies ComponentSpec;

/**
 * The options of SSEConnector and SSEClient (the URL apart): those of `sseSpec`, with `headers`
 * and `retry` typed, and what only code can give.
 */
export type SSEOptions = Omit<OptionsInput<typeof sseSpec>, "url" | "headers" | "retry" | "deserialize"> & {
  /** An event-data deserializer of your own (see TEXT_DECODE_OPTIONS); StreamSink sources only. */
  deserialize?: Deserialize;
  /** Request headers (e.g. Authorization). `Last-Event-ID` is set by the connector. */
  headers?: Record<string, string>;
  /** Reconnect policy: exponential backoff with jitter and a cap. */
  retry?: RetryPolicy;
  /** Start after this event id (the iterator API; SSEOffsetSource takes it from the checkpoint). */
  lastEventId?: string;
  /** Called before every reconnect wait. Default: one warning line on stderr. */
  onRetry?: (info: RetryInfo) => void;
  /** A fetch implementation (proxies, custom agents). Default: the global fetch. */
  fetch?: typeof globalThis.fetch;
};
