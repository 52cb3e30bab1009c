/**
 * The SSE feed of `bench:temporal --case continuous`, run as a child process (so that offering
 * events does not take the consumer's JavaScript thread): a loopback SSE server that, from the
 * first connection on, offers order events (`examples/orders.ts`, ids 1, 2, …) at a fixed rate
 * for a fixed time, then stays open and silent. A reconnect with `Last-Event-ID` is served what
 * followed that id, then the live feed, like a resumable server.
 *
 * argv: <rate events/s> <seconds>. IPC to the parent: `{ type: "listening", url }`, then, once
 * every event is offered, `{ type: "done", offered, ticks, connections, maxBufferedBytes }` where
 * `ticks` lists `[lastIdOffered, wallClockMs]` for every write (the offer time of its events).
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { orderEvent } from "../../examples/orders.js";

const rate = Number(process.argv[2] ?? 30_000);
const seconds = Number(process.argv[3] ?? 20);
const total = Math.round(rate * seconds);
const TICK_MS = 5;

const now = () => performance.timeOrigin + performance.now();
/** Event index i has id i + 1. */
const wire = (i: number) => `id: ${i + 1}\ndata: ${JSON.stringify(orderEvent(i))}\n\n`;

const live = new Set<ServerResponse>();
const sockets = new Set<Socket>();
const ticks: Array<[number, number]> = [];
let offered = 0;
let connections = 0;
let maxBufferedBytes = 0;
let startedAt: number | undefined;

function offer(): void {
  const due = Math.min(total, Math.floor(((now() - startedAt!) / 1000) * rate));
  if (due > offered) {
    let chunk = "";
    for (let i = offered; i < due; i++) chunk += wire(i);
    for (const res of live) {
      res.write(chunk);
      maxBufferedBytes = Math.max(maxBufferedBytes, res.writableLength);
    }
    offered = due;
    ticks.push([offered, now()]);
  }
  if (offered >= total) {
    clearInterval(timer);
    process.send!({ type: "done", offered, ticks, connections, maxBufferedBytes });
  }
}
let timer: NodeJS.Timeout | undefined;

const server = createServer((req, res) => {
  connections++;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  const lastId = Number(req.headers["last-event-id"] ?? 0) || 0;
  // Catch up after `Last-Event-ID`, then follow the live feed.
  let replay = "";
  for (let i = lastId; i < offered; i++) replay += wire(i);
  if (replay) res.write(replay);
  live.add(res);
  res.on("close", () => live.delete(res));
  if (startedAt === undefined) {
    startedAt = now();
    timer = setInterval(offer, TICK_MS);
  }
});
server.on("connection", (s: Socket) => {
  sockets.add(s);
  s.on("close", () => sockets.delete(s));
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.send!({ type: "listening", url: `http://127.0.0.1:${port}/orders` });
});
// The parent disconnects (or dies): close everything and exit.
process.on("disconnect", () => {
  clearInterval(timer);
  for (const s of sockets) s.destroy();
  server.close(() => process.exit(0));
});
