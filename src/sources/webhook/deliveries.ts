import type { ServerResponse } from "node:http";
import { waitUntil } from "../../util/wait.js";
import type { ReceivedRecord } from "../core/types.js";
import { DedupeWindow } from "./dedupe.js";

/** Identifies one event of one HTTP delivery. */
export interface WebhookAckToken {
  request: number;
  index: number;
  /** The event's replay-protection key (dedupeWindow on, and the event has an id). */
  key?: string;
}

/** One event of a delivery, before it is queued. */
export type WebhookEvent = Omit<ReceivedRecord<WebhookAckToken>, "ackToken">;

/** A delivery's events sorted against the replay window. */
export interface Screened {
  /** Indexes of the events not committed before. */
  fresh: number[];
  /** Events already committed. */
  duplicates: number;
  /** The key of an event an earlier delivery still has queued or in a batch. */
  inFlight: string | undefined;
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

/**
 * The bounded buffer between the HTTP server and the sink: each delivery's request stays open
 * while its events are queued or in a batch, and is answered once all of them are committed
 * (200) or one of them is given back (503). `maxQueued` events and `maxQueuedBytes` body bytes
 * at most are held (I5); the bytes of bodies still being read count too.
 */
export class DeliveryQueue {
  private nextId = 1;
  private readonly deliveries = new Map<number, Delivery>();
  private queue: Queued[] = [];
  private held = 0;
  private heldBytes = 0;
  private readingBytes = 0;
  private waiter: (() => void) | undefined;
  private readonly window: DedupeWindow;

  constructor(private readonly limits: { maxQueued: number; maxQueuedBytes: number; dedupeWindow: number }) {
    this.window = new DedupeWindow(limits.dedupeWindow);
  }

  /** Events queued and not yet taken. */
  get queued(): number {
    return this.queue.length;
  }

  /** Events held: queued, or taken and not yet answered. */
  get heldEvents(): number {
    return this.held;
  }

  /** Body bytes of requests still being read. */
  get reading(): number {
    return this.readingBytes;
  }

  /** Count `bytes` more of a body being read, if they fit beside what is held and read; false if not. */
  reserve(bytes: number): boolean {
    if (this.heldBytes + this.readingBytes + bytes > this.limits.maxQueuedBytes) return false;
    this.readingBytes += bytes;
    return true;
  }

  /** A body is read (or abandoned): its bytes no longer count as being read. */
  unreserve(bytes: number): void {
    this.readingBytes -= bytes;
  }

  /** Whether a delivery of `events` events and `bytes` body bytes fits beside what is held and read. */
  fits(events: number, bytes: number): boolean {
    return (
      this.held + events <= this.limits.maxQueued && this.heldBytes + this.readingBytes + bytes <= this.limits.maxQueuedBytes
    );
  }

  /** Sort events by their replay keys (undefined: no key, always fresh). */
  screen(keys: ReadonlyArray<string | undefined>): Screened {
    const out: Screened = { fresh: [], duplicates: 0, inFlight: undefined };
    keys.forEach((key, i) => {
      if (key === undefined || !this.window.enabled) out.fresh.push(i);
      else if (this.window.isCommitted(key)) out.duplicates++;
      else if (this.window.isInFlight(key)) out.inFlight ??= key;
      else out.fresh.push(i);
    });
    return out;
  }

  /** Queue a delivery's events; its request is answered later by ack, nack or close. */
  add(res: ServerResponse, events: WebhookEvent[], bytes: number, keys: ReadonlyArray<string | undefined> = []): void {
    const delivery: Delivery = { id: this.nextId++, res, events: events.length, acked: new Set(), bytes, answered: false };
    this.deliveries.set(delivery.id, delivery);
    this.held += delivery.events;
    this.heldBytes += delivery.bytes;
    // The sender gave up (timeout, crash): it will deliver again, so drop what is still queued.
    res.once("close", () => {
      if (!delivery.answered) this.release(delivery);
    });
    events.forEach((e, index) => {
      const key = this.window.enabled ? keys[index] : undefined;
      if (key !== undefined) this.window.hold(key);
      const ackToken: WebhookAckToken = key === undefined ? { request: delivery.id, index } : { request: delivery.id, index, key };
      this.queue.push({ delivery, record: { ...e, ackToken } });
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
      // Remembered even when the sender is gone: its retry must not store the event again.
      if (t.key !== undefined) {
        this.window.settle(t.key);
        this.window.remember(t.key);
      }
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
      if (t.key !== undefined) this.window.settle(t.key);
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
    if (!this.queue.some((q) => q.delivery === d)) return;
    this.queue = this.queue.filter((q) => {
      if (q.delivery !== d) return true;
      if (q.record.ackToken.key !== undefined) this.window.settle(q.record.ackToken.key);
      return false;
    });
  }
}
