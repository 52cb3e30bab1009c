import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

/** Answer with a plain-text body. */
export function plain(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...headers });
  res.end(body);
}

/** Read at most `limit` bytes; stop as soon as the body is known to be larger. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too-large" | "aborted"> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (v: Buffer | "too-large" | "aborted") => {
      if (settled) return;
      settled = true;
      req.removeListener("data", onData);
      resolve(v);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        settle("too-large");
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => settle(Buffer.concat(chunks, size)));
    req.once("error", () => settle("aborted"));
    req.once("close", () => settle(req.complete ? Buffer.concat(chunks, size) : "aborted"));
  });
}

/** Answer 413 first, then stop reading: the sender sees the status instead of a reset. */
export function tooLarge(req: IncomingMessage, res: ServerResponse, maxBodyBytes: number): void {
  res.writeHead(413, { "content-type": "text/plain", connection: "close" });
  res.end(`body larger than maxBodyBytes (${maxBodyBytes})\n`, () => req.socket.destroy());
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
