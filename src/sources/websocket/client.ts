import type { ClientRequest, IncomingMessage } from "node:http";
import { waitUntil } from "../../util/wait.js";
import type { ClientOptions, RawData, WebSocket as WsSocket } from "ws";
import { ConfigError } from "../../errors.js";
import type { StreamConnector } from "../core/types.js";
import {
  backoffDelay,
  parseRetryAfter,
  resolveRetry,
  warnRetry,
  type ResolvedRetryPolicy,
} from "../core/backoff.js";
import { BufferOverflowError, ConnectorGaveUpError, ConnectorHttpError, redactUrl } from "../core/errors.js";
import { requirePeer } from "../core/spec.js";
import { checkUrl, decodeEventData } from "../core/common.js";
import { OVERFLOW_POLICIES, WS_DEFAULTS, type OverflowPolicy, type WebSocketOptions } from "./spec.js";
import { ConnectorClosedError, ConnectorNetworkError, ConnectorStallError } from "../core/errors.js";
import { errorText, redactText, safeCause, secretsOfHeaders, secretsOfUrl } from "../../util/redact.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";

export { OVERFLOW_POLICIES, websocketSpec, type OverflowPolicy, type WebSocketOptions } from "./spec.js";

export interface WebSocketMessage {
  /** Text, or the bytes of a binary message that is not UTF-8 text. */
  data: string | Uint8Array;
  binary: boolean;
  /** Which connection (1, 2, …) and which message on it: for logs and quarantine positions. */
  connection: number;
  seq: number;
}

export interface WebSocketStats {
  connects: number;
  reconnects: number;
  received: number;
  /** Messages discarded by overflow `drop-oldest`. */
  dropped: number;
  /** Times reading was paused because the buffer was full (overflow `block`). */
  pauses: number;
  paused: boolean;
  buffered: number;
  bufferedBytes: number;
  /** Connections ended because a ping went unanswered. */
  stalls: number;
  lastError: string | undefined;
}

export const WS_END = Symbol("end");
export const WS_IDLE = Symbol("idle");

type WsModule = { WebSocket: new (url: string, protocols: string[] | undefined, options: ClientOptions) => WsSocket };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The options a WebSocketConnector takes (WebSocketSource passes on only these). */
/** The options with the URL among them: `new WebSocketConnector({ url, subscribeMessage })`. */
export interface WebSocketConnectorConfig extends WebSocketOptions {
  url: string | URL;
}

export const WEBSOCKET_CONNECTOR_OPTIONS = optionNames<WebSocketOptions>()(["retry", "headers", "onRetry", "subscribeMessage", "subscribeMessages", "protocols", "pingIntervalMs", "maxBuffered", "maxBufferedBytes", "overflow", "maxMessageBytes", "handshakeTimeoutMs"]);

/**
 * WebSocket with the iterator API (`for await (const e of connector.stream())`). It reconnects
 * with exponential backoff and jitter, re-sends the subscribe message(s) on every connection,
 * detects dead links with ping/pong, and holds received messages in a bounded buffer with a
 * declared overflow policy.
 *
 * A WebSocket has no cursor: messages sent while no one is connected, and messages buffered
 * here but not yet committed when the process dies, are lost. See docs/connectors.md.
 */
export class WebSocketConnector implements StreamConnector {
  readonly url: string;
  private readonly retry: ResolvedRetryPolicy;
  private readonly maxBuffered: number;
  private readonly maxBufferedBytes: number;
  private readonly overflow: OverflowPolicy;
  private readonly pingIntervalMs: number;
  private readonly subscribe: string[];
  /** What must never appear in a message: user-info (ws sends it as Basic auth), tokens, credential headers. */
  private readonly secrets: readonly string[];

  private readonly buffer: Array<WebSocketMessage | undefined> = [];
  private head = 0;
  private bytes = 0;
  private waiter: (() => void) | undefined;

  private started = false;
  private closed = false;
  private fatal: Error | undefined;
  private ws: WsSocket | undefined;
  private paused = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private clientFailures = 0;
  private connection = 0;
  private readonly stat = { connects: 0, reconnects: 0, received: 0, dropped: 0, pauses: 0, stalls: 0, lastError: undefined as string | undefined };

  private readonly options: WebSocketOptions;

  /**
   * `new WebSocketConnector(url, options)`, or with the URL among the options as the streaming
   * guide writes it: `new WebSocketConnector({ url, subscribeMessage })`.
   */
  constructor(urlOrConfig: string | URL | WebSocketConnectorConfig, more?: WebSocketOptions) {
    let url: string | URL;
    let options: WebSocketOptions;
    if (typeof urlOrConfig === "string" || urlOrConfig instanceof URL) {
      url = urlOrConfig;
      options = more ?? {};
    } else {
      if (more !== undefined) throw new ConfigError("WebSocketConnector", "give the options once: (url, options) or ({ url, ...options })");
      ({ url, ...options } = urlOrConfig);
    }
    this.options = options;
    refuseUnknownOptions("WebSocketConnector", options, WEBSOCKET_CONNECTOR_OPTIONS);
    this.url = checkWsUrl(url);
    this.secrets = [...secretsOfUrl(this.url), ...secretsOfHeaders(options.headers)];
    this.retry = resolveRetry(options.retry);
    this.maxBuffered = atLeast("maxBuffered", options.maxBuffered ?? WS_DEFAULTS.maxBuffered, 1);
    this.maxBufferedBytes = atLeast("maxBufferedBytes", options.maxBufferedBytes ?? WS_DEFAULTS.maxBufferedBytes, 1);
    this.pingIntervalMs = atLeast("pingIntervalMs", options.pingIntervalMs ?? WS_DEFAULTS.pingIntervalMs, 0);
    this.overflow = options.overflow ?? WS_DEFAULTS.overflow;
    if (!OVERFLOW_POLICIES.includes(this.overflow)) {
      throw new ConfigError("overflow", `expected one of ${OVERFLOW_POLICIES.join(", ")}; got ${JSON.stringify(this.overflow)}`);
    }
    const messages = [
      ...(options.subscribeMessage === undefined ? [] : [options.subscribeMessage]),
      ...(options.subscribeMessages ?? []),
    ];
    this.subscribe = messages.map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
  }

  /** Decoded messages: a JSON object as is; other text as `{ data }`; non-UTF-8 binary as `{ data: Uint8Array }`. */
  async *stream(): AsyncGenerator<unknown> {
    for await (const m of this.messages()) yield typeof m.data === "string" ? decodeEventData(m.data) : { data: m.data };
  }

  /** Raw messages. Returning from the loop closes the connector. */
  async *messages(): AsyncGenerator<WebSocketMessage> {
    try {
      while (true) {
        const m = await this.take();
        if (m === WS_END || m === WS_IDLE) return;
        yield m;
      }
    } finally {
      await this.close();
    }
  }

  /**
   * The next message; `WS_IDLE` if none arrived within `timeoutMs`; `WS_END` once closed or
   * aborted. Throws the connector's fatal error (overflow `fail`, a 4xx, retries exhausted)
   * once everything buffered before it has been taken.
   */
  async take(timeoutMs?: number, signal?: AbortSignal): Promise<WebSocketMessage | typeof WS_END | typeof WS_IDLE> {
    this.start();
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    while (true) {
      const m = this.shift();
      if (m) return m;
      if (this.fatal) throw this.fatal;
      if (this.closed || signal?.aborted) return WS_END;
      const left = deadline === undefined ? undefined : deadline - Date.now();
      if (left !== undefined && left <= 0) return WS_IDLE;
      await waitUntil(left, signal, (wake) => (this.waiter = wake));
    }
  }

  stats(): WebSocketStats {
    return { ...this.stat, paused: this.paused, buffered: this.buffer.length - this.head, bufferedBytes: this.bytes };
  }

  /** Close the connection and stop reconnecting. Buffered messages are discarded. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      await new Promise<void>((resolve) => {
        if (ws.readyState === ws.CLOSED) return resolve();
        const timer = setTimeout(() => {
          ws.terminate();
          resolve();
        }, 1000);
        ws.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
        // In CONNECTING, close() aborts the handshake; otherwise it sends a close frame.
        if (ws.readyState === ws.CONNECTING) ws.terminate();
        else ws.close(1000, "closed by client");
      });
    }
    this.buffer.length = 0;
    this.head = 0;
    this.bytes = 0;
    this.wake();
  }

  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    void this.connect();
  }

  private async connect(): Promise<void> {
    let mod: WsModule;
    try {
      mod = await requirePeer<WsModule>("ws", "The WebSocket connector");
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    if (this.closed) return;
    let ws: WsSocket;
    try {
      ws = new mod.WebSocket(this.url, this.options.protocols, {
        headers: this.options.headers,
        handshakeTimeout: this.options.handshakeTimeoutMs ?? WS_DEFAULTS.handshakeTimeoutMs,
        maxPayload: this.options.maxMessageBytes ?? WS_DEFAULTS.maxMessageBytes,
      });
    } catch (err) {
      // ws checks the URL and sub-protocols before it connects: no retry can fix these.
      const said = errorText(err, this.secrets);
      this.fail(new ConfigError(/subprotocol/i.test(said) ? "protocols" : "url", `WebSocket ${redactUrl(this.url)}: ${said}`));
      return;
    }
    this.ws = ws;
    const connection = ++this.connection;
    let seq = 0;
    let opened = false;
    let alive = true;
    let failure: Error | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    const healthy = () => {
      alive = true;
      this.failures = 0;
      this.clientFailures = 0;
    };

    ws.on("unexpected-response", (_req: ClientRequest, res: IncomingMessage) => {
      failure = new ConnectorHttpError("WebSocket", this.url, res.statusCode ?? 0, res.statusMessage ?? "", {
        retryAfterMs: parseRetryAfter(res.headers["retry-after"]),
        secrets: this.secrets,
      });
      res.resume();
      ws.terminate();
    });
    ws.on("open", () => {
      opened = true;
      this.stat.connects++;
      if (this.stat.connects > 1) this.stat.reconnects++;
      for (const m of this.subscribe) ws.send(m);
      if (this.paused) ws.pause();
      if (this.pingIntervalMs > 0) {
        heartbeat = setInterval(() => {
          if (ws.readyState !== ws.OPEN) return;
          // A paused socket is not read, so its pongs cannot arrive: not a dead link.
          if (ws.isPaused) {
            alive = true;
            return;
          }
          if (!alive) {
            this.stat.stalls++;
            failure = new ConnectorStallError(
              `WebSocket ${redactUrl(this.url)}: no pong or message within ${this.pingIntervalMs} ms; reconnecting`,
            );
            ws.terminate();
            return;
          }
          alive = false;
          ws.ping();
        }, this.pingIntervalMs);
      }
    });
    ws.on("pong", healthy);
    ws.on("message", (data: RawData, isBinary: boolean) => {
      healthy();
      this.stat.received++;
      const bytes = rawBytes(data);
      let payload: string | Uint8Array;
      if (!isBinary) {
        payload = bytes.toString("utf8");
      } else {
        try {
          payload = utf8.decode(bytes);
        } catch {
          payload = new Uint8Array(bytes);
        }
      }
      this.enqueue({ data: payload, binary: isBinary, connection, seq: ++seq }, bytes.length);
    });
    ws.on("error", (err: Error) => {
      failure ??= new ConnectorNetworkError(`WebSocket ${redactUrl(this.url)}: ${errorText(err, this.secrets)}`, {
        cause: safeCause(err, this.secrets),
      });
    });
    ws.on("close", (code: number, reason: Buffer) => {
      clearInterval(heartbeat);
      if (this.ws === ws) this.ws = undefined;
      if (this.closed || this.fatal) return;
      // The server's close reason is its own text: it may repeat what we sent.
      const why = reason.length > 0 ? ` (${redactText(reason.toString("utf8"), this.secrets)})` : "";
      failure ??= new ConnectorClosedError(
        opened
          ? `WebSocket ${redactUrl(this.url)}: the server closed the connection with code ${code}${why}; reconnecting`
          : `WebSocket ${redactUrl(this.url)}: the connection closed during the handshake`,
      );
      this.reconnectAfter(failure);
    });
  }

  private reconnectAfter(failure: Error): void {
    this.stat.lastError = redactText(failure.message, this.secrets);
    const http = failure instanceof ConnectorHttpError ? failure : undefined;
    if (http && !http.retriable) {
      this.clientFailures++;
      if (this.clientFailures >= this.retry.maxClientErrorAttempts) return this.fail(http);
    } else {
      this.failures++;
      if (this.failures >= this.retry.maxAttempts) {
        return this.fail(new ConnectorGaveUpError("WebSocket", this.url, this.failures, failure.message, failure));
      }
    }
    const attempt = this.failures + this.clientFailures;
    const delayMs = backoffDelay(this.retry, attempt, { floorMs: http?.retryAfterMs });
    (this.options.onRetry ?? warnRetry)({ connector: "WebSocket", attempt, delayMs, error: failure });
    this.reconnectTimer = setTimeout(() => void this.connect(), delayMs);
  }

  private enqueue(message: WebSocketMessage, size: number): void {
    if (this.closed || this.fatal) return;
    const full = () => this.buffer.length - this.head >= this.maxBuffered || this.bytes + size > this.maxBufferedBytes;
    if (full()) {
      if (this.overflow === "fail") {
        this.fail(new BufferOverflowError(`WebSocket ${redactUrl(this.url)}`, `${this.maxBuffered} messages / ${this.maxBufferedBytes} bytes`));
        this.ws?.terminate();
        return;
      }
      if (this.overflow === "drop-oldest") {
        while (full() && this.shift()) this.stat.dropped++;
      }
      // `block`: keep it. Only messages already read off the socket before the pause land
      // here, so the overshoot is bounded by one socket read.
    }
    this.buffer.push(message);
    this.bytes += size;
    if (this.overflow === "block" && !this.paused && full()) {
      this.paused = true;
      this.stat.pauses++;
      this.ws?.pause();
    }
    this.wake();
  }

  private shift(): WebSocketMessage | undefined {
    if (this.head >= this.buffer.length) return undefined;
    const m = this.buffer[this.head];
    this.buffer[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.buffer.length) {
      this.buffer.splice(0, this.head);
      this.head = 0;
    }
    if (!m) return undefined;
    this.bytes -= typeof m.data === "string" ? Buffer.byteLength(m.data) : m.data.byteLength;
    if (this.paused && (this.buffer.length - this.head) * 2 <= this.maxBuffered && this.bytes * 2 <= this.maxBufferedBytes) {
      this.paused = false;
      this.ws?.resume();
    }
    return m;
  }

  private fail(err: Error): void {
    this.fatal ??= err;
    this.stat.lastError = err.message;
    clearTimeout(this.reconnectTimer);
    this.wake();
  }

  private wake(): void {
    this.waiter?.();
  }
}

/**
 * The feed URL, checked. User-info is allowed (ws sends it as Basic auth) but never shown: the
 * message for a URL that does not parse would quote it.
 */
function checkWsUrl(url: string | URL): string {
  let checked: string;
  try {
    checked = checkUrl(url, ["ws:", "wss:", "http:", "https:"], "WebSocket");
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(err.option, redactText(err.detail));
    throw err;
  }
  if (new URL(checked).hash) throw new ConfigError("url", `WebSocket ${redactUrl(checked)}: a WebSocket URL cannot have a fragment (#…)`);
  return checked;
}

function rawBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

function atLeast(option: string, n: number, min: number): number {
  if (!Number.isInteger(n) || n < min) throw new ConfigError(option, `expected a whole number >= ${min}; got ${JSON.stringify(n)}`);
  return n;
}
