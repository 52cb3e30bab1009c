import type { IncomingMessage, ServerResponse } from "node:http";
import type { DeliveryQueue } from "./deliveries.js";
import { eventsOf, parseBody } from "./events.js";
import { answerCloudEventsHandshake, answerEventGridValidation } from "./handshake.js";
import { plain, readBody, signatureOk, tooLarge } from "./http.js";
import type { ResolvedWebhookOptions } from "./spec.js";

/** The counters the request handler keeps (see WebhookStats). */
export interface WebhookCounters {
  requests: number;
  events: number;
  rejectedFull: number;
  rejectedTooLarge: number;
  rejectedSignature: number;
  validations: number;
}

export interface WebhookHandlerContext {
  o: ResolvedWebhookOptions;
  stat: WebhookCounters;
  deliveries: DeliveryQueue;
  closed(): boolean;
}

/**
 * The HTTP side of a WebhookSource: one request in, and either an answer now (a handshake, a
 * refusal) or its events queued, the request left open until their batch is settled.
 *
 * Status codes: 200 committed / validation handshake; 401 bad or missing signature; 403 origin
 * not allowed; 404 wrong path; 405 wrong method; 413 too large; 429 queue full; 503 batch failed
 * or shutting down.
 */
export async function handleWebhookRequest(ctx: WebhookHandlerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { o, stat } = ctx;
  const path = (req.url ?? "/").split("?")[0];
  if (path !== o.path) return plain(res, 404, `no webhook at ${path}; events go to ${o.path}\n`);
  if (req.method === "OPTIONS") {
    if (answerCloudEventsHandshake(req, res, o)) stat.validations++;
    return;
  }
  if (req.method !== "POST") return plain(res, 405, "use POST\n", { allow: "POST, OPTIONS" });
  if (ctx.closed()) return plain(res, 503, "shutting down; retry later\n", { "retry-after": String(o.retryAfterSeconds) });
  stat.requests++;

  const declared = Number(req.headers["content-length"] ?? "0");
  const bytes = declared > o.maxBodyBytes ? "too-large" : await readBody(req, o.maxBodyBytes);
  if (bytes === "too-large") {
    stat.rejectedTooLarge++;
    return tooLarge(req, res, o.maxBodyBytes);
  }
  if (bytes === "aborted") return;

  if (o.hmacSecret !== undefined && !signatureOk(req, o.signatureHeader, o.hmacSecret, bytes)) {
    stat.rejectedSignature++;
    return plain(res, 401, `missing or wrong signature in header ${o.signatureHeader} (expected sha256=<hex HMAC-SHA256 of the body>)\n`);
  }

  const body = parseBody(bytes);
  const validation = answerEventGridValidation(req, res, body);
  if (validation === "validated") stat.validations++;
  if (validation !== undefined) return;

  const events = eventsOf(req, body, o.unwrapData);
  if (events.length === 0) return plain(res, 200, "");
  if (events.length > o.maxQueued) {
    stat.rejectedTooLarge++;
    return plain(res, 413, `a delivery of ${events.length} events can never fit the queue (maxQueued ${o.maxQueued}); send smaller batches\n`);
  }
  if (!ctx.deliveries.fits(events.length, bytes.length)) {
    stat.rejectedFull++;
    return plain(res, 429, "queue full; retry later\n", { "retry-after": String(o.retryAfterSeconds) });
  }
  stat.events += events.length;
  ctx.deliveries.add(res, events, bytes.length);
}
