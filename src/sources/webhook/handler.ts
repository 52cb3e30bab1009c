import type { IncomingMessage, ServerResponse } from "node:http";
import type { DeliveryQueue, WebhookEvent } from "./deliveries.js";
import { eventKeys, eventsOf, parseBody } from "./events.js";
import { answerCloudEventsHandshake, answerEventGridValidation } from "./handshake.js";
import { plain, readBody, refuseAndClose, signatureOk, type BodyRead } from "./http.js";
import type { ResolvedWebhookOptions } from "./spec.js";

/** The counters the request handler keeps (see WebhookStats). */
export interface WebhookCounters {
  requests: number;
  events: number;
  rejectedFull: number;
  rejectedTooLarge: number;
  rejectedSignature: number;
  rejectedTimeout: number;
  rejectedHandshake: number;
  duplicates: number;
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
 * refusal, a replay) or its events queued, the request left open until their batch is settled.
 *
 * Status codes: 200 committed / validation handshake / replay of committed events; 400 a
 * validation handshake without a code or mixed with events; 401 bad or missing signature; 403
 * origin not allowed; 404 wrong path; 405 wrong method; 408 body slower than bodyTimeoutMs; 413
 * too large; 429 queue full; 503 batch failed, an earlier copy still in flight, or shutting down.
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

  const bytes = await readWithinBounds(ctx, req);
  if (!Buffer.isBuffer(bytes)) return refuseBody(ctx, req, res, bytes);

  if (o.hmacSecret !== undefined && !signatureOk(req, o.signatureHeader, o.hmacSecret, bytes)) {
    stat.rejectedSignature++;
    return plain(res, 401, `missing or wrong signature in header ${o.signatureHeader} (expected sha256=<hex HMAC-SHA256 of the body>)\n`);
  }

  const body = parseBody(bytes);
  const validation = answerEventGridValidation(req, res, body);
  if (validation === "validated") stat.validations++;
  if (validation === "refused") stat.rejectedHandshake++;
  if (validation !== undefined) return;

  const all = eventsOf(req, body, o.unwrapData);
  if (all.length === 0) return plain(res, 200, "");
  if (all.length > o.maxQueued) {
    stat.rejectedTooLarge++;
    return plain(res, 413, `a delivery of ${all.length} events can never fit the queue (maxQueued ${o.maxQueued}); send smaller batches\n`);
  }
  const fresh = screenReplays(ctx, req, res, all);
  if (fresh === undefined) return;
  if (!ctx.deliveries.fits(fresh.events.length, bytes.length)) {
    stat.rejectedFull++;
    return plain(res, 429, "queue full; retry later\n", { "retry-after": String(o.retryAfterSeconds) });
  }
  stat.events += fresh.events.length;
  stat.duplicates += fresh.duplicates;
  ctx.deliveries.add(res, fresh.events, bytes.length, fresh.keys);
}

/** Read the body; its bytes count against maxQueuedBytes while it is read. */
async function readWithinBounds(ctx: WebhookHandlerContext, req: IncomingMessage): Promise<BodyRead> {
  const { o, deliveries } = ctx;
  if (Number(req.headers["content-length"] ?? "0") > o.maxBodyBytes) return "too-large";
  let reserved = 0;
  try {
    return await readBody(req, {
      limit: o.maxBodyBytes,
      timeoutMs: o.bodyTimeoutMs,
      admit: (n) => {
        if (!deliveries.reserve(n)) return false;
        reserved += n;
        return true;
      },
    });
  } finally {
    // The caller queues the body's bytes at once (synchronously) or lets them go.
    deliveries.unreserve(reserved);
  }
}

/** Answer a body that was not read whole, and close the connection (the rest of it is unread). */
function refuseBody(ctx: WebhookHandlerContext, req: IncomingMessage, res: ServerResponse, why: Exclude<BodyRead, Buffer>): void {
  const { o, stat } = ctx;
  const retry = { "retry-after": String(o.retryAfterSeconds) };
  switch (why) {
    case "too-large":
      stat.rejectedTooLarge++;
      return refuseAndClose(req, res, 413, `body larger than maxBodyBytes (${o.maxBodyBytes})\n`);
    case "full":
      stat.rejectedFull++;
      return refuseAndClose(req, res, 429, "queue full (maxQueuedBytes, counting bodies being read); retry later\n", retry);
    case "timeout":
      stat.rejectedTimeout++;
      return refuseAndClose(req, res, 408, `body not received within bodyTimeoutMs (${o.bodyTimeoutMs}); send it again\n`);
    case "aborted":
      return;
  }
}

/**
 * With dedupeWindow on: drop the events already committed, and answer 200 at once when none is
 * left; answer 503 when an earlier copy of one is still queued or in a batch (storing it again
 * now could duplicate it; after its commit the retry is recognised). Returns the events to queue,
 * or undefined when the request is answered.
 */
function screenReplays(
  ctx: WebhookHandlerContext,
  req: IncomingMessage,
  res: ServerResponse,
  events: WebhookEvent[],
): { events: WebhookEvent[]; keys: Array<string | undefined>; duplicates: number } | undefined {
  const { o, stat } = ctx;
  if (o.dedupeWindow === 0) return { events, keys: [], duplicates: 0 };
  const keys = eventKeys(req, events, o.dedupeHeader);
  const screened = ctx.deliveries.screen(keys);
  if (screened.inFlight !== undefined) {
    plain(res, 503, "an earlier delivery of an event in this one is still being committed; retry later\n", {
      "retry-after": String(o.retryAfterSeconds),
    });
    return undefined;
  }
  if (screened.fresh.length === 0) {
    stat.duplicates += screened.duplicates;
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
    return undefined;
  }
  return { events: screened.fresh.map((i) => events[i]!), keys: screened.fresh.map((i) => keys[i]), duplicates: screened.duplicates };
}
