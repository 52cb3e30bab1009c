/**
 * A real HTTP server on loopback for the polling source's tests: every request is answered by a
 * handler the test gives (status, headers, body), and every request's headers are recorded.
 * `conditionalJson` answers like a well-behaved REST feed: ETag + Last-Modified, 304 when the
 * client's validators match.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash } from "node:crypto";

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface SeenRequest {
  url: string;
  headers: IncomingHttpHeaders;
}

export class PollServer {
  readonly seen: SeenRequest[] = [];
  private server: Server | undefined;

  constructor(public handler: (req: SeenRequest, n: number) => Answer) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const seen = { url: req.url ?? "/", headers: req.headers };
      this.seen.push(seen);
      const a = this.handler(seen, this.seen.length - 1);
      res.writeHead(a.status ?? 200, a.headers ?? {});
      res.end(a.body);
    });
    await new Promise<void>((ok) => this.server!.listen(0, "127.0.0.1", ok));
    return this;
  }

  url(path = "/feed"): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${path}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((ok) => (this.server ? this.server.close(() => ok()) : ok()));
  }
}

/** A feed document served with an ETag (its hash) and a Last-Modified, and 304 when the client has it. */
export function conditionalJson(doc: () => unknown, lastModified = "Wed, 02 Dec 2026 10:00:00 GMT"): (req: SeenRequest) => Answer {
  return (req): Answer => {
    const body = JSON.stringify(doc());
    const etag = `"${createHash("sha1").update(body).digest("hex").slice(0, 16)}"`;
    if (req.headers["if-none-match"] === etag) return { status: 304, headers: { etag } };
    return { headers: { "content-type": "application/json", etag, "last-modified": lastModified }, body };
  };
}

/** A clock that never waits: `sleep` records the wait and returns at once (false once aborted). */
export class FakeClock {
  readonly sleeps: number[] = [];
  constructor(public nowMs = Date.parse("2026-12-02T10:00:00Z")) {}
  now = (): number => this.nowMs;
  sleep = async (ms: number, signal: AbortSignal): Promise<boolean> => {
    this.sleeps.push(ms);
    this.nowMs += ms;
    await Promise.resolve();
    return !signal.aborted;
  };
}
