import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

/** Answer with a plain-text body. */
export function plain(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers });
  res.end(body);
}

/** How reading a body ended: its bytes, or why it was cut. */
export type BodyRead = Buffer | "too-large" | "full" | "timeout" | "aborted";

export interface BodyLimits {
  /** Larger bodies stop at once ("too-large"). */
  limit: number;
  /** The whole body must arrive within this many ms of the headers ("timeout"). */
  timeoutMs: number;
  /** Asked before each chunk is kept; false stops reading ("full"). */
  admit: (bytes: number) => boolean;
}

/**
 * Read a body within its limits; stop as soon as one is broken. The deadline covers the whole
 * body, so a sender that trickles a byte at a time is cut like one that stalls.
 */
export function readBody(req: IncomingMessage, limits: BodyLimits): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (v: BodyRead) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.removeListener("data", onData);
      if (!Buffer.isBuffer(v)) req.pause();
      resolve(v);
    };
    const timer = setTimeout(() => settle("timeout"), limits.timeoutMs);
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.limit) return settle("too-large");
      if (!limits.admit(chunk.length)) return settle("full");
      size += chunk.length;
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => settle(Buffer.concat(chunks, size)));
    req.once("error", () => settle("aborted"));
    req.once("close", () => settle(req.complete ? Buffer.concat(chunks, size) : "aborted"));
  });
}

/** Answer first, then close the connection: the sender sees the status instead of a reset, and no unread body is left. */
export function refuseAndClose(req: IncomingMessage, res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers, connection: "close" });
  res.end(body, () => req.socket.destroy());
}

/** The request carries the HMAC-SHA256 of exactly this body in `header` (`sha256=<hex>` or bare hex). */
export function signatureOk(req: IncomingMessage, header: string, secret: string, body: Buffer): boolean {
  const value = req.headers[header];
  if (typeof value !== "string") return false;
  const hex = value.trim().replace(/^sha256=/i, "");
  if (!/^[0-9a-f]{64}$/i.test(hex)) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(hex, "hex"));
}
