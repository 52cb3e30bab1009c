/**
 * A local HTTP server that implements the Event Grid namespace data-plane REST operations the
 * pull delivery uses (api-version 2024-06-01), so the real `@azure/eventgrid-namespaces` client can
 * run against it. No Event Grid emulator exists outside Docker. What it implements, as documented:
 *
 * - `POST /topics/{topic}:publish` — a CloudEvent or a batch (`application/cloudevents-batch+json`).
 * - `POST /topics/{topic}/eventsubscriptions/{sub}:receive?maxEvents&maxWaitTime` — long poll:
 *   answers as soon as events are available, else empty after `maxWaitTime` seconds. `maxEvents`
 *   must be 1–100 and `maxWaitTime` 10–120 (400 otherwise). Each event is locked for the
 *   subscription's lock duration under a fresh lock token; `{ value: [{ brokerProperties:
 *   { lockToken, deliveryCount }, event }] }`. A request whose client went away locks nothing.
 * - `:acknowledge`, `:release?releaseDelayInSeconds`, `:reject`, `:renewLock` — body
 *   `{ lockTokens }`, answer `{ failedLockTokens: [{ lockToken, error: { code, message } }],
 *   succeededLockTokens }`. An unknown or expired token fails with code `TokenLost`.
 * - lock expiry makes an event available again with `deliveryCount + 1`; after
 *   `maxDeliveryCount` deliveries it is dead-lettered; `reject` dead-letters it at once.
 * - `Authorization: SharedAccessKey <key>` must match (401 otherwise); `api-version` is required.
 *
 * Locks and release delays run on the server's clock: real time by default, or, with
 * `clock: "manual"`, a clock that moves only when the test calls `advance` — so a lock lapses when
 * the test says so, however slow the machine. A long poll's own wait is always real time.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { jsonText } from "../../src/util/exact-json.js";

export const API_VERSION = "2024-06-01";

interface StoredEvent {
  seq: number;
  event: Record<string, unknown>;
  deliveryCount: number;
  availableAt: number;
  lock?: { token: string; until: number };
}

export interface EventGridFakeOptions {
  key: string;
  topic: string;
  subscription: string;
  lockDurationMs?: number;
  maxDeliveryCount?: number;
  /** What locks and release delays are measured on (default `"real"`: `Date.now()`). */
  clock?: "real" | "manual";
}

export class EventGridFakeServer {
  private server: Server | undefined;
  private seq = 0;
  private readonly events = new Map<number, StoredEvent>();
  readonly deadLettered: Array<{ event: Record<string, unknown>; reason: string; deliveryCount: number }> = [];
  readonly stats = { receives: 0, delivered: 0, acknowledged: 0, released: 0, rejected: 0, renewed: 0, tokenLost: 0, badRequests: 0, unauthorized: 0 };
  private waiters: Array<() => void> = [];
  private manualNow = 0;

  constructor(readonly options: EventGridFakeOptions) {}

  /** Move the manual clock on: every lock that ends by then lapses, as the service's would. */
  advance(ms: number): void {
    if (this.options.clock !== "manual") throw new Error('advance needs clock: "manual"');
    this.manualNow += ms;
    this.wake();
  }

  private now(): number {
    return this.options.clock === "manual" ? this.manualNow : Date.now();
  }

  get lockDurationMs(): number {
    return this.options.lockDurationMs ?? 60_000;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return this;
  }

  get endpoint(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    for (const w of this.waiters) w();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Publish directly (as the service would, after a sender's publish). */
  publish(...events: Array<Record<string, unknown>>): void {
    for (const event of events) {
      const seq = ++this.seq;
      this.events.set(seq, { seq, event: { specversion: "1.0", time: new Date().toISOString(), ...event }, deliveryCount: 0, availableAt: 0 });
    }
    this.wake();
  }

  /** Events not yet acknowledged or dead-lettered. */
  get pending(): number {
    return this.events.size;
  }

  get locked(): number {
    const now = this.now();
    return [...this.events.values()].filter((e) => e.lock && e.lock.until > now).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      // bigint as its digits, as a service written in another language sends a 64-bit id.
      res.end(jsonText(body));
    };
    const error = (status: number, code: string, message: string) => send(status, { error: { code, message } });
    if (req.method !== "POST") return error(405, "MethodNotAllowed", "only POST");
    if (url.searchParams.get("api-version") !== API_VERSION) {
      this.stats.badRequests++;
      return error(400, "BadRequest", `api-version must be ${API_VERSION}`);
    }
    if (req.headers.authorization !== `SharedAccessKey ${this.options.key}`) {
      this.stats.unauthorized++;
      return error(401, "Unauthorized", "invalid SharedAccessKey");
    }
    let body: unknown;
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString("utf8");
      body = text ? JSON.parse(text) : undefined;
    } catch {
      return error(400, "BadRequest", "body is not JSON");
    }
    const path = decodeURIComponent(url.pathname);
    const { topic, subscription } = this.options;
    if (path === `/topics/${topic}:publish`) {
      const list = Array.isArray(body) ? body : [body];
      this.publish(...(list as Array<Record<string, unknown>>));
      return send(200, {});
    }
    const prefix = `/topics/${topic}/eventsubscriptions/${subscription}:`;
    if (!path.startsWith(prefix)) return error(404, "NotFound", `no topic/subscription at ${path}`);
    const op = path.slice(prefix.length);
    if (op === "receive") return this.receive(res, url, send, error);
    const tokens = (body as { lockTokens?: unknown })?.lockTokens;
    if (!Array.isArray(tokens) || tokens.length === 0 || tokens.length > 100 || !tokens.every((t) => typeof t === "string")) {
      this.stats.badRequests++;
      return error(400, "BadRequest", "lockTokens: 1–100 strings");
    }
    if (!["acknowledge", "release", "reject", "renewLock"].includes(op)) return error(404, "NotFound", `unknown operation ${op}`);
    const delay = Number(url.searchParams.get("releaseDelayInSeconds") ?? "0");
    const failed: Array<{ lockToken: string; error: { code: string; message: string } }> = [];
    const succeeded: string[] = [];
    const now = this.now();
    for (const token of tokens) {
      const e = [...this.events.values()].find((x) => x.lock?.token === token && x.lock.until > now);
      if (!e) {
        this.stats.tokenLost++;
        failed.push({ lockToken: token, error: { code: "TokenLost", message: "the lock token is unknown or its lock expired" } });
        continue;
      }
      succeeded.push(token);
      if (op === "acknowledge") {
        this.stats.acknowledged++;
        this.events.delete(e.seq);
      } else if (op === "reject") {
        this.stats.rejected++;
        this.events.delete(e.seq);
        this.deadLettered.push({ event: e.event, reason: "Rejected", deliveryCount: e.deliveryCount });
      } else if (op === "release") {
        this.stats.released++;
        e.lock = undefined;
        e.availableAt = now + delay * 1000;
      } else {
        this.stats.renewed++;
        e.lock!.until = now + this.lockDurationMs;
      }
    }
    if (op === "release") this.wake();
    send(200, { failedLockTokens: failed, succeededLockTokens: succeeded });
  }

  private async receive(
    res: ServerResponse,
    url: URL,
    send: (status: number, body: unknown) => void,
    error: (status: number, code: string, message: string) => void,
  ): Promise<void> {
    const maxEvents = Number(url.searchParams.get("maxEvents") ?? "1");
    const maxWait = Number(url.searchParams.get("maxWaitTime") ?? "60");
    if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > 100) {
      this.stats.badRequests++;
      return error(400, "BadRequest", "maxEvents must be 1–100");
    }
    if (!Number.isInteger(maxWait) || maxWait < 10 || maxWait > 120) {
      this.stats.badRequests++;
      return error(400, "BadRequest", "maxWaitTime must be 10–120 seconds");
    }
    this.stats.receives++;
    let gone = false;
    res.once("close", () => {
      gone = true;
      this.wake();
    });
    const deadline = Date.now() + maxWait * 1000;
    while (!gone) {
      const got = this.take(maxEvents);
      if (got.length > 0) {
        return send(200, { value: got });
      }
      const left = deadline - Date.now();
      if (left <= 0) return send(200, { value: [] });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 100));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.push(done);
      });
    }
  }

  private take(max: number): Array<{ brokerProperties: { lockToken: string; deliveryCount: number }; event: Record<string, unknown> }> {
    const now = this.now();
    const out = [];
    for (const e of [...this.events.values()].sort((a, b) => a.seq - b.seq)) {
      if (out.length >= max) break;
      if ((e.lock && e.lock.until > now) || e.availableAt > now) continue;
      if (e.deliveryCount >= (this.options.maxDeliveryCount ?? 10)) {
        this.events.delete(e.seq);
        this.deadLettered.push({ event: e.event, reason: "MaxDeliveryCountExceeded", deliveryCount: e.deliveryCount });
        continue;
      }
      e.deliveryCount++;
      e.lock = { token: randomUUID(), until: now + this.lockDurationMs };
      this.stats.delivered++;
      out.push({ brokerProperties: { lockToken: e.lock.token, deliveryCount: e.deliveryCount }, event: e.event });
    }
    return out;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const done of w) done();
  }
}
