import { waitUntil } from "../../util/wait.js";
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { SourceFactory } from "../core/registry.js";
import type { ComponentSpec } from "../core/spec.js";
import { ConfigError, LakeLogicError } from "../../errors.js";
import type { AckSource, ReceivedRecord, SourceLag } from "../core/types.js";

export interface WebhookOptions {
  /** Port to listen on; 0 picks a free one (see `url` after `start()`). */
  port: number;
  /** Interface to bind. Default 127.0.0.1: put a reverse proxy / tunnel in front to expose it. */
  host?: string;
  /** Path that accepts events; anything else is 404. Default "/". */
  path?: string;
  /** When set, every POST must carry an HMAC-SHA256 of its exact body, or it gets 401. */
  hmacSecret?: string;
  /** Header holding the signature, as `sha256=<hex>` or bare hex. Default `x-signature`. */
  signatureHeader?: string;
  /** A body larger than this gets 413 without being read further. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Most events held in memory (queued + in a batch not yet committed); beyond it, 429. Default 10000. */
  maxQueued?: number;
  /** Most body bytes held in memory; beyond it, 429. Default 64 MiB. */
  maxQueuedBytes?: number;
  /** Sent as Retry-After with 429 and 503. Default 5. */
  retryAfterSeconds?: number;
  /** CloudEvents webhook validation: origins allowed to deliver (default: any). */
  allowedOrigins?: string[];
  /** CloudEvents webhook validation: `WebHook-Allowed-Rate` to grant (requests per minute). Default "*". */
  allowedRate?: number;
  /**
   * Event Grid and CloudEvents wrap the payload in an envelope (`id`, `subject`, `time`, …,
   * `data`). `true` makes the record the event's `data` object, so the contract describes the
   * payload; the event id stays the record's position. Default false (the whole event).
   */
  unwrapData?: boolean;
}

/** Identifies one event of one HTTP delivery. */
export interface WebhookAckToken {
  request: number;
  index: number;
}

export interface WebhookStats {
  requests: number;
  events: number;
  /** Deliveries answered 200 after their batch committed. */
  committed: number;
  /** Deliveries answered 503 after a nack, or because the source closed. */
  retried: number;
  /** Deliveries refused with 429 because the queue was full. */
  rejectedFull: number;
  rejectedTooLarge: number;
  rejectedSignature: number;
  validations: number;
  /** Events held now (queued + leased, not yet answered). */
  held: number;
  queued: number;
}

interface Delivery {
  id: number;
  res: ServerResponse;
  events: number;
  acked: Set<number>;
  bytes: number;
  answered: boolean;
}

interface Queued {
  delivery: Delivery;
  record: ReceivedRecord<WebhookAckToken>;
}

const DEFAULTS = {
  host: "127.0.0.1",
  path: "/",
  signatureHeader: "x-signature",
  maxBodyBytes: 1024 * 1024,
  maxQueued: 10_000,
  maxQueuedBytes: 64 * 1024 * 1024,
  retryAfterSeconds: 5,
};

const VALIDATION_EVENT = "Microsoft.EventGrid.SubscriptionValidationEvent";
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * An HTTP endpoint that receives pushed events — plain webhooks, Azure Event Grid (Event Grid
 * schema and CloudEvents 1.0) — as an ack source. A delivery is answered 200 only after every
 * event in it has been committed by the sink (I8); until then the sender's request stays open.
 * A failed batch is answered 503 with Retry-After, so the sender delivers it again.
 *
 * Memory is bounded (I5): a body over `maxBodyBytes` gets 413, and once `maxQueued` events or
 * `maxQueuedBytes` are held, new deliveries get 429 with Retry-After until batches commit.
 *
 * Status codes: 200 committed / validation handshake; 401 bad or missing signature; 403 origin
 * not allowed; 404 wrong path; 405 wrong method; 413 too large; 429 queue full; 503 batch failed
 * or shutting down.
 */
export class WebhookSource implements AckSource<WebhookAckToken> {
  readonly kind = "ack" as const;
  readonly description: string;
  private readonly o: Required<Omit<WebhookOptions, "hmacSecret" | "allowedOrigins" | "allowedRate" | "unwrapData">> &
    Pick<WebhookOptions, "hmacSecret" | "allowedOrigins" | "allowedRate" | "unwrapData">;
  private server: Server | undefined;
  private starting: Promise<void> | undefined;
  private closed = false;
  private nextId = 1;
  private readonly deliveries = new Map<number, Delivery>();
  private queue: Queued[] = [];
  private held = 0;
  private heldBytes = 0;
  private waiter: (() => void) | undefined;
  private readonly closer = new AbortController();
  private readonly stat = {
    requests: 0,
    events: 0,
    committed: 0,
    retried: 0,
    rejectedFull: 0,
    rejectedTooLarge: 0,
    rejectedSignature: 0,
    validations: 0,
  };

  constructor(options: WebhookOptions) {
    if (!Number.isInteger(options?.port) || options.port < 0 || options.port > 65535) {
      throw new ConfigError("port", `expected a port number 0–65535 (0 = any free port); got ${JSON.stringify(options?.port)}`);
    }
    this.o = {
      port: options.port,
      host: options.host ?? DEFAULTS.host,
      path: options.path ?? DEFAULTS.path,
      signatureHeader: (options.signatureHeader ?? DEFAULTS.signatureHeader).toLowerCase(),
      maxBodyBytes: options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
      maxQueued: options.maxQueued ?? DEFAULTS.maxQueued,
      maxQueuedBytes: options.maxQueuedBytes ?? DEFAULTS.maxQueuedBytes,
      retryAfterSeconds: options.retryAfterSeconds ?? DEFAULTS.retryAfterSeconds,
      hmacSecret: options.hmacSecret,
      allowedOrigins: options.allowedOrigins,
      allowedRate: options.allowedRate,
      unwrapData: options.unwrapData,
    };
    if (!this.o.path.startsWith("/")) throw new ConfigError("path", `expected a path starting with "/"; got ${JSON.stringify(this.o.path)}`);
    for (const k of ["maxBodyBytes", "maxQueued", "maxQueuedBytes"] as const) {
      if (!Number.isInteger(this.o[k]) || this.o[k] < 1) throw new ConfigError(k, `expected a whole number >= 1; got ${JSON.stringify(this.o[k])}`);
    }
    if (options.hmacSecret !== undefined && options.hmacSecret === "") throw new ConfigError("hmacSecret", "must not be empty when set");
    this.description = `webhook ${this.o.host}:${this.o.port}${this.o.path}`;
  }

  /** The address senders should use (after `start()`). */
  get url(): string {
    const addr = this.server?.address() as AddressInfo | null | undefined;
    if (!addr) throw new LakeLogicError("NOT_STARTED", `${this.description}: not listening yet; call start() first`);
    const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
    return `http://${host}:${addr.port}${this.o.path}`;
  }

  /** Start listening (also done by the first `receive()` / `stream()`). */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new LakeLogicError("CLOSED", `${this.description}: closed`));
    this.starting ??= new Promise<void>((resolve, reject) => {
      const server = createServer((req, res) => void this.handle(req, res));
      server.once("error", (err: NodeJS.ErrnoException) => {
        const hint = err.code === "EADDRINUSE" ? `: port ${this.o.port} is in use; choose another port (0 = any free port)` : "";
        reject(new LakeLogicError("LISTEN_FAILED", `${this.description}: cannot listen on ${this.o.host}:${this.o.port}${hint}: ${err.message}`, { cause: err }));
      });
      server.listen(this.o.port, this.o.host, () => {
        this.server = server;
        resolve();
      });
    });
    return this.starting;
  }

  async receive(max: number, waitMs: number, signal: AbortSignal): Promise<Array<ReceivedRecord<WebhookAckToken>>> {
    await this.start();
    const deadline = Date.now() + waitMs;
    while (this.queue.length === 0 && !this.closed && !signal.aborted) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      await waitUntil(left, signal, (wake) => (this.waiter = wake));
    }
    return this.queue.splice(0, Math.max(0, max)).map((q) => q.record);
  }

  /** The batch holding these events is committed: answer each delivery whose events are all acked with 200. */
  async ack(tokens: WebhookAckToken[]): Promise<void> {
    for (const t of tokens) {
      const d = this.deliveries.get(t.request);
      if (!d || d.answered) continue;
      d.acked.add(t.index);
      if (d.acked.size === d.events) {
        this.stat.committed++;
        this.answer(d, 200, { "content-type": "application/json" }, "{}");
      }
    }
  }

  /** The batch failed: answer its deliveries 503 + Retry-After so the senders deliver them again. */
  async nack(tokens: WebhookAckToken[]): Promise<void> {
    for (const t of tokens) {
      const d = this.deliveries.get(t.request);
      if (!d || d.answered) continue;
      this.stat.retried++;
      this.answer(d, 503, { "retry-after": String(this.o.retryAfterSeconds) }, "batch not committed; retry later\n");
    }
  }

  async lag(): Promise<SourceLag> {
    return { records: this.queue.length };
  }

  stats(): WebhookStats {
    return { ...this.stat, held: this.held, queued: this.queue.length };
  }

  /**
   * The iterator API. An event is acknowledged (its delivery answered, once all of the
   * delivery's events are) when you ask for the next one; leaving the loop gives the current
   * event back with 503, so the sender retries it: at-least-once. Leaving also closes the source.
   */
  async *stream(): AsyncGenerator<unknown> {
    let current: WebhookAckToken | undefined;
    try {
      while (!this.closed) {
        const [r] = await this.receive(1, 60_000, this.closer.signal);
        if (!r) continue;
        current = r.ackToken;
        yield r.value;
        await this.ack([current]);
        current = undefined;
      }
    } finally {
      if (current) await this.nack([current]);
      await this.close();
    }
  }

  /** Stop listening. Deliveries not yet committed are answered 503 so their senders retry. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closer.abort();
    for (const d of this.deliveries.values()) {
      if (!d.answered) {
        this.stat.retried++;
        this.answer(d, 503, { "retry-after": String(this.o.retryAfterSeconds), connection: "close" }, "shutting down; retry later\n");
      }
    }
    this.waiter?.();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      // Connections still sending a body would keep close() waiting; they are retried anyway.
      setTimeout(() => server.closeAllConnections(), 1000).unref();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== this.o.path) return plain(res, 404, `no webhook at ${path}; events go to ${this.o.path}\n`);
    if (req.method === "OPTIONS") return this.cloudEventsHandshake(req, res);
    if (req.method !== "POST") return plain(res, 405, "use POST\n", { allow: "POST, OPTIONS" });
    if (this.closed) return plain(res, 503, "shutting down; retry later\n", { "retry-after": String(this.o.retryAfterSeconds) });
    this.stat.requests++;

    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > this.o.maxBodyBytes) return this.tooLarge(req, res);
    const body = await readBody(req, this.o.maxBodyBytes);
    if (body === "too-large") return this.tooLarge(req, res);
    if (body === "aborted") return;

    if (this.o.hmacSecret !== undefined && !this.signatureOk(req, body)) {
      this.stat.rejectedSignature++;
      return plain(res, 401, `missing or wrong signature in header ${this.o.signatureHeader} (expected sha256=<hex HMAC-SHA256 of the body>)\n`);
    }

    let text: string | undefined;
    try {
      text = utf8.decode(body);
    } catch {
      text = undefined;
    }
    let parsed: unknown;
    let isJson = false;
    if (text !== undefined) {
      try {
        parsed = JSON.parse(text);
        isJson = true;
      } catch {
        isJson = false;
      }
    }

    // Azure Event Grid (Event Grid schema) subscription validation handshake.
    const validation = isJson ? findValidation(parsed) : undefined;
    if (validation !== undefined || req.headers["aeg-event-type"] === "SubscriptionValidation") {
      if (validation === undefined) return plain(res, 400, `expected a ${VALIDATION_EVENT} with data.validationCode\n`);
      this.stat.validations++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ validationResponse: validation }));
      return;
    }

    const events = this.toEvents(req, body, text, parsed, isJson);
    if (events.length === 0) return plain(res, 200, "");
    if (events.length > this.o.maxQueued) {
      this.stat.rejectedTooLarge++;
      return plain(res, 413, `a delivery of ${events.length} events can never fit the queue (maxQueued ${this.o.maxQueued}); send smaller batches\n`);
    }
    if (this.held + events.length > this.o.maxQueued || this.heldBytes + body.length > this.o.maxQueuedBytes) {
      this.stat.rejectedFull++;
      return plain(res, 429, "queue full; retry later\n", { "retry-after": String(this.o.retryAfterSeconds) });
    }

    const delivery: Delivery = { id: this.nextId++, res, events: events.length, acked: new Set(), bytes: body.length, answered: false };
    this.deliveries.set(delivery.id, delivery);
    this.held += delivery.events;
    this.heldBytes += delivery.bytes;
    // The sender gave up (timeout, crash): it will deliver again, so drop what is still queued.
    res.once("close", () => {
      if (!delivery.answered) this.release(delivery);
    });
    events.forEach((e, index) => {
      this.queue.push({ delivery, record: { ...e, ackToken: { request: delivery.id, index } } });
    });
    this.stat.events += events.length;
    this.waiter?.();
  }

  private toEvents(
    req: IncomingMessage,
    body: Buffer,
    text: string | undefined,
    parsed: unknown,
    isJson: boolean,
  ): Array<Omit<ReceivedRecord<WebhookAckToken>, "ackToken">> {
    const meta: Record<string, unknown> = {};
    for (const h of ["content-type", "aeg-event-type", "aeg-subscription-name", "aeg-delivery-count", "ce-type", "ce-source", "user-agent"]) {
      const v = req.headers[h];
      if (v !== undefined) meta[h] = v;
    }
    if (text === undefined) {
      return [{ value: undefined, raw: new Uint8Array(body), decodeError: "webhook body is not valid UTF-8", position: null, meta, bytes: body.length }];
    }
    // CloudEvents binary mode: attributes in ce-* headers, the body is the data.
    const specversion = req.headers["ce-specversion"];
    if (typeof specversion === "string") {
      const event: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(req.headers)) if (k.startsWith("ce-") && typeof v === "string") event[k.slice(3)] = v;
      if (req.headers["content-type"]) event.datacontenttype = req.headers["content-type"];
      event.data = isJson ? parsed : text;
      return [{ value: this.payloadOf(event), raw: text, position: event.id ?? null, meta, bytes: body.length }];
    }
    if (!isJson) return [{ value: { data: text }, raw: text, position: null, meta, bytes: body.length }];
    // Event Grid and CloudEvents batches are arrays: each element is one event (one record).
    const items = Array.isArray(parsed) ? parsed : [parsed];
    return items.map((item) => {
      const isObject = typeof item === "object" && item !== null && !Array.isArray(item);
      const raw = items.length === 1 ? text : JSON.stringify(item);
      const id = isObject ? (item as { id?: unknown }).id : undefined;
      return {
        value: isObject ? this.payloadOf(item as Record<string, unknown>) : { data: item },
        raw,
        position: typeof id === "string" || typeof id === "number" ? id : null,
        meta,
        bytes: raw.length,
      };
    });
  }

  /** The record for one event: the event itself, or (unwrapData) its `data` object. */
  private payloadOf(event: Record<string, unknown>): unknown {
    if (!this.o.unwrapData || !("data" in event)) return event;
    const data = event.data;
    return typeof data === "object" && data !== null && !Array.isArray(data) ? data : { data };
  }

  /** CloudEvents 1.0 webhook abuse protection: the OPTIONS validation handshake. */
  private cloudEventsHandshake(req: IncomingMessage, res: ServerResponse): void {
    const origin = req.headers["webhook-request-origin"];
    if (typeof origin !== "string" || origin === "") {
      return plain(res, 200, "", { allow: "POST, OPTIONS" });
    }
    if (this.o.allowedOrigins && !this.o.allowedOrigins.includes(origin)) {
      return plain(res, 403, `origin ${origin} is not allowed to deliver here\n`);
    }
    this.stat.validations++;
    res.writeHead(200, {
      allow: "POST, OPTIONS",
      "webhook-allowed-origin": origin,
      "webhook-allowed-rate": this.o.allowedRate === undefined ? "*" : String(this.o.allowedRate),
    });
    res.end();
  }

  private signatureOk(req: IncomingMessage, body: Buffer): boolean {
    const header = req.headers[this.o.signatureHeader];
    if (typeof header !== "string") return false;
    const hex = header.trim().replace(/^sha256=/i, "");
    if (!/^[0-9a-f]{64}$/i.test(hex)) return false;
    const expected = createHmac("sha256", this.o.hmacSecret!).update(body).digest();
    return timingSafeEqual(expected, Buffer.from(hex, "hex"));
  }

  private tooLarge(req: IncomingMessage, res: ServerResponse): void {
    this.stat.rejectedTooLarge++;
    // Answer first, then stop reading: the sender sees 413 instead of a reset.
    res.writeHead(413, { "content-type": "text/plain", connection: "close" });
    res.end(`body larger than maxBodyBytes (${this.o.maxBodyBytes})\n`, () => req.socket.destroy());
  }

  private answer(d: Delivery, status: number, headers: Record<string, string>, body: string): void {
    this.release(d);
    if (!d.res.headersSent && !d.res.destroyed) {
      d.res.writeHead(status, headers);
      d.res.end(body);
    }
  }

  /** Forget a delivery: it is answered (or its sender left); its queued events are dropped. */
  private release(d: Delivery): void {
    if (d.answered) return;
    d.answered = true;
    this.deliveries.delete(d.id);
    this.held -= d.events;
    this.heldBytes -= d.bytes;
    if (this.queue.some((q) => q.delivery === d)) this.queue = this.queue.filter((q) => q.delivery !== d);
  }
}

function plain(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers });
  res.end(body);
}

/** Read at most `limit` bytes; stop as soon as the body is known to be larger. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too-large" | "aborted"> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (v: Buffer | "too-large" | "aborted") => {
      if (settled) return;
      settled = true;
      req.removeListener("data", onData);
      resolve(v);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        settle("too-large");
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => settle(Buffer.concat(chunks, size)));
    req.once("error", () => settle("aborted"));
    req.once("close", () => settle(req.complete ? Buffer.concat(chunks, size) : "aborted"));
  });
}

/** The validation code of an Event Grid SubscriptionValidationEvent, if this body is one. */
function findValidation(parsed: unknown): string | undefined {
  const items = Array.isArray(parsed) ? parsed : [parsed];
  for (const item of items) {
    if (typeof item !== "object" || item === null) continue;
    const e = item as { eventType?: unknown; type?: unknown; data?: { validationCode?: unknown } };
    if ((e.eventType === VALIDATION_EVENT || e.type === VALIDATION_EVENT) && typeof e.data?.validationCode === "string") {
      return e.data.validationCode;
    }
  }
  return undefined;
}

export const webhookSpec: ComponentSpec = {
  type: "webhook",
  kind: "ack",
  summary:
    "An HTTP endpoint for pushed events (webhooks, Azure Event Grid push in Event Grid or CloudEvents 1.0 schema). " +
    "A delivery is answered 200 only after its batch is committed; 503 + Retry-After if the batch fails; 429 when the " +
    "bounded queue is full; 413 over maxBodyBytes. Answers both Event Grid validation handshakes.",
  options: {
    port: { type: "integer", required: true, min: 0, max: 65535, description: "Port to listen on (0 = any free port)." },
    host: { type: "string", default: DEFAULTS.host, description: "Interface to bind; expose it through a reverse proxy or tunnel." },
    path: { type: "string", default: DEFAULTS.path, description: "Path that accepts events; other paths get 404." },
    hmacSecret: { type: "string", secret: true, description: "When set, each POST must carry the HMAC-SHA256 of its body, else 401." },
    signatureHeader: { type: "string", default: DEFAULTS.signatureHeader, description: "Header with the signature: `sha256=<hex>` or bare hex." },
    maxBodyBytes: { type: "integer", min: 1, default: DEFAULTS.maxBodyBytes, description: "Larger bodies get 413." },
    maxQueued: { type: "integer", min: 1, default: DEFAULTS.maxQueued, description: "Events held (queued + in an uncommitted batch); beyond it, 429." },
    maxQueuedBytes: { type: "integer", min: 1, default: DEFAULTS.maxQueuedBytes, description: "Body bytes held; beyond it, 429." },
    retryAfterSeconds: { type: "integer", min: 0, default: DEFAULTS.retryAfterSeconds, description: "Retry-After sent with 429 and 503." },
    allowedOrigins: { type: "string[]", description: "CloudEvents validation: origins allowed to deliver (default any)." },
    allowedRate: { type: "integer", min: 1, description: "CloudEvents validation: WebHook-Allowed-Rate to grant, per minute (default `*`)." },
    unwrapData: {
      type: "boolean",
      default: false,
      description: "Make the record the event's `data` (Event Grid / CloudEvents envelopes); the event id stays the position.",
    },
  },
};

/** `{ "type": "webhook", "port": 8080, ... }` */
export const webhookSourceFactory: SourceFactory = {
  spec: webhookSpec,
  create: (o) => new WebhookSource(o as unknown as WebhookOptions),
};

/** `{ "type": "eventgrid-push", ... }`: the same endpoint, named for Event Grid push delivery. */
export const eventGridPushSourceFactory: SourceFactory = {
  spec: { ...webhookSpec, type: "eventgrid-push", summary: `Alias of \`webhook\` for Azure Event Grid push delivery. ${webhookSpec.summary}` },
  create: (o) => new WebhookSource(o as unknown as WebhookOptions),
};
