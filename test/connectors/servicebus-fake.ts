/**
 * A faithful fake of one Azure Service Bus entity (a queue, or a topic subscription) behind the
 * SDK's peek-lock `ServiceBusReceiver` surface. There is no Service Bus emulator outside Docker,
 * so the connector's tests run at the SDK boundary, against this. What it models, as the service
 * documents it:
 *
 * - peek-lock: a received message is locked for `lockDurationMs` under a fresh lock token;
 *   `lockedUntilUtc` says until when. Only the current token of a live lock can settle it.
 * - lock expiry: an expired lock makes the message available again; the next delivery raises its
 *   `deliveryCount`. Settling or renewing with an expired or stale token throws the SDK's own
 *   `ServiceBusError` with code `MessageLockLost`.
 * - `abandonMessage` makes it available at once (delivery count goes up on the next delivery);
 *   `completeMessage` removes it; `deadLetterMessage` moves it to the dead-letter queue with
 *   `deadLetterReason` / `deadLetterErrorDescription`.
 * - max delivery count: a message about to be delivered more than `maxDeliveryCount` times is
 *   dead-lettered by the "service" with reason `MaxDeliveryCountExceeded`.
 * - `receiveMessages(max, { maxWaitTimeInMs, abortSignal })` returns as soon as messages are
 *   available, or empty after the wait (or on abort); oldest sequence number first.
 * - bodies: whatever was sent (an object stays an object, like an AMQP value; Buffers stay bytes).
 */
import { randomUUID } from "node:crypto";
import { ServiceBusError, type ServiceBusReceivedMessage, type ServiceBusReceiver } from "@azure/service-bus";
import Long from "long";

/** The SDK's own receiver surface (the connector's `ServiceBusReceiverLike` accepts it). */
type ServiceBusReceiverLike = Pick<ServiceBusReceiver, "receiveMessages" | "completeMessage" | "abandonMessage" | "deadLetterMessage" | "renewMessageLock" | "close">;

export interface FakeMessageInput {
  body: unknown;
  messageId?: string;
  applicationProperties?: Record<string, string | number | boolean>;
  contentType?: string;
  subject?: string;
}

interface Stored {
  seq: number;
  input: FakeMessageInput;
  messageId: string;
  enqueuedAt: Date;
  deliveryCount: number;
  lock?: { token: string; until: number };
}

export interface DeadLettered {
  messageId: string;
  body: unknown;
  reason: string | undefined;
  description: string | undefined;
  deliveryCount: number;
}

export class FakeServiceBusEntity {
  private nextSeq = 1;
  private readonly messages = new Map<number, Stored>();
  readonly deadLetters: DeadLettered[] = [];
  readonly stats = { received: 0, completed: 0, abandoned: 0, deadLettered: 0, renewed: 0, lockLost: 0 };
  private waiters: Array<() => void> = [];

  constructor(readonly options: { lockDurationMs?: number; maxDeliveryCount?: number } = {}) {}

  get lockDurationMs(): number {
    return this.options.lockDurationMs ?? 60_000;
  }

  send(...inputs: FakeMessageInput[]): void {
    for (const input of inputs) {
      const seq = this.nextSeq++;
      this.messages.set(seq, { seq, input, messageId: input.messageId ?? randomUUID(), enqueuedAt: new Date(), deliveryCount: 0 });
    }
    this.wakeAll();
  }

  /** Messages neither completed nor dead-lettered (locked or not). */
  get activeCount(): number {
    return this.messages.size;
  }

  get lockedCount(): number {
    const now = Date.now();
    return [...this.messages.values()].filter((m) => m.lock && m.lock.until > now).length;
  }

  /** Delivery counts of the messages still active, by message id. */
  deliveryCounts(): Map<string, number> {
    return new Map([...this.messages.values()].map((m) => [m.messageId, m.deliveryCount]));
  }

  receiver(): ServiceBusReceiverLike & { closed: boolean } {
    // The receiver's own methods use their `this` (its `closed` flag); the entity needs a name.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const entity = this;
    return {
      closed: false,
      async receiveMessages(max, options) {
        const deadline = Date.now() + (options?.maxWaitTimeInMs ?? 60_000);
        const signal = options?.abortSignal as AbortSignal | undefined;
        while (true) {
          if (this.closed) throw new ServiceBusError("The receiver has been closed", "GeneralError");
          const got = entity.take(max);
          if (got.length > 0) return got;
          const left = deadline - Date.now();
          if (left <= 0 || signal?.aborted) return [];
          await entity.waitForMessages(Math.min(left, 50), signal);
        }
      },
      async completeMessage(m) {
        entity.settle(m, "completed");
      },
      async abandonMessage(m) {
        entity.settle(m, "abandoned");
      },
      async deadLetterMessage(m, options) {
        entity.settle(m, "deadLettered", options?.deadLetterReason, options?.deadLetterErrorDescription);
      },
      async renewMessageLock(m) {
        const s = entity.locked(m);
        s.lock!.until = Date.now() + entity.lockDurationMs;
        entity.stats.renewed++;
        return new Date(s.lock!.until);
      },
      async close() {
        this.closed = true;
      },
    };
  }

  private take(max: number): ServiceBusReceivedMessage[] {
    const now = Date.now();
    const out: ServiceBusReceivedMessage[] = [];
    for (const s of [...this.messages.values()].sort((a, b) => a.seq - b.seq)) {
      if (out.length >= max) break;
      if (s.lock && s.lock.until > now) continue;
      if (s.deliveryCount >= (this.options.maxDeliveryCount ?? 10)) {
        this.messages.delete(s.seq);
        this.deadLetters.push({ messageId: s.messageId, body: s.input.body, reason: "MaxDeliveryCountExceeded", description: "Message could not be consumed after maximum delivery attempts.", deliveryCount: s.deliveryCount });
        continue;
      }
      s.deliveryCount++;
      s.lock = { token: randomUUID(), until: now + this.lockDurationMs };
      this.stats.received++;
      out.push(this.view(s));
    }
    return out;
  }

  private view(s: Stored): ServiceBusReceivedMessage {
    // The shape of a peek-lock message from the SDK (only what a receiver reads).
    return {
      body: s.input.body,
      messageId: s.messageId,
      applicationProperties: s.input.applicationProperties,
      contentType: s.input.contentType,
      subject: s.input.subject,
      lockToken: s.lock!.token,
      lockedUntilUtc: new Date(s.lock!.until),
      deliveryCount: s.deliveryCount,
      enqueuedTimeUtc: s.enqueuedAt,
      sequenceNumber: Long.fromNumber(s.seq),
      state: "active",
    } as unknown as ServiceBusReceivedMessage;
  }

  /** The stored message whose live lock `m` holds, or MessageLockLost. */
  private locked(m: ServiceBusReceivedMessage): Stored {
    const seq = m.sequenceNumber?.toNumber();
    const s = seq === undefined ? undefined : this.messages.get(seq);
    if (!s || !s.lock || s.lock.token !== m.lockToken || s.lock.until <= Date.now()) {
      this.stats.lockLost++;
      throw new ServiceBusError(
        "The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.",
        "MessageLockLost",
      );
    }
    return s;
  }

  private settle(m: ServiceBusReceivedMessage, how: "completed" | "abandoned" | "deadLettered", reason?: string, description?: string): void {
    const s = this.locked(m);
    this.stats[how]++;
    if (how === "abandoned") {
      s.lock = undefined;
      this.wakeAll();
      return;
    }
    this.messages.delete(s.seq);
    if (how === "deadLettered") {
      this.deadLetters.push({ messageId: s.messageId, body: s.input.body, reason, description, deliveryCount: s.deliveryCount });
    }
  }

  private waitForMessages(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
      this.waiters.push(done);
    });
  }

  private wakeAll(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const done of w) done();
  }
}
