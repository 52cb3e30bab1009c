import { ConfigError } from "../../errors.js";
import { redactText } from "../../util/redact.js";
import type { PayloadDecoder } from "./decoders/types.js";
import { parseJsonRecord } from "../../util/exact-json.js";

/**
 * The part of a JSON event a contract sees: a JSON object as is; anything else (plain text,
 * a JSON number or array) wrapped as `{ data }` so it reaches validation instead of being dropped.
 */
export function decodeEventData(data: string): unknown {
  try {
    const v: unknown = parseJsonRecord(data);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : { data: v };
  } catch {
    return { data };
  }
}

/**
 * `decoder: json` of the text-event sources (SSE, WebSocket): event data that is not JSON is kept
 * as `{ data }` rather than quarantined, since such feeds often mix JSON with plain text.
 */
export const eventJsonDecoder: PayloadDecoder = {
  name: "json",
  decode: (payload, words) => {
    if (payload === undefined || payload === null) return { error: words?.missing ?? "no data" };
    if (typeof payload !== "string") return { error: `${words?.name ?? "data"} is not UTF-8 text` };
    return { value: decodeEventData(payload) };
  },
};

/** Validate a connector URL early, with a message that names the option. */
export function checkUrl(url: string | URL, protocols: string[], what: string): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    throw new ConfigError("url", `${what}: expected an absolute URL such as ${protocols[0]}//host/path; got ${JSON.stringify(redactText(String(url).split("?")[0] ?? ""))}`);
  }
  if (!protocols.includes(u.protocol)) {
    throw new ConfigError("url", `${what}: expected a ${protocols.map((p) => p.replace(":", "")).join(" or ")} URL; got ${u.protocol}`);
  }
  return u.toString();
}
