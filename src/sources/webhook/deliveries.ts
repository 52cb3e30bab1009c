import type { ServerResponse } from "node:http";
import { waitUntil } from "../../util/wait.js";
import type { ReceivedRecord } from "../core/types.js";

/** Identifies one event of one HTTP delivery. */
export interface WebhookAckToken {
  request: number;
  index: number;
}

/** One event of a delivery, before it is queued. */
export type WebhookEvent = Omit<ReceivedRecord<WebhookAckToken>, "ackToken">;

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

/**
 * The bounded buffer between the HTTP server and the sink: each delivery's request stays open
 * while its events are queued or in a batch, and is answered once all of them are committed
 * (200) or one of them is given back (503). `maxQueued` events and `maxQueuedBytes` body bytes
 * at most are held (I5).
 */
export class DeliveryQueue {
  private nextId = 1;
  private readonly deliveries = new Map<number, Delivery>();
  private queue: Queued[] = [];
  private held = 0;
  private heldBytes = 0;
  private waiter: (() => void) | undefined;

  constructor(private readonly limits: { maxQueued: number; maxQueuedBytes: number }) {}

  /** Events queued and not yet taken. */
  get queued(): number {
    return this.queue.length;
  }

  /** Events held: queued, or taken and not yet answered. */
  get heldEvents(): number {
    return this.held;
  }

  /** Whether a delivery of `events` events and `bytes` body bytes fits beside what is held. */
  fits(events: number, bytes: number): boolean {
    return this.held + events <= this.limits.maxQueued && this.heldBytes + bytes <= this.limits.maxQueuedBytes;
  }

  /** Queue a delivery's events; its request is answered later by ack, nack or close. */
  add(res: ServerResponse, events: WebhookEvent[], bytes: number): void {
    const delivery: Delivery = { id: this.nextId++, res, events: events.length, acked: new Set(), bytes, answered: false };
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
    this.wake();
  }

  /** Wait until an event is queued, `stop()` holds, the signal aborts or `waitMs` passed. */
  async waitFor(waitMs: number, signal: AbortSignal, stop: () => boolean): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (this.queue.length === 0 && !stop() && !signal.aborted) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      await waitUntil(left, signal, (wake) => (this.waiter = wake));
    }
  }

  wake(): void {
    this.waiter?.();
  }

  take(max: number): Array<ReceivedRecord<WebhookAckToken>> {
    return this.queue.splice(0, Math.max(0, max)).map((q) => q.record);
  }

  /** These events are committed: answer each delivery whose events all are with 200. Returns how many were. */
  ack(tokens: WebhookAckToken[]): number {
    let committed = 0;
    for (const t of tokens) {
      const d = this.deliveries.get(t.request);
      if (!d || d.answered) continue;
      d.acked.add(t.index);
      if (d.acked.size === d.events) {
        committed++;
        this.answer(d, 200, { "content-type": "application/json" }, "{}");
      }
    }
    return committed;
  }

  /** Answer the deliveries of these events (those not answered yet); returns how many. */
  fail(tokens: WebhookAckToken[], status: number, headers: Record<string, string>, body: string): number {
    let answered = 0;
    for (const t of tokens) {
      const d = this.deliveries.get(t.request);
      if (!d || d.answered) continue;
      answered++;
      this.answer(d, status, headers, body);
    }
    return answered;
  }

  /** Answer every delivery not answered yet; returns how many. */
  failAll(status: number, headers: Record<string, string>, body: string): number {
    let answered = 0;
    for (const d of this.deliveries.values()) {
      if (!d.answered) {
        answered++;
        this.answer(d, status, headers, body);
      }
    }
    return answered;
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
