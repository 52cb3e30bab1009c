/**
 * The two subscription handshakes a push endpoint must answer before Event Grid (or any
 * CloudEvents sender) delivers to it: Event Grid's SubscriptionValidationEvent (a POST) and the
 * CloudEvents 1.0 webhook abuse protection (an OPTIONS request).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { WebhookBody } from "./events.js";
import { plain } from "./http.js";

const VALIDATION_EVENT = "Microsoft.EventGrid.SubscriptionValidationEvent";

/**
 * Answer an Event Grid (Event Grid schema) subscription validation, if this POST is one.
 * Returns "validated" when it answered with the validation code, "refused" when it answered
 * 400 (a validation request without a code), undefined when the POST is an ordinary delivery.
 */
export function answerEventGridValidation(req: IncomingMessage, res: ServerResponse, body: WebhookBody): "validated" | "refused" | undefined {
  const validation = body.isJson ? findValidation(body.parsed) : undefined;
  if (validation === undefined && req.headers["aeg-event-type"] !== "SubscriptionValidation") return undefined;
  if (validation === undefined) {
    plain(res, 400, `expected a ${VALIDATION_EVENT} with data.validationCode\n`);
    return "refused";
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ validationResponse: validation }));
  return "validated";
}

/**
 * CloudEvents 1.0 webhook abuse protection: the OPTIONS validation handshake. Returns true when
 * it granted an origin.
 */
export function answerCloudEventsHandshake(
  req: IncomingMessage,
  res: ServerResponse,
  o: { allowedOrigins?: readonly string[] | undefined; allowedRate?: number | undefined },
): boolean {
  const origin = req.headers["webhook-request-origin"];
  if (typeof origin !== "string" || origin === "") {
    plain(res, 200, "", { allow: "POST, OPTIONS" });
    return false;
  }
  if (o.allowedOrigins && !o.allowedOrigins.includes(origin)) {
    plain(res, 403, `origin ${origin} is not allowed to deliver here\n`);
    return false;
  }
  res.writeHead(200, {
    allow: "POST, OPTIONS",
    "webhook-allowed-origin": origin,
    "webhook-allowed-rate": o.allowedRate === undefined ? "*" : String(o.allowedRate),
  });
  res.end();
  return true;
}

/** The validation code of an Event Grid SubscriptionValidationEvent, if this body is one. */
function findValidation(parsed: unknown): string | undefined {
  const items: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  for (const item of items) {
    if (typeof item !== "object" || item === null) continue;
    const e = item as { eventType?: unknown; type?: unknown; data?: { validationCode?: unknown } };
    if ((e.eventType === VALIDATION_EVENT || e.type === VALIDATION_EVENT) && typeof e.data?.validationCode === "string") {
      return e.data.validationCode;
    }
  }
  return undefined;
}
