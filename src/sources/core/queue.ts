/**
 * What the queue connectors (SQS, Pub/Sub, Service Bus, Event Grid pull) share: records from
 * decoded message bodies (./decode.ts), keeping leases alive while a batch is in flight, and the iterator API on top
 * of an ack source. Each connector is one class in its own file; this file has no SDK in it.
 */
import { ConfigError, LakeLogicError } from "../../errors.js";
import { errorText as redactedErrorText, redactText } from "../../util/redact.js";
import type { DecodedBody } from "./decode.js";
import type { AckSource, ReceivedRecord, SourceRecord } from "./types.js";

export { decodeBody, wrapJson, type DecodedBody } from "./decode.js";

/** Callbacks every queue connector takes. */
export interface QueueHooks {
  /** Iterator API only: a message whose body cannot be decoded (default: a warning). */
  onPoison?: (record: SourceRecord) => void;
  /** Non-fatal problems (a lost lease, a failed renewal). Default: process.emitWarning. */
  onWarning?: (message: string) => void;
}

/** What a queue record holds besides its decoded body. */
export interface RecordParts<T> {
  /** The payload as received: kept with a poison message, for quarantine. */
  raw?: string | Uint8Array | undefined;
  position: unknown;
  bytes?: number;
  meta: object;
  ackToken: T;
  /** When the broker accepted the message (ms since the epoch), if it says. */
  producedAt?: number | undefined;
}

/** A received message as a record: its value, or (poison) the decode error and the raw payload. */
export function queueRecord<T>(decoded: DecodedBody, p: RecordParts<T>): ReceivedRecord<T> {
  const body = "error" in decoded
    ? { value: undefined, ...(p.raw !== undefined ? { raw: p.raw } : {}), decodeError: decoded.error }
    : { value: decoded.value };
  return {
    ...body,
    position: p.position,
    ...(p.bytes !== undefined ? { bytes: p.bytes } : {}),
    meta: { ...p.meta },
    ackToken: p.ackToken,
    ...(p.producedAt !== undefined ? { producedAt: p.producedAt } : {}),
  };
}

/** A failed acknowledgement, delete, completion or settlement that was not a lost lease. */
export class QueueAckError extends LakeLogicError {
  constructor(connector: string, operation: string, detail: string, options?: { cause?: unknown }) {
    super(
      "QUEUE_ACK_FAILED",
      `${connector}: ${operation} failed after the batch was committed: ${detail}. The rows are safe; the ` +
        `messages will be delivered again and merged without duplicates (append targets would duplicate them)`,
      options,
    );
  }
}

/** The queue service refused or failed a receive. */
export class QueueReceiveError extends LakeLogicError {
  constructor(connector: string, detail: string, options?: { cause?: unknown }) {
    super("QUEUE_RECEIVE_FAILED", `${connector}: receive failed: ${detail}`, options);
  }
}

/**
 * The queue service could not be reached (connection refused or reset, DNS, a timeout, a service
 * that is down) after the connector's own retries. Never reported as an empty queue: "empty" is
 * an answer, and there was none.
 */
export class QueueUnreachableError extends LakeLogicError {
  /** The endpoint tried, without credentials or query string. */
  readonly endpoint: string;
  readonly attempts: number;
  constructor(connector: string, endpoint: string, attempts: number, detail: string, options?: { cause?: unknown }) {
    super(
      "QUEUE_UNREACHABLE",
      `${connector}: could not reach ${endpoint} after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${detail}`,
      options,
    );
    this.endpoint = endpoint;
    this.attempts = attempts;
  }
}

/** Node's codes for a connection that could not be made or was lost. */
const NETWORK_CODES = ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ECONNABORTED", "ESOCKETTIMEDOUT"];
const NETWORK_TEXT = new RegExp(`\\b(${NETWORK_CODES.join("|")})\\b|socket hang up`);

/**
 * Whether an error says the service was not reached (a network failure), looking through the
 * error's `code`, its message and its causes. An answer of the service (a 4xx, a missing queue)
 * is not one.
 */
export function isNetworkError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (typeof e === "string") return NETWORK_TEXT.test(e);
    if (typeof e !== "object") return false;
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === "string" && NETWORK_CODES.includes(code)) return true;
    if (typeof message === "string" && NETWORK_TEXT.test(message)) return true;
    e = cause;
  }
  return false;
}

export interface Lease<M> {
  message: M;
  /** When the current lease ends (ms since epoch). */
  expiresAt: number;
  /** How long a lease lasts when renewed (ms). */
  leaseMs: number;
  /** When the message was first received (ms since epoch). */
  receivedAt: number;
}

export interface LeaseKeeperOptions<M> {
  /** Renew these leases; return the new expiry of each (ms since epoch), or undefined if unknown. */
  renew(leases: Array<Lease<M>>): Promise<Array<number | undefined>>;
  /** Stop renewing a lease after the message has been held this long (ms). */
  maxHoldMs: number;
  /** A renewal failed (the lease may be lost; the message will come back and be merged). */
  onError(err: unknown): void;
}

/**
 * Leases of received but not yet settled messages, renewed once less than half of a lease is
 * left — by a timer of its own, so that a batch stays leased however it is driven (StreamSink
 * calls `extend` every 10 s; the Temporal activities never do) and a batch that takes longer than
 * half the visibility timeout keeps its messages invisible. After `maxHoldMs` a message is left to
 * expire, so a batch that was abandoned (e.g. its workflow moved on) is not held forever.
 * The timer is unref'd: it never keeps a process alive.
 */
export class LeaseKeeper<K, M> {
  private readonly leases = new Map<K, Lease<M>>();
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private tickMs = Number.POSITIVE_INFINITY;

  constructor(private readonly o: LeaseKeeperOptions<M>) {}

  get size(): number {
    return this.leases.size;
  }

  hold(key: K, message: M, leaseMs: number, expiresAt = Date.now() + leaseMs): void {
    this.leases.set(key, { message, leaseMs, expiresAt, receivedAt: Date.now() });
    // Check four times per shortest lease, so a renewal happens between 1/2 and 1/4 left.
    const tick = Math.max(100, Math.floor(leaseMs / 4));
    if (tick < this.tickMs || !this.timer) {
      this.tickMs = tick;
      if (this.timer) clearInterval(this.timer);
      this.timer = setInterval(() => void this.renewDue(), tick);
      this.timer.unref();
    }
  }

  get(key: K): Lease<M> | undefined {
    return this.leases.get(key);
  }

  release(key: K): Lease<M> | undefined {
    const lease = this.leases.get(key);
    this.leases.delete(key);
    if (this.leases.size === 0) this.stopTimer();
    return lease;
  }

  all(): Array<Lease<M>> {
    return [...this.leases.values()];
  }

  /** Renew every held lease (of `keys`, or all) with less than half of it left. */
  renewDue(keys?: Iterable<K>): Promise<void> {
    // One renewal at a time: a slow service must not pile up overlapping calls.
    if (this.renewing) return this.renewing;
    const now = Date.now();
    const due: Array<Lease<M>> = [];
    const candidates = keys ? [...keys].map((k) => this.leases.get(k)) : [...this.leases.values()];
    for (const l of candidates) {
      if (!l) continue;
      if (now - l.receivedAt >= this.o.maxHoldMs) continue;
      if (l.expiresAt - now < l.leaseMs / 2) due.push(l);
    }
    if (due.length === 0) return Promise.resolve();
    this.renewing = (async () => {
      try {
        const expiries = await this.o.renew(due);
        const at = Date.now();
        due.forEach((l, i) => {
          l.expiresAt = expiries[i] ?? at + l.leaseMs;
        });
      } catch (err) {
        this.o.onError(err);
      } finally {
        this.renewing = undefined;
      }
    })();
    return this.renewing;
  }

  close(): void {
    this.stopTimer();
    this.leases.clear();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.tickMs = Number.POSITIVE_INFINITY;
  }
}

export interface QueueStreamOptions {
  /** Messages asked for per receive. */
  max: number;
  /** Longest wait of one receive (ms). */
  waitMs: number;
  /** A poison message (not decodable): handed here, then settled as poison (default: a warning). */
  onPoison: ((record: SourceRecord) => void) | undefined;
  warn: (message: string) => void;
  description: string;
  signal: AbortSignal;
}

/**
 * The iterator API over an ack source: decoded values, one by one. A received batch is
 * acknowledged once the caller asks for the value after its last one (it is done with all of
 * them); when the loop stops early, the values it finished are acknowledged and the rest are
 * given back (nack), so nothing the caller did not finish is lost.
 */
export async function* ackSourceStream<T>(source: AckSource<T>, o: QueueStreamOptions): AsyncGenerator<unknown> {
  while (!o.signal.aborted) {
    let batch: Array<ReceivedRecord<T>>;
    try {
      batch = await source.receive(o.max, o.waitMs, o.signal);
    } catch (err) {
      if (o.signal.aborted) return;
      throw err;
    }
    let done = 0;
    try {
      for (const r of batch) {
        if (r.decodeError !== undefined) {
          if (o.onPoison) o.onPoison(r);
          else o.warn(`${o.description}: poison message ${JSON.stringify(r.position)} settled without a record: ${r.decodeError}`);
        } else {
          yield r.value;
        }
        done++;
      }
    } finally {
      // `done` values were finished by the caller; a value it held when it stopped was not.
      const finished = batch.slice(0, done).map((r) => r.ackToken);
      const rest = batch.slice(done).map((r) => r.ackToken);
      if (rest.length > 0) await source.nack?.(rest).catch(() => undefined);
      if (finished.length > 0) await source.ack(finished);
    }
  }
}

/**
 * The iterator API of one queue connector: at most one `stream()` loop at a time, and a way for
 * `close()` to end it.
 */
export class SingleStream {
  private current: AbortController | undefined;

  async *run<T>(source: AckSource<T>, o: Omit<QueueStreamOptions, "signal">): AsyncGenerator<unknown> {
    if (this.current) throw new ConfigError("stream", `${o.description}: stream() is already being iterated`);
    const controller = new AbortController();
    this.current = controller;
    try {
      yield* ackSourceStream(source, { ...o, signal: controller.signal });
    } finally {
      this.current = undefined;
    }
  }

  abort(): void {
    this.current?.abort();
  }
}

/** Run `fn` over `items` with at most `limit` in flight; results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export { sleep } from "../../util/wait.js";

export function positiveInteger(option: string, value: unknown, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(option, `expected a whole number ${range}; got ${JSON.stringify(value)}`);
  }
  return value;
}

/** An error as text for messages and warnings, without the connector's `secrets` or any credential a library echoed. */
export function errorText(err: unknown, secrets: Iterable<string> = []): string {
  if (err instanceof Error) {
    const name = err.name && err.name !== "Error" && !err.message.startsWith(err.name) ? `${err.name}: ` : "";
    return `${name}${redactedErrorText(err, secrets)}`;
  }
  return redactText(String(err), secrets);
}

export const defaultWarn = (code: string) => (message: string) => process.emitWarning(message, { code });
