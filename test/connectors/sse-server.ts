/**
 * A real SSE server on loopback for the connector tests. It holds an event log and, per
 * connection, follows a plan: answer an HTTP error, drop the connection halfway through an
 * event, replay ids the client already has, go silent (stall), send keep-alives. It resumes
 * after the `Last-Event-ID` it is sent, like a real resumable feed, and records what every
 * connection asked for.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface LogEvent {
  /** Omitted: the event has no `id:` line (it inherits the previous id). */
  id?: string;
  event?: string;
  /** Text of the data (may contain newlines: sent as several data lines). */
  data?: string;
  /** Exact bytes of a single data line (for invalid UTF-8). */
  dataBytes?: Uint8Array;
}

export interface ConnectionPlan {
  /** Answer with this status instead of a stream. */
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  contentType?: string;
  /** Send `retry: <ms>` first. */
  retryField?: number;
  /** After this many events, write half of the next one and destroy the socket. */
  dropAfter?: number;
  /** After this many events, send nothing more (keep the socket open). */
  stallAfter?: number;
  /** Resume this many ids before the one the client asked for (events it already has). */
  repeat?: number;
  /** A keep-alive comment before every event. */
  keepAlives?: boolean;
  /** After the log, close the stream instead of holding it open. */
  endAfterLog?: boolean;
}

export interface SeenConnection {
  lastEventId: string | undefined;
  headers: IncomingHttpHeaders;
}

const enc = new TextEncoder();

function wire(e: LogEvent): Uint8Array {
  const parts: Uint8Array[] = [];
  if (e.id !== undefined) parts.push(enc.encode(`id: ${e.id}\n`));
  if (e.event !== undefined) parts.push(enc.encode(`event: ${e.event}\n`));
  if (e.dataBytes) parts.push(enc.encode("data: "), e.dataBytes, enc.encode("\n"));
  if (e.data !== undefined) for (const line of e.data.split("\n")) parts.push(enc.encode(`data: ${line}\n`));
  parts.push(enc.encode("\n"));
  return Buffer.concat(parts);
}

export class ScriptedSSEServer {
  readonly seen: SeenConnection[] = [];
  /** Streams the server is still writing to (closed by either side → removed). */
  active = 0;
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly open = new Set<ServerResponse>();

  constructor(
    public log: LogEvent[],
    private readonly plan: (connection: number) => ConnectionPlan = () => ({}),
  ) {}

  get url(): string {
    const addr = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${addr.port}/stream`;
  }

  /** Append events and push them to every connection that has caught up and is still live. */
  append(events: LogEvent[]): void {
    this.log.push(...events);
    for (const res of this.open) for (const e of events) res.write(wire(e));
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const n = this.seen.length + 1;
      const lastEventId = req.headers["last-event-id"] as string | undefined;
      this.seen.push({ lastEventId, headers: req.headers });
      const plan = this.plan(n);
      if (plan.status !== undefined && plan.status !== 200) {
        res.writeHead(plan.status, { "content-type": "text/plain", ...plan.headers });
        res.end(plan.body ?? "");
        return;
      }
      res.writeHead(200, { "content-type": plan.contentType ?? "text/event-stream", "cache-control": "no-cache", ...plan.headers });
      this.active++;
      res.on("close", () => this.active--);
      if (plan.status === 200 && plan.body !== undefined) {
        res.end(plan.body);
        return;
      }
      res.flushHeaders();
      if (plan.retryField !== undefined) res.write(`retry: ${plan.retryField}\n\n`);
      let start = 0;
      if (lastEventId !== undefined) {
        const at = this.log.findIndex((e) => e.id === lastEventId);
        start = at === -1 ? 0 : at + 1;
      }
      // Step back over `repeat` events that carry an id (a server resumes at an id, not between).
      for (let k = plan.repeat ?? 0; k > 0 && start > 0; ) {
        start--;
        if (this.log[start]!.id !== undefined) k--;
      }
      let sent = 0;
      for (let i = start; i < this.log.length; i++) {
        if (plan.stallAfter !== undefined && sent >= plan.stallAfter) return;
        const bytes = wire(this.log[i]!);
        if (plan.dropAfter !== undefined && sent >= plan.dropAfter) {
          res.write(bytes.subarray(0, Math.max(1, Math.floor(bytes.length / 2))), () => res.socket?.destroy());
          return;
        }
        if (plan.keepAlives) res.write(": keep-alive\n\n");
        res.write(bytes);
        sent++;
      }
      if (plan.endAfterLog) {
        res.end();
        return;
      }
      // Live: hold the stream open for appended events.
      this.open.add(res);
      res.on("close", () => this.open.delete(res));
    });
    this.server.on("connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
