/**
 * The walk-through's data: order events shaped for contracts/bronze_orders.yaml, numbered so
 * that each source of the walk owns a range of order ids and every count can be checked, and a
 * local SSE feed that serves them with event ids, as a real server would.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { isBadOrder, orderEvent } from "../orders.js";

export interface BronzeOrder {
  order_id: string;
  customer_id: string;
  amount: number | string;
  currency: string;
  status: string;
  email: string;
  created_at: string;
  items: Array<{ sku: string; quantity: number; unit_price: number }>;
}

/** Order i in the bronze contract's shape; about 5 % break one of its rules (examples/orders.ts). */
export function bronzeOrder(i: number): BronzeOrder {
  const e = orderEvent(i);
  return {
    order_id: `o-${String(i).padStart(7, "0")}`,
    customer_id: e.customer_id,
    amount: e.amount,
    currency: e.currency,
    status: e.status,
    email: e.email,
    created_at: e.created_at,
    items: [{ sku: `sku-${i % 97}`, quantity: e.quantity, unit_price: typeof e.amount === "number" ? Math.abs(e.amount) / e.quantity : 0 }],
  };
}

/** Ids from..to-1 split into the good and the bad, as the contract will judge them. */
export function expected(from: number, to: number): { good: number; bad: number } {
  let bad = 0;
  for (let i = from; i < to; i++) if (isBadOrder(i)) bad++;
  return { good: to - from - bad, bad };
}

export function* range(from: number, to: number): Generator<BronzeOrder> {
  for (let i = from; i < to; i++) yield bronzeOrder(i);
}

export function ndjson(from: number, to: number): string {
  let out = "";
  for (const o of range(from, to)) out += JSON.stringify(o) + "\n";
  return out;
}

export interface SseFeed {
  url: string;
  close(): Promise<void>;
}

/**
 * `GET /orders`: orders from..to-1 as SSE events with ids; a client that reconnects with
 * `Last-Event-ID: n` gets the events after n (the feed's resume story). The connection stays open
 * after the last event, as a live feed does.
 */
export async function serveSse(from: number, to: number): Promise<SseFeed> {
  const open = new Set<import("node:http").ServerResponse>();
  const server: Server = createServer((req, res) => {
    if (req.url !== "/orders") {
      res.writeHead(404).end();
      return;
    }
    const last = Number(req.headers["last-event-id"] ?? from - 1);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    open.add(res);
    res.on("close", () => open.delete(res));
    let i = Math.max(from, last + 1);
    // Written in slices, letting the socket drain, so a slow reader is not buried.
    const pump = () => {
      while (i < to) {
        const ok = res.write(`id: ${i}\nevent: order\ndata: ${JSON.stringify(bronzeOrder(i))}\n\n`);
        i++;
        if (!ok) return void res.once("drain", pump);
      }
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/orders`,
    close: async () => {
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
