import { isUtf8 } from "node:buffer";
import { ConfigError } from "../../../errors.js";
import { decodeBody, type DecodedBody, type PayloadWords } from "../decode.js";
import type { Deserialize, Payload, PayloadDecoder } from "./types.js";

const BODY: PayloadWords = { name: "body", missing: "message has no body" };

/** `decoder: json`: strict UTF-8 JSON, a non-object wrapped as `{ data }` (see decodeBody). */
export const jsonDecoder: PayloadDecoder = {
  name: "json",
  decode: (payload, words) => decodeBody(payload, words),
};

/**
 * `decoder: text`: the payload as one UTF-8 string, the record `{ value: "<text>" }` (the column
 * name Kafka and Spark's text sources use). Bytes that are not UTF-8 are quarantined rather than
 * decoded with replacement characters, which would change the data silently.
 */
export const textDecoder: PayloadDecoder = {
  name: "text",
  decode(payload: Payload, words: PayloadWords = BODY): DecodedBody {
    if (payload === undefined || payload === null) return { error: words.missing };
    if (typeof payload === "string") return { value: { value: payload } };
    if (!isUtf8(payload)) return { error: `${words.name} is not valid UTF-8` };
    return { value: { value: bytesOf(payload).toString("utf8") } };
  },
};

/** A user's `deserialize` function as a decoder: what it throws becomes the quarantine reason. */
export function customDecoder(deserialize: Deserialize): PayloadDecoder {
  return {
    name: "deserialize",
    decode(payload: Payload, words: PayloadWords = BODY): DecodedBody {
      if (payload === undefined || payload === null) return { error: words.missing };
      const bytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
      let value: unknown;
      try {
        value = deserialize(bytes);
      } catch (err) {
        return { error: `deserialize failed on the ${words.name}: ${err instanceof Error ? err.message : String(err)}` };
      }
      if (isThenable(value)) {
        // Quarantining every record because of a wiring mistake would be worse than stopping.
        throw new ConfigError("deserialize", "returned a Promise: it must return the record synchronously (for schema-registry formats use decoder: avro or protobuf)");
      }
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return { error: `deserialize returned ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value} for the ${words.name}; expected an object (the record)` };
      }
      return { value };
    },
  };
}

function isThenable(v: unknown): boolean {
  return typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function";
}

/** A Buffer view of the bytes (no copy). */
export function bytesOf(payload: Uint8Array): Buffer {
  return Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
}
