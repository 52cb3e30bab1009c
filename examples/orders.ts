import { createWriteStream } from "node:fs";

/**
 * A deterministic stream of order events, about `badRate` of them breaking a rule of
 * `examples/orders.yaml`. Used by the demo, the crash tests and the benchmarks, so that every
 * run of them can count exactly which records must end up good and which in quarantine.
 */

export interface OrderEvent {
  order_id: number;
  customer_id: string;
  amount: number | string;
  currency: string;
  status: string;
  email: string;
  quantity: number;
  created_at: string;
}

const STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled"];
const CURRENCIES = ["EUR", "USD", "GBP"];

/** A small, fast integer hash (xorshift-multiply) so record i is the same in every process. */
function mix(i: number, salt: number): number {
  let x = (i ^ (salt * 0x9e3779b1)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Whether record i is generated bad (for counting expectations). */
export function isBadOrder(i: number, badRate = 0.05): boolean {
  return mix(i, 1) / 0xffffffff < badRate;
}

export function orderEvent(i: number, badRate = 0.05): OrderEvent {
  const h = mix(i, 2);
  const amount = Math.round((h % 100_000) + 1) / 100;
  const event: OrderEvent = {
    order_id: i,
    customer_id: `c-${h % 5000}`,
    amount,
    currency: CURRENCIES[h % CURRENCIES.length]!,
    status: STATUSES[(h >>> 3) % STATUSES.length]!,
    email: `user${h % 9973}@example.com`,
    quantity: 1 + (h % 9),
    created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  };
  if (isBadOrder(i, badRate)) {
    // Four ways to be wrong: a range rule, accepted values, a regex, and a type error.
    switch (h % 4) {
      case 0:
        event.amount = -amount;
        break;
      case 1:
        event.status = "lost";
        break;
      case 2:
        event.email = "not-an-email";
        break;
      default:
        event.amount = "twelve";
    }
  }
  return event;
}

export function* orderEvents(count: number, badRate = 0.05, start = 0): Generator<OrderEvent> {
  for (let i = start; i < start + count; i++) yield orderEvent(i, badRate);
}

/** Orders 0..count-1 as JSON lines into `path`, written as fast as the disk takes them (not buffered whole). */
export async function writeOrderEvents(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  let chunk = "";
  for (const event of orderEvents(count)) {
    chunk += JSON.stringify(event) + "\n";
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
      chunk = "";
    }
  }
  await new Promise<void>((resolve, reject) => out.once("error", reject).end(chunk, () => resolve()));
}
