import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../../errors.js";
import type { AckSource, ReceivedRecord, RunMode, SourceLag } from "../core/types.js";
import { DeliveryQueue, type WebhookAckToken } from "./deliveries.js";
import { handleWebhookRequest } from "./handler.js";
import { WEBHOOK_DEFAULTS as DEFAULTS, webhookSpec, type ResolvedWebhookOptions, type WebhookOptions } from "./spec.js";
import { ListenError, SourceClosedError, SourceNotStartedError } from "../core/errors.js";
import { refuseUnknownOptions } from "../core/unknown-options.js";

export type { WebhookAckToken } from "./deliveries.js";
export { webhookSpec, type WebhookOptions } from "./spec.js";

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
  /** Requests answered 408: the body did not arrive within bodyTimeoutMs. */
  rejectedTimeout: number;
  /** Event Grid validation requests answered 400 (no code, or mixed with other events). */
  rejectedHandshake: number;
  /** Connections closed at once because maxConnections were open. */
  rejectedConnections: number;
  /** Events answered 200 without being stored again: committed before (dedupeWindow). */
  duplicates: number;
  validations: number;
  /** Events held now (queued + leased, not yet answered). */
  held: number;
  queued: number;
  /** Body bytes of requests still being read. */
  reading: number;
  /** Connections open now. */
  connections: number;
}

/**
 * An HTTP endpoint that receives pushed events — plain webhooks, Azure Event Grid (Event Grid
 * schema and CloudEvents 1.0) — as an ack source. A delivery is answered 200 only after every
 * event in it has been committed by the sink (I8); until then the sender's request stays open.
 * A failed batch is answered 503 with Retry-After, so the sender delivers it again.
 *
 * Memory is bounded (I5): a body over `maxBodyBytes` gets 413, and once `maxQueued` events or
 * `maxQueuedBytes` (counting bodies still being read) are held, new deliveries get 429 with
 * Retry-After until batches commit. A body must arrive within `bodyTimeoutMs` (else 408), and at
 * most `maxConnections` connections are open (more are closed at once). The status codes are
 * listed at `handleWebhookRequest`.
 */
export class WebhookSource implements AckSource<WebhookAckToken> {
  readonly kind = "ack" as const;
  readonly description: string;
  /**
   * Senders push only while it listens: there is no backlog to drain, so no available_now run
   * (which would listen for a moment, then turn later deliveries away).
   */
  readonly modes: readonly RunMode[] = ["continuous"];
  private readonly o: ResolvedWebhookOptions;
  private server: Server | undefined;
  private starting: Promise<void> | undefined;
  private closed = false;
  private readonly deliveries: DeliveryQueue;
  private readonly closer = new AbortController();
  private readonly stat = {
    requests: 0,
    events: 0,
    committed: 0,
    retried: 0,
    rejectedFull: 0,
    rejectedTooLarge: 0,
    rejectedSignature: 0,
    rejectedTimeout: 0,
    rejectedHandshake: 0,
    rejectedConnections: 0,
    duplicates: 0,
    validations: 0,
  };
  private connections = 0;

  constructor(options: WebhookOptions) {
    refuseUnknownOptions("WebhookSource", options, Object.keys(webhookSpec.options));
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
      unwrapData: options.unwrapData ?? false,
      bodyTimeoutMs: options.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
      maxConnections: options.maxConnections ?? DEFAULTS.maxConnections,
      dedupeWindow: options.dedupeWindow ?? DEFAULTS.dedupeWindow,
      dedupeHeader: options.dedupeHeader?.toLowerCase(),
    };
    if (!this.o.path.startsWith("/")) throw new ConfigError("path", `expected a path starting with "/"; got ${JSON.stringify(this.o.path)}`);
    for (const k of ["maxBodyBytes", "maxQueued", "maxQueuedBytes", "bodyTimeoutMs", "maxConnections"] as const) {
      if (!Number.isInteger(this.o[k]) || this.o[k] < 1) throw new ConfigError(k, `expected a whole number >= 1; got ${JSON.stringify(this.o[k])}`);
    }
    if (!Number.isInteger(this.o.dedupeWindow) || this.o.dedupeWindow < 0) {
      throw new ConfigError("dedupeWindow", `expected a whole number >= 0 (0 = off); got ${JSON.stringify(this.o.dedupeWindow)}`);
    }
    if (options.hmacSecret !== undefined && options.hmacSecret === "") throw new ConfigError("hmacSecret", "must not be empty when set");
    this.description = `webhook ${this.o.host}:${this.o.port}${this.o.path}`;
    this.deliveries = new DeliveryQueue(this.o);
  }

  /** The address senders should use (after `start()`). */
  get url(): string {
    const addr = this.server?.address() as AddressInfo | null | undefined;
    if (!addr) throw new SourceNotStartedError(this.description);
    const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
    return `http://${host}:${addr.port}${this.o.path}`;
  }

  /** Start listening (also done by the first `receive()` / `stream()`). */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new SourceClosedError(this.description));
    this.starting ??= new Promise<void>((resolve, reject) => {
      const context = { o: this.o, stat: this.stat, deliveries: this.deliveries, closed: () => this.closed };
      const server = createServer((req, res) => void handleWebhookRequest(context, req, res));
      // Beyond the cap Node closes a new connection before reading from it.
      server.maxConnections = this.o.maxConnections;
      server.on("drop", () => this.stat.rejectedConnections++);
      server.on("connection", (socket) => {
        this.connections++;
        socket.once("close", () => this.connections--);
      });
      server.once("error", (err: NodeJS.ErrnoException) => {
        const hint = err.code === "EADDRINUSE" ? `: port ${this.o.port} is in use; choose another port (0 = any free port)` : "";
        reject(new ListenError(`${this.description}: cannot listen on ${this.o.host}:${this.o.port}${hint}: ${err.message}`, { cause: err }));
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
    await this.deliveries.waitFor(waitMs, signal, () => this.closed);
    return this.deliveries.take(max);
  }

  /** The batch holding these events is committed: answer each delivery whose events are all acked with 200. */
  async ack(tokens: WebhookAckToken[]): Promise<void> {
    this.stat.committed += this.deliveries.ack(tokens);
  }

  /** The batch failed: answer its deliveries 503 + Retry-After so the senders deliver them again. */
  async nack(tokens: WebhookAckToken[]): Promise<void> {
    this.stat.retried += this.deliveries.fail(tokens, 503, { "retry-after": String(this.o.retryAfterSeconds) }, "batch not committed; retry later\n");
  }

  async lag(): Promise<SourceLag> {
    return { records: this.deliveries.queued };
  }

  stats(): WebhookStats {
    return {
      ...this.stat,
      held: this.deliveries.heldEvents,
      queued: this.deliveries.queued,
      reading: this.deliveries.reading,
      connections: this.connections,
    };
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
    this.stat.retried += this.deliveries.failAll(
      503,
      { "retry-after": String(this.o.retryAfterSeconds), connection: "close" },
      "shutting down; retry later\n",
    );
    this.deliveries.wake();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      // Connections still sending a body would keep close() waiting; they are retried anyway.
      setTimeout(() => server.closeAllConnections(), 1000).unref();
    });
  }
}
