import type { IncomingMessage } from "node:http";
import { jsonText, parseJsonRecord } from "../../util/exact-json.js";
import type { WebhookEvent } from "./deliveries.js";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A request body as text (undefined when it is not UTF-8) and, when it is JSON, parsed. */
export interface WebhookBody {
  bytes: Buffer;
  text: string | undefined;
  parsed: unknown;
  isJson: boolean;
}

export function parseBody(bytes: Buffer): WebhookBody {
  let text: string | undefined;
  try {
    text = utf8.decode(bytes);
  } catch {
    text = undefined;
  }
  let parsed: unknown;
  let isJson = false;
  if (text !== undefined) {
    try {
      parsed = parseJsonRecord(text);
      isJson = true;
    } catch {
      isJson = false;
    }
  }
  return { bytes, text, parsed, isJson };
}

const META_HEADERS = ["content-type", "aeg-event-type", "aeg-subscription-name", "aeg-delivery-count", "ce-type", "ce-source", "user-agent"];

/**
 * The events of one delivery. A body that is not UTF-8 is one poison event; CloudEvents binary
 * mode (ce-* headers) is one event; a JSON array (Event Grid and CloudEvents batches) is one event
 * per element; any other JSON is one event; other text arrives as `{ data }`.
 */
export function eventsOf(req: IncomingMessage, body: WebhookBody, unwrapData: boolean): WebhookEvent[] {
  const { bytes, text, parsed, isJson } = body;
  const meta: Record<string, unknown> = {};
  for (const h of META_HEADERS) {
    const v = req.headers[h];
    if (v !== undefined) meta[h] = v;
  }
  if (text === undefined) {
    return [{ value: undefined, raw: new Uint8Array(bytes), decodeError: "webhook body is not valid UTF-8", position: null, meta, bytes: bytes.length }];
  }
  // CloudEvents binary mode: attributes in ce-* headers, the body is the data.
  const specversion = req.headers["ce-specversion"];
  if (typeof specversion === "string") {
    const event: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(req.headers)) if (k.startsWith("ce-") && typeof v === "string") event[k.slice(3)] = v;
    if (req.headers["content-type"]) event.datacontenttype = req.headers["content-type"];
    event.data = isJson ? parsed : text;
    return [{ value: payloadOf(event, unwrapData), raw: text, position: event.id ?? null, meta, bytes: bytes.length }];
  }
  if (!isJson) return [{ value: { data: text }, raw: text, position: null, meta, bytes: bytes.length }];
  // Event Grid and CloudEvents batches are arrays: each element is one event (one record).
  const items: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  return items.map((item) => {
    const isObject = typeof item === "object" && item !== null && !Array.isArray(item);
    const raw = items.length === 1 ? text : (jsonText(item) ?? "null");
    const id = isObject ? (item as { id?: unknown }).id : undefined;
    return {
      value: isObject ? payloadOf(item as Record<string, unknown>, unwrapData) : { data: item },
      raw,
      position: typeof id === "string" || typeof id === "number" ? id : typeof id === "bigint" ? id.toString() : null,
      meta,
      bytes: raw.length,
    };
  });
}

/** The record for one event: the event itself, or (unwrapData) its `data` object. */
function payloadOf(event: Record<string, unknown>, unwrapData: boolean): unknown {
  if (!unwrapData || !("data" in event)) return event;
  const data = event.data;
  return typeof data === "object" && data !== null && !Array.isArray(data) ? data : { data };
}

/**
 * The replay keys of a delivery's events: from `header` (a delivery id such as
 * X-GitHub-Delivery) when it is set and present, else each event's own id; undefined for an
 * event that has neither, which is never taken for a replay.
 */
export function eventKeys(req: IncomingMessage, events: WebhookEvent[], header: string | undefined): Array<string | undefined> {
  const delivery = header === undefined ? undefined : req.headers[header];
  if (typeof delivery === "string" && delivery !== "") {
    return events.map((_, i) => (events.length === 1 ? `delivery:${delivery}` : `delivery:${delivery}#${i}`));
  }
  return events.map((e) => (typeof e.position === "string" || typeof e.position === "number" ? `id:${e.position}` : undefined));
}
