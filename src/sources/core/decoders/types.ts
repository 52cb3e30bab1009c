import { isUtf8 } from "node:buffer";
import type { DecodedBody, PayloadWords } from "../decode.js";

/** What a byte source hands a decoder: the bytes as received (text transports give a string). */
export type Payload = string | Uint8Array | undefined | null;

/**
 * A user's own value deserializer (Avro without a registry, CSV lines, protobuf with a known
 * type, …): the payload's bytes in, the record out. Throwing quarantines that one payload with
 * the error's message as the reason and its raw bytes; the stream goes on. It must be
 * synchronous: a function that needs to fetch something first can do so before the stream opens.
 */
export type Deserialize = (payload: Uint8Array) => Record<string, unknown>;

/** The named decoders a JSON config can choose with `decoder:`. */
export const DECODER_NAMES = ["json", "text", "avro", "protobuf"] as const;
export type DecoderName = (typeof DECODER_NAMES)[number];

/**
 * Turns one payload into a record, or into a reason to quarantine it. `decode` is synchronous so
 * sources keep their per-record fast paths; a decoder that needs something fetched first (a
 * schema registry decoder meeting a new schema id) says so through `prepare`, which a source
 * awaits for each fetched batch of payloads before it decodes them.
 */
export interface PayloadDecoder {
  /** `json`, `text`, `avro`, `protobuf` or `deserialize`: for messages and docs. */
  readonly name: DecoderName | "deserialize";
  /**
   * Fetch what `decode` will need for these payloads. Returns undefined when nothing is missing
   * (the common case: no promise per batch). Rejects only with errors a retry can fix (the
   * registry is unreachable) or that no record could survive (credentials refused); a payload
   * the registry has no schema for is not an error here, `decode` quarantines it.
   */
  prepare?(payloads: Iterable<Payload>): Promise<void> | undefined;
  decode(payload: Payload, words?: PayloadWords): DecodedBody;
}

/**
 * A payload as quarantine keeps it: text for the text decoders when the bytes are UTF-8 (readable
 * in the lake), else the exact bytes (stored base64), as binary formats need.
 */
export function rawPayload(decoder: PayloadDecoder, payload: string | Uint8Array): string | Uint8Array {
  if (typeof payload === "string") return payload;
  if ((decoder.name === "json" || decoder.name === "text") && isUtf8(payload)) {
    return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString("utf8");
  }
  return new Uint8Array(payload);
}

/** Await a decoder's `prepare` only when it has something to fetch. */
export async function prepareAll(decoder: PayloadDecoder, payloads: Iterable<Payload>): Promise<void> {
  const pending = decoder.prepare?.(payloads);
  if (pending) await pending;
}
