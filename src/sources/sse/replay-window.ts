import { createHash } from "node:crypto";

/**
 * Payloads up to this many characters (bytes, for data that is not UTF-8) are kept as they are
 * and compared directly; longer ones are kept as a SHA-1 digest, so the window holds at most
 * `size` × ~2 KiB (UTF-16) whatever the events' size. Hashing a long payload costs little next
 * to parsing and decoding it; for the common short event it would be most of the work.
 */
const KEPT_AS_IS = 1024;

/** What an event's payload is remembered as: its data, its bytes, or a digest of either. */
type Payload = { text: string } | { bytes: Uint8Array } | { digest: string };

interface Remembered {
  position: string;
  type: string;
  payload: Payload;
}

/** The part of a delivered event a replay is recognised by. */
export interface ReplayKey {
  /** The stream's last event id at the event; "" when none yet. */
  lastEventId: string;
  /** 0 for an event with its own `id:`; n for the n-th event after it without one. */
  sinceId: number;
  type: string;
  data: string;
  /** The raw bytes, when the data is not valid UTF-8: then the bytes are what is compared. */
  invalidUtf8?: Uint8Array;
}

/**
 * The last `size` distinct events delivered, by position (id and place after it), type and
 * payload; the oldest is forgotten first. Only an event whose position was seen before is
 * compared with anything, so a stream that never repeats pays a map lookup per event.
 */
export class ReplayWindow {
  /** Remembered events by position; a position holds several when an id was reused for new data. */
  private readonly byPosition = new Map<string, Remembered[]>();
  /** In the order remembered, oldest at `head`: a ring of `size` slots. */
  private readonly order: (Remembered | undefined)[];
  private head = 0;
  private count = 0;

  constructor(private readonly size: number) {
    this.order = new Array<Remembered | undefined>(size);
  }

  /** Whether `event` is an exact copy of one remembered; remembers it when it is not. */
  seen(event: ReplayKey): boolean {
    if (this.size === 0) return false;
    const position = `${event.lastEventId}\u0000${event.sinceId}`;
    const same = this.byPosition.get(position);
    let digest: string | undefined;
    if (same) {
      for (const r of same) {
        if (r.type !== event.type) continue;
        const p = r.payload;
        if ("digest" in p) {
          if (!isLong(event)) continue;
          digest ??= digestOf(event);
          if (p.digest === digest) return true;
        } else if ("bytes" in p) {
          if (event.invalidUtf8 && sameBytes(p.bytes, event.invalidUtf8)) return true;
        } else if (event.invalidUtf8 === undefined && p.text === event.data) {
          return true;
        }
      }
    }
    this.remember({ position, type: event.type, payload: payloadOf(event, digest) }, same);
    return false;
  }

  clear(): void {
    this.byPosition.clear();
    this.order.fill(undefined);
    this.head = 0;
    this.count = 0;
  }

  /** How many events are remembered (at most `size`). */
  get length(): number {
    return this.count;
  }

  private remember(r: Remembered, same: Remembered[] | undefined): void {
    if (this.count === this.size) this.forgetOldest();
    this.order[(this.head + this.count) % this.size] = r;
    this.count++;
    if (same && this.byPosition.has(r.position)) same.push(r);
    else this.byPosition.set(r.position, [r]);
  }

  private forgetOldest(): void {
    const oldest = this.order[this.head]!;
    this.order[this.head] = undefined;
    this.head = (this.head + 1) % this.size;
    this.count--;
    const list = this.byPosition.get(oldest.position)!;
    if (list.length === 1) this.byPosition.delete(oldest.position);
    else list.splice(list.indexOf(oldest), 1);
  }
}

/** Whether the payload is kept as a digest (a function of its length only, so kinds never mix). */
function isLong(event: ReplayKey): boolean {
  return (event.invalidUtf8?.length ?? event.data.length) > KEPT_AS_IS;
}

function payloadOf(event: ReplayKey, digest: string | undefined): Payload {
  if (isLong(event)) return { digest: digest ?? digestOf(event) };
  return event.invalidUtf8 ? { bytes: event.invalidUtf8 } : { text: event.data };
}

/** Tagged, so data that is not UTF-8 never matches text whose encoding has the same bytes. */
function digestOf(event: ReplayKey): string {
  const h = createHash("sha1");
  if (event.invalidUtf8) h.update("b").update(event.invalidUtf8);
  else h.update("t").update(event.data);
  return h.digest("base64");
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
