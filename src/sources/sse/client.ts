import { ConfigError } from "../../errors.js";
import type { StreamConnector } from "../core/types.js";
import {
  backoffDelay,
  parseRetryAfter,
  resolveRetry,
  sleep,
  warnRetry,
  type ResolvedRetryPolicy,
} from "../core/backoff.js";
import { checkUrl, decodeEventData } from "../core/common.js";
import { ConnectorGaveUpError, ConnectorHttpError, SSEProtocolError, redactUrl } from "../core/errors.js";
import { SSEParser, type SSEEvent } from "./parser.js";
import { ReplayWindow } from "./replay-window.js";
import { SSE_DEFAULTS, type SSEOptions } from "./spec.js";
import { ConnectorClosedError, ConnectorNetworkError, ConnectorStallError } from "../core/errors.js";
import { LakeLogicError } from "../../errors.js";
import { errorText, redactText, safeCause, secretsOfHeaders, secretsOfUrl } from "../../util/redact.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

export type { SSEEvent } from "./parser.js";
export type { RetryInfo, RetryPolicy } from "../core/backoff.js";
export { decodeEventData } from "../core/common.js";
export { sseSpec, type SSEOptions } from "./spec.js";

export interface SSEStats {
  connects: number;
  /** Connections that ended (dropped, stalled, closed by the server) and were re-opened. */
  reconnects: number;
  stalls: number;
  /** Events dispatched by the parser (before filtering and de-duplication). */
  events: number;
  /** Events skipped as exact replays of recently delivered ones. */
  duplicates: number;
  /** Events skipped by `eventTypes`. */
  filtered: number;
  /** Non-200 answers. */
  httpErrors: number;
  lastError: string | undefined;
}

/** One event as the iterator API's `events()` yields it. */
export interface SSEMessage {
  /** The stream's last event id at this event (its own `id:` or inherited); "" when none yet. */
  id: string;
  /** Whether the event carried its own `id:`. */
  hasId: boolean;
  type: string;
  /** The data text as received. */
  data: string;
  /** A JSON object in `data`, else `{ data }` (never dropped). */
  value: unknown;
  /** The exact bytes when the data was not valid UTF-8. */
  invalidUtf8?: Uint8Array;
}

/** A parsed event plus where it sits relative to the last id. */
export interface SSEDelivered extends SSEEvent {
  /** 0 for an event with its own `id:`; n for the n-th event after it without one. */
  sinceId: number;
}

export interface ReadControl {
  signal: AbortSignal;
  /** End once no event arrived for this long while connected (available_now). */
  idleMs?: number;
  /** End after this long in any case (available_now). */
  maxMs?: number;
}

/** What one `events()` run keeps across its connections. */
interface ReadRun {
  /** When the run ends in any case (maxMs). */
  endAt: number;
  /** Consecutive failures that retrying may fix (network, 5xx, 429, stalls). */
  failures: number;
  /** Consecutive client-side failures (other 4xx, protocol errors). */
  clientFailures: number;
  connectedBefore: boolean;
  /** Time spent connected with no event arriving (see `read`). */
  quietMs: number;
}

const STALL = Symbol("stall");
const IDLE = Symbol("idle");

/**
 * The SSE client behind SSEConnector and SSEOffsetSource. It speaks the protocol over `fetch`
 * rather than the `eventsource` package because that package treats any non-200 answer (a 503
 * during a deploy, a 429) as final, reconnects at a fixed interval, has no stall detection and
 * sends `Last-Event-ID` only after it has seen an event itself.
 *
 * Reading is pull-driven: bytes are read from the socket only when the consumer asks for the
 * next event, so a slow consumer back-pressures the server through TCP and nothing is buffered
 * beyond one network chunk (I5).
 */
export class SSEClient {
  readonly url: string;
  private readonly retry: ResolvedRetryPolicy;
  private readonly eventTypes: ReadonlySet<string> | undefined;
  private readonly stallTimeoutMs: number;
  private readonly fetchImpl: typeof globalThis.fetch;
  /** What must never appear in a message: the URL's tokens, the credential headers' values. */
  private readonly secrets: readonly string[];
  /** Recently delivered events (id, position after it, type, data), to skip exact replays. */
  private readonly recent: ReplayWindow;
  /** The id the events since the last `id:` hang off, and how many came after it. */
  private anchorId = "";
  private sinceId = 0;
  private parser: SSEParser;
  /** The server's `retry:` field: the base of our backoff (the spec's reconnection time). */
  private retryBaseMs: number | undefined;
  private readonly stat: SSEStats = {
    connects: 0,
    reconnects: 0,
    stalls: 0,
    events: 0,
    duplicates: 0,
    filtered: 0,
    httpErrors: 0,
    lastError: undefined,
  };

  constructor(
    url: string | URL,
    private readonly options: SSEOptions = {},
  ) {
    this.url = checkSseUrl(url);
    this.secrets = [...secretsOfUrl(this.url), ...secretsOfHeaders(options.headers)];
    this.retry = resolveRetry(options.retry);
    this.eventTypes = options.eventTypes?.length ? new Set(options.eventTypes) : undefined;
    this.stallTimeoutMs = positive("stallTimeoutMs", options.stallTimeoutMs ?? SSE_DEFAULTS.stallTimeoutMs);
    this.recent = new ReplayWindow(nonNegative("dedupeWindow", options.dedupeWindow ?? SSE_DEFAULTS.dedupeWindow));
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.parser = new SSEParser(options.lastEventId ?? "", options.maxEventBytes ?? SSE_DEFAULTS.maxEventBytes);
  }

  /** The id sent as `Last-Event-ID` on the next connect. */
  get lastEventId(): string {
    return this.parser.lastEventId;
  }

  /** Position the client: the next connect sends this id (none when empty). */
  setLastEventId(id: string): void {
    this.parser = new SSEParser(id, this.options.maxEventBytes ?? SSE_DEFAULTS.maxEventBytes);
    this.recent.clear();
  }

  stats(): SSEStats {
    return { ...this.stat };
  }

  /**
   * Events, in order, across reconnects. Ends when `signal` aborts, the server answers 204
   * (the spec's "do not reconnect"), or — with `idleMs` — the stream has caught up.
   */
  async *events(control: ReadControl): AsyncGenerator<SSEDelivered> {
    const { signal } = control;
    const run: ReadRun = {
      endAt: control.maxMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + control.maxMs,
      failures: 0,
      clientFailures: 0,
      connectedBefore: false,
      quietMs: 0,
    };
    while (!signal.aborted && Date.now() < run.endAt) {
      const conn = new AbortController();
      const onAbort = () => conn.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      let failure: Error;
      try {
        const body = await this.connect(conn.signal, signal, run);
        if (!body) return;
        // A connection ends the run by returning (caught up, time is up, aborted) or fails by throwing.
        yield* this.read(body, control, run);
        return;
      } catch (err) {
        if (signal.aborted) return;
        failure = this.asFailure(err);
      } finally {
        signal.removeEventListener("abort", onAbort);
        conn.abort();
      }
      if (!(await this.retryAfter(failure, run, signal))) return;
    }
  }

  /**
   * Open the stream: its body, or undefined when there is nothing to read — the server said
   * 204 (the stream is over), or `signal` aborted. Throws what a retry may fix.
   */
  private async connect(connection: AbortSignal, signal: AbortSignal, run: ReadRun): Promise<ReadableStream<Uint8Array> | undefined> {
    let response: Response;
    try {
      response = await this.fetchImpl(this.url, { headers: this.requestHeaders(), signal: connection, redirect: "follow" });
    } catch (err) {
      if (signal.aborted) return undefined;
      throw new ConnectorNetworkError(`SSE ${redactUrl(this.url)}: cannot connect: ${errorText(err, this.secrets)}`, {
        cause: safeCause(err, this.secrets),
      });
    }
    if (response.status === 204) {
      // The server's way of saying "this stream is over; do not reconnect".
      await response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    if (response.status !== 200) {
      this.stat.httpErrors++;
      const body = await readSnippet(response);
      throw new ConnectorHttpError("SSE", this.url, response.status, response.statusText, {
        body,
        retryAfterMs: parseRetryAfter(response.headers.get("retry-after")),
        secrets: this.secrets,
      });
    }
    const type = response.headers.get("content-type") ?? "";
    if (!/^text\/event-stream\b/i.test(type)) {
      await response.body?.cancel().catch(() => undefined);
      throw new ConnectorHttpError("SSE", this.url, 200, "", {
        body: `expected Content-Type text/event-stream, got ${JSON.stringify(type || "(none)")}`,
        secrets: this.secrets,
      });
    }
    if (!response.body) throw new ConnectorNetworkError(`SSE ${redactUrl(this.url)}: the response has no body`);

    this.stat.connects++;
    if (run.connectedBefore) this.stat.reconnects++;
    run.connectedBefore = true;
    this.parser.reset();
    // The server resumes right after the id we sent: count id-less events from there.
    this.anchorId = this.parser.lastEventId;
    this.sinceId = 0;
    return response.body;
  }

  /**
   * The events of one connection. Returns once the run is over (caught up, out of time, aborted);
   * throws when the connection stalls or the server closes it.
   */
  private async *read(body: ReadableStream<Uint8Array>, control: ReadControl, run: ReadRun): AsyncGenerator<SSEDelivered> {
    const reader = body.getReader();
    let receivedBytes = false;
    while (true) {
      // "Caught up" (idleMs) is time spent connected and waiting on the network with no event
      // arriving, summed across reconnects. Time the consumer spends on a batch, or we spend
      // reconnecting, is not the stream being quiet.
      const idleLeft = control.idleMs === undefined ? Number.POSITIVE_INFINITY : control.idleMs - run.quietMs;
      const endLeft = run.endAt - Date.now();
      if (idleLeft <= 0 || endLeft <= 0) return;
      const waitMs = Math.min(this.stallTimeoutMs, idleLeft, endLeft);
      const which = waitMs === this.stallTimeoutMs ? STALL : IDLE;
      const read = reader.read();
      const waitStarted = Date.now();
      const got = await raceTimer(read, waitMs, which);
      run.quietMs += Date.now() - waitStarted;
      if (got === IDLE) {
        read.catch(() => undefined);
        return;
      }
      if (got === STALL) {
        read.catch(() => undefined);
        this.stat.stalls++;
        throw new ConnectorStallError(
          `SSE ${redactUrl(this.url)}: no bytes (not even a keep-alive) for ${this.stallTimeoutMs} ms; reconnecting`,
        );
      }
      if (got.done) {
        throw new ConnectorClosedError(`SSE ${redactUrl(this.url)}: the server closed the stream; reconnecting`);
      }
      if (!receivedBytes && got.value.length > 0) {
        // A connection that delivers is healthy again: start the backoff over.
        receivedBytes = true;
        run.failures = 0;
      }
      const events = this.parser.push(got.value);
      // Client-side trouble (4xx, a protocol error) is forgiven only once an event got through.
      if (events.length > 0) run.clientFailures = 0;
      if (this.parser.retryMs !== undefined) this.retryBaseMs = this.parser.retryMs;
      for (const parsed of events) {
        run.quietMs = 0;
        const event = this.deliverable(parsed);
        if (!event) continue;
        yield event;
        if (control.signal.aborted) return;
      }
    }
  }

  /** A parsed event placed after the last id, or undefined when it is a replay or filtered out. */
  private deliverable(parsed: SSEEvent): SSEDelivered | undefined {
    this.stat.events++;
    if (parsed.hasId || parsed.lastEventId !== this.anchorId) {
      this.anchorId = parsed.lastEventId;
      this.sinceId = 0;
    } else {
      this.sinceId++;
    }
    const event: SSEDelivered = { ...parsed, sinceId: this.sinceId };
    if (this.isReplay(event)) {
      this.stat.duplicates++;
      return undefined;
    }
    if (this.eventTypes && !this.eventTypes.has(event.type)) {
      this.stat.filtered++;
      return undefined;
    }
    return event;
  }

  /**
   * After a failed connection: wait the backoff and return true to reconnect, false when the
   * run ended meanwhile; throw when the policy gives up.
   */
  private async retryAfter(failure: Error, run: ReadRun, signal: AbortSignal): Promise<boolean> {
    this.stat.lastError = redactText(failure.message, this.secrets);
    const http = failure instanceof ConnectorHttpError ? failure : undefined;
    if ((http && !http.retriable) || failure instanceof SSEProtocolError) {
      run.clientFailures++;
      // A wrong URL, wrong credentials or a broken feed will not fix themselves: surface it.
      if (run.clientFailures >= this.retry.maxClientErrorAttempts) throw failure;
    } else {
      run.failures++;
      if (run.failures >= this.retry.maxAttempts) throw new ConnectorGaveUpError("SSE", this.url, run.failures, failure.message, failure);
    }
    const delayMs = backoffDelay(this.retry, run.failures + run.clientFailures, {
      baseMs: this.retryBaseMs,
      floorMs: http?.retryAfterMs,
    });
    (this.options.onRetry ?? warnRetry)({ connector: "SSE", attempt: run.failures + run.clientFailures, delayMs, error: failure });
    return sleep(Math.min(delayMs, Math.max(0, run.endAt - Date.now())), signal);
  }

  /** A failed connection as one of ours: a library's error may carry the URL or what the server said. */
  private asFailure(err: unknown): Error {
    if (err instanceof LakeLogicError) return err;
    return new ConnectorNetworkError(`SSE ${redactUrl(this.url)}: the connection failed: ${errorText(err, this.secrets)}`, {
      cause: safeCause(err, this.secrets),
    });
  }

  private requestHeaders(): Record<string, string> {
    const headers: Record<string, string> = {
      accept: "text/event-stream",
      "cache-control": "no-cache",
      ...this.options.headers,
    };
    for (const k of Object.keys(headers)) if (k.toLowerCase() === "last-event-id") delete headers[k];
    // Sent on the first connect too, so a restarted run resumes where its checkpoint says.
    if (this.parser.lastEventId !== "") headers["last-event-id"] = this.parser.lastEventId;
    return headers;
  }

  /**
   * An exact replay of a recently delivered event: same id, same place after it (for events
   * without their own id), same type and data. Servers resend these after a reconnect (inclusive
   * resume, or resuming a little early). Only exact copies are skipped, so an id reused for new
   * data still gets through; without any id there is no position, so nothing is skipped.
   */
  private isReplay(event: SSEDelivered): boolean {
    return event.lastEventId !== "" && this.recent.seen(event);
  }
}

const SSE_CONNECTOR_OPTIONS = optionNames<SSEOptions>()(["fetch", "retry", "deserialize", "decoder", "headers", "eventTypes", "stallTimeoutMs", "drainIdleMs", "drainMaxMs", "dedupeWindow", "maxEventBytes", "onRetry", "lastEventId"]);

/**
 * SSE with the iterator API: `for await (const e of new SSEConnector(url).stream())`.
 * For StreamSink use `SSEOffsetSource`, which commits the last event id as the cursor.
 */
export class SSEConnector implements StreamConnector {
  private readonly client: SSEClient;
  private readonly closer = new AbortController();

  constructor(url: string | URL, options: SSEOptions = {}) {
    refuseUnknownOptions("SSEConnector", options, SSE_CONNECTOR_OPTIONS);
    this.client = new SSEClient(url, options);
  }

  /** Decoded event data: a JSON object, or `{ data }` for anything else. */
  async *stream(): AsyncGenerator<unknown> {
    for await (const m of this.events()) yield m.value;
  }

  /** Whole events: id, type, data text and decoded value. */
  async *events(): AsyncGenerator<SSEMessage> {
    for await (const e of this.client.events({ signal: this.closer.signal })) yield toMessage(e);
  }

  get lastEventId(): string {
    return this.client.lastEventId;
  }

  stats(): SSEStats {
    return this.client.stats();
  }

  async close(): Promise<void> {
    this.closer.abort();
  }
}

export function toMessage(e: SSEEvent): SSEMessage {
  const m: SSEMessage = { id: e.lastEventId, hasId: e.hasId, type: e.type, data: e.data, value: decodeEventData(e.data) };
  if (e.invalidUtf8) m.invalidUtf8 = e.invalidUtf8;
  return m;
}

function positive(option: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(option, `expected a number > 0; got ${JSON.stringify(n)}`);
  return n;
}

function nonNegative(option: string, n: number): number {
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(option, `expected a whole number >= 0; got ${JSON.stringify(n)}`);
  return n;
}

/**
 * The stream URL, checked. fetch refuses a URL with user-info on every attempt, so it is a
 * configuration error at once rather than a connection that is retried forever.
 */
function checkSseUrl(url: string | URL): string {
  let checked: string;
  try {
    checked = checkUrl(url, ["http:", "https:"], "SSE");
  } catch (err) {
    // The message quotes the URL it could not parse, user-info included.
    if (err instanceof ConfigError) throw new ConfigError(err.option, redactText(err.detail));
    throw err;
  }
  const u = new URL(checked);
  if (u.username || u.password) {
    throw new ConfigError(
      "url",
      `SSE ${redactUrl(u)}: the URL carries credentials (user-info before "@"), which fetch never sends; ` +
        `remove them from the URL and pass them in the \`headers\` option instead, e.g. ` +
        `{"Authorization": "Basic <base64 of user:password>"} or {"Authorization": "Bearer <token>"}`,
    );
  }
  return checked;
}

async function raceTimer<T, S extends symbol>(p: Promise<T>, ms: number, tag: S): Promise<T | S> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<S>((resolve) => (timer = setTimeout(() => resolve(tag), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The start of an error body, for the message; never waits long or reads much. */
async function readSnippet(response: Response): Promise<string | undefined> {
  if (!response.body) return undefined;
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < 1024) {
      const got = await raceTimer(reader.read(), 1000, STALL);
      if (got === STALL || got.done) break;
      chunks.push(got.value);
      n += got.value.length;
    }
  } catch {
    // The body is only decoration for the message.
  } finally {
    reader.cancel().catch(() => undefined);
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, 1024));
}

