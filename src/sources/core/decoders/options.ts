import { ConfigError } from "../../../errors.js";
import type { OptionSpec } from "../spec.js";
import { customDecoder, jsonDecoder, textDecoder } from "./basic.js";
import { RegistryDecoder } from "./registry.js";
import type { Deserialize, PayloadDecoder } from "./types.js";

const DESERIALIZE: OptionSpec = {
  type: "any",
  description:
    "From code only: a function `(bytes: Uint8Array) => record` for formats without a named decoder (CSV lines, " +
    "your own Avro or protobuf types). What it throws quarantines that payload with the message as the reason; the stream goes on. " +
    "Not together with `decoder`.",
};

/**
 * The decoding options of a byte source (Kafka, WebSocket, SQS, Pub/Sub, Service Bus), declared
 * once: spread into a source's spec so that validation and the reference docs come from here.
 */
export const DECODE_OPTIONS = {
  decoder: {
    type: "string",
    enum: ["json", "text", "avro", "protobuf"],
    description:
      "How a payload becomes a record (default `json`). `json`: UTF-8 JSON. `text`: the UTF-8 text as `{ value }`. " +
      "`avro` / `protobuf`: the Confluent Schema Registry wire format (magic byte 0, 4-byte schema id, protobuf message indexes), " +
      "schemas fetched from `schemaRegistryUrl`; needs `npm install @kafkajs/confluent-schema-registry`. " +
      "A payload that does not decode is quarantined with its bytes and the reason. See Decoding.",
  },
  deserialize: DESERIALIZE,
  schemaRegistryUrl: {
    type: "string",
    description: "Schema registry base URL for `decoder: avro` / `protobuf` (Confluent, or a compatible API such as Apicurio's `/apis/ccompat/v7`).",
  },
  schemaRegistryAuth: {
    type: "object",
    secret: true,
    description: "HTTP basic credentials for the schema registry, `{ username, password }` (Confluent Cloud: API key and secret).",
  },
} as const satisfies Record<string, OptionSpec>;

/** The decoding options of a text source (SSE, a file of lines): no binary formats. */
export const TEXT_DECODE_OPTIONS = {
  decoder: {
    type: "string",
    enum: ["json", "text"],
    description: "How a payload becomes a record (default `json`). `json`: JSON, as this source reads it. `text`: the UTF-8 text as `{ value }`, never parsed. See Decoding.",
  },
  deserialize: DESERIALIZE,
} as const satisfies Record<string, OptionSpec>;

/**
 * Parsed options typed for a constructor that takes `deserialize?: Deserialize`. A JSON config
 * cannot hold a function; whatever it has there is refused by `decoderFrom`, with a message.
 */
export function codeOptions<T extends { deserialize?: unknown }>(options: T): Omit<T, "deserialize"> & { deserialize?: Deserialize } {
  return options as Omit<T, "deserialize"> & { deserialize?: Deserialize };
}

/** The decoding options as a source holds them (after parseOptions, or as given in code). */
export interface DecodeSettings {
  decoder?: string;
  deserialize?: unknown;
  schemaRegistryUrl?: string;
  schemaRegistryAuth?: Record<string, unknown>;
}

/**
 * The decoder a source's options ask for. `json` is the source's own JSON decoding (pass it when
 * it is not the strict `decodeBody`, as SSE's, which keeps non-JSON text as `{ data }`).
 */
export function decoderFrom(options: DecodeSettings, where: string, json: PayloadDecoder = jsonDecoder): PayloadDecoder {
  const { decoder, deserialize } = options;
  if (deserialize !== undefined && deserialize !== null) {
    if (typeof deserialize !== "function") {
      throw new ConfigError(`${where}: deserialize`, `expected a function (bytes) => record, which only code can give; a JSON config chooses a named \`decoder\` instead`);
    }
    if (decoder !== undefined) throw new ConfigError(`${where}: deserialize`, `give either deserialize or decoder (${decoder}), not both`);
    return customDecoder(deserialize as Deserialize);
  }
  switch (decoder) {
    case undefined:
    case "json":
      return json;
    case "text":
      return textDecoder;
    case "avro":
    case "protobuf":
      return new RegistryDecoder(decoder, { url: registryUrl(options, where, decoder), auth: registryAuth(options.schemaRegistryAuth, where) });
    default:
      throw new ConfigError(`${where}: decoder`, `expected one of json, text, avro, protobuf; got ${JSON.stringify(decoder)}`);
  }
}

function registryUrl(options: DecodeSettings, where: string, decoder: string): string {
  const url = options.schemaRegistryUrl;
  if (typeof url !== "string" || url === "") {
    throw new ConfigError(`${where}: schemaRegistryUrl`, `is required with decoder: ${decoder}: the schema registry's base URL, e.g. http://registry:8081`);
  }
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http");
  } catch {
    throw new ConfigError(`${where}: schemaRegistryUrl`, "expected an http or https URL, e.g. http://registry:8081");
  }
  return url;
}

function registryAuth(auth: Record<string, unknown> | undefined, where: string): { username: string; password: string } | undefined {
  if (auth === undefined || auth === null) return undefined;
  const { username, password } = auth;
  if (typeof username !== "string" || username === "" || typeof password !== "string" || password === "" || Object.keys(auth).some((k) => k !== "username" && k !== "password")) {
    throw new ConfigError(`${where}: schemaRegistryAuth`, "expected { username, password }, both non-empty strings (use env:NAME references)");
  }
  return { username, password };
}
