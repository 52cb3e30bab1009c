/**
 * The skeleton every queue connector (SQS, Pub/Sub, Service Bus, Event Grid pull) shares: its
 * options from code, the messages received and not yet settled, lag, the iterator API and
 * close(). A connector extends QueueConnector (or LeasedQueueConnector, when it keeps the leases
 * itself) and implements only its SDK calls.
 */
import { ConfigError } from "../../errors.js";
import { waitUntil } from "../../util/wait.js";
import { LeaseKeeper, SingleStream, defaultWarn, errorText, type Lease, type QueueHooks } from "./queue.js";
import { parseOptions, type ComponentSpec, type OptionsOf } from "./spec.js";
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

export interface QueueConnectorInit {
  /** For messages, e.g. `sqs https://…/orders`. */
  description: string;
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

  protected constructor(init: QueueConnectorInit) {
    this.description = init.description;
    this.warn = init.hooks.onWarning ?? defaultWarn(init.warningCode);
    this.onPoison = init.hooks.onPoison;
    this.streamBatch = init.streamBatch;
  }

  async receive(max: number, waitMs: number, signal: AbortSignal): Promise<Array<ReceivedRecord<Token>>> {
    if (this.closed) throw new SourceClosedError(this.description);
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

  /** Stop receiving, give back what is still held, release the client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.streaming.abort();
    this.wake();
    await this.giveBack();
    this.forgetAll();
    await this.disconnect();
  }

  /** Receive up to `max` messages within about `waitMs` (the connector's SDK calls). */
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
   * Wait until `ready()`, the signal aborts, close() or `waitMs` passed — for connectors that
   * receive into a buffer of their own. `poke` runs before each wait (e.g. to start a poll).
   */
  protected async waitFor(ready: () => boolean, waitMs: number, signal: AbortSignal, poke?: () => void): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (!ready() && !signal.aborted && !this.closed) {
      poke?.();
      const left = deadline - Date.now();
      if (left <= 0) break;
      await waitUntil(left, signal, (wake) => (this.waker = wake));
    }
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
      onError: (err) => this.warn(`${this.description}: ${renewFailed}: ${errorText(err)}`),
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
