import { isUtf8 } from "node:buffer";
import { parseJsonRecord } from "../../util/exact-json.js";

export type DecodedBody = { value: unknown } | { error: string };

/** How a decode error names the payload: a queue message's `body`, a Kafka record's `value` … */
export interface PayloadWords {
  name: string;
  /** The reason when there is no payload at all. */
  missing: string;
}

const BODY: PayloadWords = { name: "body", missing: "message has no body" };

/**
 * A message payload as a record: UTF-8 JSON, strictly. A JSON object is the record; any other
 * JSON value arrives as `{ data }` (it reaches validation and is usually quarantined by the
 * contract, like every other connector does it). Text that is not JSON, or bytes that are not
 * UTF-8, are a decode error: a poison message, quarantined with its raw payload (I6). This is
 * `decoder: json` of the byte sources (queues, Kafka); the other decoders are in ./decoders/.
 */
export function decodeBody(body: string | Uint8Array | undefined | null, words: PayloadWords = BODY): DecodedBody {
  if (body === undefined || body === null) return { error: words.missing };
  let text: string;
  if (typeof body === "string") {
    text = body;
  } else {
    if (!isUtf8(body)) return { error: `${words.name} is not valid UTF-8` };
    text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  }
  let v: unknown;
  try {
    v = parseJsonRecord(text);
  } catch (err) {
    return { error: `${words.name} is not JSON: ${(err as Error).message}` };
  }
  return { value: wrapJson(v) };
}

/** A parsed JSON value as a record: objects as they are, anything else as `{ data }`. */
export function wrapJson(v: unknown): unknown {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v : { data: v };
}
