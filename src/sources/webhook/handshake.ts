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
 * 400 (a validation request without a code, or a validation event delivered together with other
 * events: answering the handshake would drop them), undefined when the POST is an ordinary delivery.
 */
export function answerEventGridValidation(req: IncomingMessage, res: ServerResponse, body: WebhookBody): "validated" | "refused" | undefined {
  const items: unknown[] = !body.isJson ? [] : Array.isArray(body.parsed) ? body.parsed : [body.parsed];
  const validations = items.filter(isValidationEvent);
  if (validations.length === 0 && req.headers["aeg-event-type"] !== "SubscriptionValidation") return undefined;
  const others = items.length - validations.length;
  if (validations.length > 0 && others > 0) {
    plain(
      res,
      400,
      `a ${VALIDATION_EVENT} must be delivered alone; this delivery also holds ${others} other event${others === 1 ? "" : "s"}, ` +
        "and none of them was stored: deliver the handshake and the events separately\n",
    );
    return "refused";
  }
  const code = validations.map((e) => e.data?.validationCode).find((c) => typeof c === "string");
  if (typeof code !== "string") {
    plain(res, 400, `expected a ${VALIDATION_EVENT} with data.validationCode\n`);
    return "refused";
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ validationResponse: code }));
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

interface ValidationEvent {
  eventType?: unknown;
  type?: unknown;
  data?: { validationCode?: unknown };
}

/** An Event Grid SubscriptionValidationEvent (with or without its code). */
function isValidationEvent(item: unknown): item is ValidationEvent {
  if (typeof item !== "object" || item === null || Array.isArray(item)) return false;
  const e = item as ValidationEvent;
  return e.eventType === VALIDATION_EVENT || e.type === VALIDATION_EVENT;
}
