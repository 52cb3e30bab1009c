import { resolveRetry, type RetryInfo, type RetryPolicy } from "../core/backoff.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { parseProcessingTime } from "../../contract/normalise/trigger.js";

export const HTTP_DEFAULTS = {
  intervalMs: 60_000,
  timeoutMs: 30_000,
  maxResponseBytes: 64 * 1024 * 1024,
  // A poll is one request: a server that stays down is an error after a few tries, not an empty poll.
  retry: { maxAttempts: 5 },
};

/** Shared by the JSON config of `http` (and documented from it). */
export const httpSpec = {
  type: "http",
  kind: "cursor",
  summary:
    "A JSON document polled over HTTP(S) (a REST endpoint or a feed file). Each poll is a conditional GET " +
    "(`If-None-Match` / `If-Modified-Since`; 304 means nothing new); the records are the array at `recordsPath`. " +
    "The cursor is the last ETag / Last-Modified and, with `watermark`, the highest watermark committed, so a " +
    "restart skips records already written. `available_now` polls once; `continuous` polls every `interval`.",
  options: {
    url: { type: "string", required: true, description: "The URL to poll (http or https)." },
    headers: {
      type: "object",
      description: "Request headers, e.g. `{\"Authorization\": \"Bearer ${ENV:API_TOKEN}\", \"User-Agent\": \"my-app\"}`.",
      secret: true,
    },
    interval: {
      type: "string",
      description: "`continuous`: time between the starts of two polls, e.g. `\"60 seconds\"` or `\"60s\"` (default 60 s).",
    },
    intervalMs: { type: "integer", min: 1, description: "The same as `interval`, in milliseconds." },
    recordsPath: {
      type: "string",
      description:
        "Dotted path to the array of records in the response, e.g. `features` (GeoJSON) or `data.items`. " +
        "Absent: the response itself when it is an array, else the response as one record. A `null` there is no records.",
    },
    fields: {
      type: "string[]",
      description:
        "For records that are JSON arrays (OpenSky `states`): the names of positions 0, 1, 2, …; each row becomes an object. " +
        "Positions past the list are dropped; a row that is not an array is quarantined.",
    },
    watermark: {
      type: "string",
      description:
        "Dotted path of a field in each record that grows with new data, e.g. `properties.updated` or `created_at`. " +
        "Records are handed over in its order and those at or below the committed watermark are skipped. " +
        "Numbers compare as numbers (64-bit exact), times as instants (ISO-8601 at any offset, read as UTC without one; RFC 2822 dates); a record whose value is neither is handed over without moving the watermark.",
    },
    timeoutMs: { type: "integer", min: 1, default: HTTP_DEFAULTS.timeoutMs, description: "One request (headers and body) may take this long; longer counts as a failed attempt." },
    maxResponseBytes: {
      type: "integer",
      min: 1024,
      default: HTTP_DEFAULTS.maxResponseBytes,
      description: "Largest response body; a larger one fails the poll (raise it, or narrow the request).",
    },
    retry: {
      type: "object",
      description:
        "Retries of a failed poll (network error, timeout, 408, 429, 5xx): `initialDelayMs` (1000), `maxDelayMs` (30000), " +
        "`multiplier` (2), `jitter` (0.3), `maxAttempts` (5). A `Retry-After` on 429/503 (seconds or an HTTP date) is waited out first.",
    },
  },
  check(o) {
    if (o.interval !== undefined && o.intervalMs !== undefined) return { option: "interval", message: "give interval or intervalMs, not both" };
    if (typeof o.interval === "string" && parseProcessingTime(o.interval) === undefined) {
      return { option: "interval", message: `expected an interval such as "60 seconds" or 60s; got ${JSON.stringify(o.interval)}` };
    }
    try {
      resolveRetry({ ...HTTP_DEFAULTS.retry, ...(o.retry as RetryPolicy | undefined) });
    } catch (err) {
      return { option: "retry", message: (err as Error).message };
    }
    return undefined;
  },
} as const satisfies ComponentSpec;

/** How the source waits and tells time; tests pass their own so nothing depends on the wall clock. */
export interface HttpClock {
  now(): number;
  /** Resolves after `ms`, or early (false) when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<boolean>;
}

/** The options of HttpPollSource (the URL apart): those of `httpSpec`, typed, and what only code can give. */
export type HttpPollOptions = Omit<OptionsInput<typeof httpSpec>, "url" | "headers" | "retry"> & {
  headers?: Record<string, string>;
  retry?: RetryPolicy;
  /** Called before every retry wait. Default: one warning line on stderr. */
  onRetry?: (info: RetryInfo) => void;
  /** A fetch implementation (proxies, custom agents). Default: the global fetch. */
  fetch?: typeof globalThis.fetch;
  clock?: HttpClock;
  /** For backoff jitter (tests pass a constant). */
  random?: () => number;
};
