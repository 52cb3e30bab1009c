import { LakeLogicError, NonRetriableError } from "../../errors.js";
import { redactText, redactUrl, safeCause, secretsOfUrl } from "../../util/redact.js";

export { redactUrl } from "../../util/redact.js";

function hintFor(status: number): string {
  if (status === 401) return "the server wants credentials; check the `headers` option (e.g. Authorization)";
  if (status === 403) return "the credentials were refused; check the `headers` option and the account's permissions";
  if (status === 404) return "nothing at this URL; check the `url` option";
  if (status === 410) return "the stream is gone; check the `url` option";
  if (status === 429) return "rate limited; retrying after the server's Retry-After";
  if (status === 408) return "the server timed out the request; retrying";
  if (status >= 500) return "server error; retrying with backoff";
  return "the request was rejected; check the `url` and `headers` options";
}

/** The server answered the connection attempt with an HTTP status that is not a stream. */
export class ConnectorHttpError extends LakeLogicError {
  readonly status: number;
  readonly url: string;
  /** Seconds the server asked us to wait (Retry-After), if it said. */
  readonly retryAfterMs: number | undefined;

  constructor(
    connector: string,
    url: string | URL,
    status: number,
    statusText: string,
    options: { body?: string; retryAfterMs?: number; secrets?: readonly string[] } = {},
  ) {
    const shown = redactUrl(url);
    // A server's error page may echo the URL's token or the Authorization header it was sent.
    const secrets = [...secretsOfUrl(url), ...(options.secrets ?? [])];
    const body = options.body === undefined ? undefined : redactText(options.body, secrets).trim().replace(/\s+/g, " ").slice(0, 200);
    const reason = statusText ? ` ${redactText(statusText, secrets)}` : "";
    super(
      "CONNECTOR_HTTP",
      `${connector} ${shown}: HTTP ${status}${reason} — ${hintFor(status)}` +
        (body ? ` (server said: ${JSON.stringify(body)})` : ""),
      // Worth retrying: 408, 429 and 5xx. Other 4xx are retried only a few times.
      { retriable: isRetryableStatus(status) },
    );
    this.status = status;
    this.url = shown;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** The connection could not be (re)established within the retry policy. */
export class ConnectorGaveUpError extends NonRetriableError {
  readonly attempts: number;
  constructor(connector: string, url: string | URL, attempts: number, reason: string, cause: unknown) {
    super(
      "CONNECTOR_GAVE_UP",
      `${connector} ${redactUrl(url)}: gave up after ${attempts} failed connection attempt${attempts === 1 ? "" : "s"}: ` +
        redactText(reason, secretsOfUrl(url)),
      // The connector's own retry policy is spent: retrying at once would only repeat it.
      { cause: safeCause(cause, secretsOfUrl(url)) },
    );
    this.attempts = attempts;
  }
}

/** A push source's bounded buffer was full and its overflow policy is `fail` (I5). */
export class BufferOverflowError extends LakeLogicError {
  constructor(connector: string, limit: string) {
    super(
      "BUFFER_OVERFLOW",
      `${connector}: the receive buffer is full (${limit}) and overflow is "fail". The consumer is slower ` +
        `than the feed: raise maxBuffered, make batches faster, or choose overflow "block" (pause reading) ` +
        `or "drop-oldest" (lose the oldest buffered messages, counted in stats().dropped).`,
    );
  }
}

/** The byte stream broke the SSE protocol in a way that cannot be skipped (an endless line). */
export class SSEProtocolError extends LakeLogicError {
  constructor(message: string) {
    super("SSE_PROTOCOL", message);
  }
}

/** A connection failed at the network level (refused, reset, DNS); the connector reconnects. */
export class ConnectorNetworkError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("CONNECTOR_NETWORK", message, options);
  }
}

/** A connection went silent past its stall timeout; the connector reconnects. */
export class ConnectorStallError extends LakeLogicError {
  constructor(message: string) {
    super("CONNECTOR_STALL", message);
  }
}

/** The server closed a stream that should go on; the connector reconnects. */
export class ConnectorClosedError extends LakeLogicError {
  constructor(message: string) {
    super("CONNECTOR_CLOSED", message);
  }
}

/** The stored cursor was written by another kind of source (or another topic): this key is not this source's. */
export class CursorMismatchError extends NonRetriableError {
  constructor(message: string) {
    super("CURSOR_MISMATCH", message);
  }
}

/** The stored cursor lies beyond what the source holds (truncated, replaced, recreated): resuming could skip or repeat data. */
export class CursorBeyondEndError extends NonRetriableError {
  constructor(message: string) {
    super("CURSOR_BEYOND_END", message);
  }
}

/** A source was used twice at once (a second read or a seek during a read): a bug in the caller. */
export class SourceBusyError extends NonRetriableError {
  constructor(message: string) {
    super("SOURCE_BUSY", message);
  }
}

/** A source was used after close(); a new one can be made. */
export class SourceClosedError extends LakeLogicError {
  constructor(description: string) {
    super("CLOSED", `${description}: closed`);
  }
}

/** A push endpoint was asked for its address before it listened: a bug in the caller. */
export class SourceNotStartedError extends NonRetriableError {
  constructor(description: string) {
    super("NOT_STARTED", `${description}: not listening yet; call start() first`);
  }
}

/** A push endpoint could not listen (e.g. the port is taken); it may be free later. */
export class ListenError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("LISTEN_FAILED", message, options);
  }
}
