/**
 * The skeleton every queue connector (SQS, Pub/Sub, Service Bus, Event Grid pull) shares: its
 * options from code, the messages received and not yet settled, lag, the iterator API and
 * close(). A connector extends QueueConnector (or LeasedQueueConnector, when it keeps the leases
 * itself) and implements only its SDK calls.
 */
import { ConfigError } from "../../errors.js";
import { safeCause } from "../../util/redact.js";
import { waitUntil } from "../../util/wait.js";
import { backoffDelay, resolveRetry, type ResolvedRetryPolicy, type RetryPolicy } from "./backoff.js";
import {
  LeaseKeeper,
  QueueUnreachableError,
  SingleStream,
  defaultWarn,
  errorText,
  isNetworkError,
  type Lease,
  type QueueHooks,
} from "./queue.js";
import { parseOptions, type ComponentSpec, type OptionSpec, type OptionsOf } from "./spec.js";
import type { AckSource, ReceivedRecord, SourceLag, StreamConnector } from "./types.js";
import { SourceClosedError } from "./errors.js";

/**
 * A queue connector's options as given in code: the hooks apart, every other option checked
 * against the spec. `codeOnly` names options that are not in the spec (an injected client);
 * the caller takes those itself.
 */
export function queueOptions<S extends ComponentSpec>(
  spec: S,
  options: unknown,
  who: string,
  usage: string,
  codeOnly: readonly string[] = [],
): { options: OptionsOf<S>; hooks: QueueHooks } {
  if (typeof options !== "object" || options === null) throw new ConfigError(who, `expected options ${usage}`);
  const { onPoison, onWarning, ...rest } = options as QueueHooks & Record<string, unknown>;
  for (const key of codeOnly) delete rest[key];
  return { options: parseOptions(spec, rest), hooks: { onPoison, onWarning } };
}

/**
 * How often a queue connector tries to reach its service before a receive fails: up to about
 * 35 s of backoff in all, so a blip does not fail a run and a dead endpoint does not hang it.
 */
export const QUEUE_RETRY: Readonly<RetryPolicy> = Object.freeze({ initialDelayMs: 500, maxDelayMs: 10_000, multiplier: 2, jitter: 0.3, maxAttempts: 8 });

/** The `retry` option every queue connector declares. */
export const queueRetryOption = {
  type: "object",
  description:
    "Attempts to reach the service before a receive fails (connection refused or reset, DNS, timeouts, 5xx): " +
    "`maxAttempts` (8), `initialDelayMs` (500), `maxDelayMs` (10000), `multiplier` (2), `jitter` (0.3). " +
    "An unreachable service fails the run; it is never taken for an empty queue.",
} as const satisfies OptionSpec;

/** A queue connector's `retry` option, with QUEUE_RETRY filling what it leaves out. */
function queueRetry(retry: unknown): ResolvedRetryPolicy {
  const given = typeof retry === "object" && retry !== null && !Array.isArray(retry) ? { ...QUEUE_RETRY, ...retry } : (retry ?? QUEUE_RETRY);
  return resolveRetry(given);
}

/** The spec check of `retry`: a message naming the bad key, or undefined. */
export function checkQueueRetry(o: Record<string, unknown>): { option: string; message: string } | undefined {
  try {
    queueRetry(o.retry);
  } catch (err) {
    return { option: "retry", message: (err as Error).message };
  }
  return undefined;
}

export interface QueueConnectorInit {
  /** For messages, e.g. `sqs https://…/orders`. */
  description: string;
  /** The service's endpoint as errors show it: no credentials, no query string. */
  endpoint: string;
  /** The `retry` option as given (QUEUE_RETRY fills what it leaves out). */
  retry: Record<string, unknown> | undefined;
  /** Credentials the connector holds (keys, passwords, tokens): never shown in an error, warning or cause. */
  secrets?: readonly string[];
  hooks: QueueHooks;
  /** The code of the default warning (process.emitWarning), e.g. `LAKELOGIC_SQS`. */
  warningCode: string;
  /** What the iterator API asks for per receive, and the longest wait of one receive (ms). */
  streamBatch: { max: number; waitMs: number };
}

/** What a connector keeps of a message it handed out: at least when it was produced (for lag). */
export interface HeldMessage {
  producedAt: number | undefined;
}

/** One message a receive took: its record, and what is held under `key` until it is settled. */
export interface Taken<Token, Held> {
  key: string;
  held: Held;
  record: ReceivedRecord<Token>;
}

export abstract class QueueConnector<Token, Held extends HeldMessage> implements AckSource<Token>, StreamConnector {
  readonly kind = "ack" as const;
  readonly description: string;
  protected readonly endpoint: string;
  protected readonly retry: ResolvedRetryPolicy;
  /** What must never appear in an error, a warning or a cause (see `text` and `cause`). */
  protected readonly secrets: readonly string[];
  /**
   * Whether the service answered the last call that finished (any answer, an empty one too);
   * false before the first and after a call that could not reach it. A connector that receives
   * in the background reports "nothing" only while this is true.
   */
  protected reachable = false;
  protected readonly warn: (message: string) => void;
  /** Messages handed out and not yet settled (acked, nacked or given back), by key. */
  protected readonly held = new Map<string, Held>();
  protected closed = false;
  private readonly onPoison: QueueHooks["onPoison"];
  private readonly streamBatch: { max: number; waitMs: number };
  private readonly streaming = new SingleStream();
  /** When the oldest message of the last receive was produced: the lag once nothing is held. */
  private lastOldest: number | undefined;
  private waker: (() => void) | undefined;
  /** Ends the backoff waits of `reach` on close(). */
  private readonly retryWakers = new Set<() => void>();
  /** Receives in flight: close() lets them finish, then gives back what they took. */
  private readonly receiving = new Set<Promise<unknown>>();

  protected constructor(init: QueueConnectorInit) {
    this.description = init.description;
    this.endpoint = init.endpoint;
    this.retry = queueRetry(init.retry);
    this.secrets = init.secrets ?? [];
    this.warn = init.hooks.onWarning ?? defaultWarn(init.warningCode);
    this.onPoison = init.hooks.onPoison;
    this.streamBatch = init.streamBatch;
  }

  async receive(max: number, waitMs: number, signal: AbortSignal): Promise<Array<ReceivedRecord<Token>>> {
    if (this.closed) throw new SourceClosedError(this.description);
    const receiving = this.takeAndHold(max, waitMs, signal);
    this.receiving.add(receiving);
    try {
      return await receiving;
    } finally {
      this.receiving.delete(receiving);
    }
  }

  private async takeAndHold(max: number, waitMs: number, signal: AbortSignal): Promise<Array<ReceivedRecord<Token>>> {
    const taken = await this.take(max, waitMs, signal);
    let oldest: number | undefined;
    for (const t of taken) {
      this.held.set(t.key, t.held);
      const at = t.held.producedAt;
      if (at !== undefined && (oldest === undefined || at < oldest)) oldest = at;
    }
    if (oldest !== undefined) this.lastOldest = oldest;
    return taken.map((t) => t.record);
  }

  /** Acknowledge — called only after the batch committed (I8). */
  abstract ack(tokens: Token[]): Promise<void>;

  /** Give the messages back for redelivery at once. */
  abstract nack(tokens: Token[]): Promise<void>;

  /**
   * `oldestAgeMs`: age of the oldest message held now (or, when none is, of the oldest of the last
   * receive), from when it was produced; `records`: the backlog, where the service reports one.
   */
  async lag(): Promise<SourceLag | undefined> {
    const records = await this.backlog();
    let oldest: number | undefined;
    for (const h of this.held.values()) {
      if (h.producedAt !== undefined && (oldest === undefined || h.producedAt < oldest)) oldest = h.producedAt;
    }
    oldest ??= this.lastOldest;
    if (records === undefined && oldest === undefined) return undefined;
    const lag: SourceLag = {};
    if (records !== undefined) lag.records = records;
    if (oldest !== undefined) lag.oldestAgeMs = Math.max(0, Date.now() - oldest);
    return lag;
  }

  /** Decoded message bodies until `close()` or the loop breaks; see `ackSourceStream`. */
  stream(): AsyncGenerator<unknown> {
    return this.streaming.run(this, { ...this.streamBatch, onPoison: this.onPoison, warn: this.warn, description: this.description });
  }

  /**
   * Stop receiving, give back what is still held, release the client. A receive in flight is
   * let finish first (its service call is never cut off: a queue leases what it answers with),
   * so what it brings is given back too instead of staying invisible until its lease ends.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.streaming.abort();
    this.wake();
    for (const wake of [...this.retryWakers]) wake();
    await Promise.allSettled([...this.receiving]);
    await this.giveBack();
    this.forgetAll();
    await this.disconnect();
  }

  /**
   * Receive up to `max` messages within about `waitMs` (the connector's SDK calls). A stop
   * (`signal`) ends waiting and backoff, never a service call in flight: its answer may already
   * hold leased messages, which must be returned, not dropped.
   */
  protected abstract take(max: number, waitMs: number, signal: AbortSignal): Promise<Array<Taken<Token, Held>>>;

  /** close(): return every held (and buffered) message to the queue. */
  protected abstract giveBack(): Promise<void>;

  /** close(), after giveBack: release the client. */
  protected async disconnect(): Promise<void> {}

  /** Messages waiting in the queue, where the service reports it. */
  protected async backlog(): Promise<number | undefined> {
    return undefined;
  }

  /** A message was settled or given back. */
  protected forget(key: string): void {
    this.held.delete(key);
  }

  protected forgetAll(): void {
    this.held.clear();
  }

  /**
   * Wait until `ready()`, the signal aborts, close() or `waitMs` passed (undefined: no limit) —
   * for connectors that receive into a buffer of their own. `poke` runs before each wait (e.g. to
   * start a poll).
   */
  protected async waitFor(ready: () => boolean, waitMs: number | undefined, signal: AbortSignal, poke?: () => void): Promise<void> {
    const deadline = waitMs === undefined ? undefined : Date.now() + waitMs;
    while (!ready() && !signal.aborted && !this.closed) {
      poke?.();
      const left = deadline === undefined ? undefined : deadline - Date.now();
      if (left !== undefined && left <= 0) break;
      await waitUntil(left, signal, (wake) => (this.waker = wake));
    }
  }

  /**
   * One call to the service, made again (with backoff) while the service cannot be reached, at
   * most `retry.maxAttempts` times; then QueueUnreachableError. Other errors — answers of the
   * service — pass through at once. A stop (`signal`) or close() ends the retries with the error.
   */
  protected async reach<T>(operation: string, call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await call();
        this.reachable = true;
        return out;
      } catch (err) {
        if (!this.unreachable(err)) throw err;
        this.reachable = false;
        if (signal?.aborted || this.closed) throw err;
        if (attempt >= this.retry.maxAttempts) {
          throw new QueueUnreachableError(this.description, this.endpoint, attempt, `${operation}: ${this.text(err)}`, { cause: this.cause(err) });
        }
        const delayMs = backoffDelay(this.retry, attempt);
        this.warn(`${this.description}: cannot reach ${this.endpoint} (${operation}: ${this.text(err)}); retrying in ${delayMs} ms (attempt ${attempt} of ${this.retry.maxAttempts})`);
        let mine: (() => void) | undefined;
        await waitUntil(delayMs, signal, (wake) => {
          if (mine) this.retryWakers.delete(mine);
          mine = wake;
          if (wake) this.retryWakers.add(wake);
        });
        if (this.closed || signal?.aborted) throw err;
      }
    }
  }

  /** `err` as text for an error or a warning, without the connector's secrets. */
  protected text(err: unknown): string {
    return errorText(err, this.secrets);
  }

  /** `err` as the cause of an error of ours, or undefined when it would show a secret. */
  protected cause(err: unknown): unknown {
    return safeCause(err, this.secrets);
  }

  /** Whether `err` means the service was not reached (retried by `reach`). */
  protected unreachable(err: unknown): boolean {
    return isNetworkError(err);
  }

  /** Something arrived (or failed): end a `waitFor` now. */
  protected wake(): void {
    this.waker?.();
  }
}

export interface LeaseInit {
  /** Stop renewing a lease after its message was held this long (ms). */
  maxHoldMs: number;
  /** What a failed renewal is called in the warning, e.g. `lock renewal failed`. */
  renewFailed: string;
}

/**
 * A queue connector that keeps its messages' leases itself (visibility, locks): renewed by a
 * LeaseKeeper while held, released when settled.
 */
export abstract class LeasedQueueConnector<Token, Held extends HeldMessage, Leased> extends QueueConnector<Token, Held> {
  protected readonly leases: LeaseKeeper<string, Leased>;

  protected constructor(init: QueueConnectorInit & { leases: LeaseInit }) {
    super(init);
    const { maxHoldMs, renewFailed } = init.leases;
    this.leases = new LeaseKeeper<string, Leased>({
      maxHoldMs,
      renew: (leases) => this.renew(leases),
      onError: (err) => this.warn(`${this.description}: ${renewFailed}: ${this.text(err)}`),
    });
  }

  /** Renew the leases of these messages if less than half of a lease is left. */
  async extend(tokens: Token[]): Promise<void> {
    await this.leases.renewDue(tokens.map((t) => this.keyOf(t)));
  }

  /** The key a message is held and leased under. */
  protected abstract keyOf(token: Token): string;

  /** Renew these leases; the new expiry of each (ms since epoch), or undefined if unknown. */
  protected abstract renew(leases: Array<Lease<Leased>>): Promise<Array<number | undefined>>;

  protected override forget(key: string): void {
    super.forget(key);
    this.leases.release(key);
  }

  protected override forgetAll(): void {
    super.forgetAll();
    this.leases.close();
  }
}
