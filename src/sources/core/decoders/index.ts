/** Payload decoding shared by every byte source: one abstraction, one option declaration. */
export { customDecoder, jsonDecoder, textDecoder } from "./basic.js";
export { DECODE_OPTIONS, TEXT_DECODE_OPTIONS, codeOptions, decoderFrom, type DecodeSettings } from "./options.js";
export { RegistryDecoder, SchemaRegistryError, type SchemaRegistrySettings } from "./registry.js";
export { DECODER_NAMES, prepareAll, rawPayload, type DecoderName, type Deserialize, type Payload, type PayloadDecoder } from "./types.js";
