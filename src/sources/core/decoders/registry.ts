import { createRequire } from "node:module";
import { LakeLogicError } from "../../../errors.js";
import { redactText, redactUrl, secretsOfUrl } from "../../../util/redact.js";
import type { DecodedBody, PayloadWords } from "../decode.js";
import { requirePeer } from "../spec.js";
import { exactLongOptions, plainAvro } from "./avro.js";
import { bytesOf } from "./basic.js";
import { decodeMessage, messageType } from "./protobuf.js";
import type { Payload, PayloadDecoder } from "./types.js";
import { readFrame, readMessageIndexes, schemaIdOf } from "./wire.js";

export const REGISTRY_PACKAGE = "@kafkajs/confluent-schema-registry";

/** Where the schemas are and how to sign in. */
export interface SchemaRegistrySettings {
  url: string;
  /** HTTP basic credentials (Confluent Cloud: the API key and secret). */
  auth?: { username: string; password: string };
}

/** The schema registry could not be asked (unreachable, overloaded) or refused our credentials. */
export class SchemaRegistryError extends LakeLogicError {
  constructor(message: string, retriable: boolean) {
    super("SCHEMA_REGISTRY", message, { retriable });
  }
}

/** The few parts of the registry client this decoder uses. */
interface RegistryClient {
  getSchema(id: number): Promise<unknown>;
  cache: { getSchema(id: number): { type: string; schema: unknown } | undefined };
}
interface RegistryModule {
  SchemaRegistry: new (args: { host: string; auth?: { username: string; password: string }; clientId?: string }, options?: object) => RegistryClient;
}

type Format = "avro" | "protobuf";
type Resolved = { reader: (body: Uint8Array, what: string) => DecodedBody } | { error: string };

const PAYLOAD: PayloadWords = { name: "body", missing: "message has no body" };

/**
 * `decoder: avro` / `decoder: protobuf`: values in the Confluent wire format, their schemas
 * fetched by id from a schema registry (Confluent's API; also served by Apicurio, Karapace,
 * Redpanda) through the `@kafkajs/confluent-schema-registry` client, loaded when first needed.
 * Each schema id is fetched once. A payload that is not in the wire format, names a schema the
 * registry does not have, or does not parse against its schema is quarantined with the reason.
 */
export class RegistryDecoder implements PayloadDecoder {
  readonly name: Format;
  private client: RegistryClient | undefined;
  private readonly schemas = new Map<number, Resolved>();
  private readonly secrets: string[];

  constructor(
    format: Format,
    private readonly settings: SchemaRegistrySettings,
  ) {
    this.name = format;
    this.secrets = [...secretsOfUrl(settings.url), ...(settings.auth ? [settings.auth.password] : [])];
  }

  prepare(payloads: Iterable<Payload>): Promise<void> | undefined {
    let missing: Set<number> | undefined;
    for (const p of payloads) {
      if (p === undefined || p === null) continue;
      // Text payloads are read as their UTF-8 bytes, as decode reads them.
      const id = schemaIdOf(typeof p === "string" ? Buffer.from(p, "utf8") : p);
      if (id !== undefined && !this.schemas.has(id)) (missing ??= new Set()).add(id);
    }
    return missing ? this.fetch([...missing]) : undefined;
  }

  decode(payload: Payload, words: PayloadWords = PAYLOAD): DecodedBody {
    if (payload === undefined || payload === null) return { error: words.missing };
    const bytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
    const frame = readFrame(bytes, words.name);
    if ("error" in frame) return frame;
    const schema = this.schemas.get(frame.schemaId);
    if (!schema) throw new Error(`decoder ${this.name}: schema ${frame.schemaId} was not prepared before decode (a source must await prepare first)`);
    if ("error" in schema) return schema;
    return schema.reader(frame.body, words.name);
  }

  private async fetch(ids: number[]): Promise<void> {
    const client = await this.connect();
    for (const id of ids) {
      if (this.schemas.has(id)) continue;
      try {
        await client.getSchema(id);
      } catch (err) {
        const status = (err as { status?: unknown }).status;
        if (status === 404) {
          this.schemas.set(id, { error: `schema id ${id} is not in the schema registry at ${redactUrl(this.settings.url)}` });
          continue;
        }
        if (status === undefined && !(err as { name?: string }).name?.includes("Response")) {
          // Parsing the registered schema failed: every record with this id would fail the same way.
          this.schemas.set(id, { error: `schema id ${id} cannot be used: ${this.redact(err)}` });
          continue;
        }
        const refused = status === 401 || status === 403;
        throw new SchemaRegistryError(
          `schema registry at ${redactUrl(this.settings.url)}: fetching schema id ${id} failed (${this.redact(err)}); ` +
            (refused ? "the credentials were refused: check schemaRegistryAuth" : "retrying later; check schemaRegistryUrl and that the registry is up"),
          !refused,
        );
      }
      this.schemas.set(id, this.resolve(client, id));
    }
  }

  private resolve(client: RegistryClient, id: number): Resolved {
    const entry = client.cache.getSchema(id);
    const expected = this.name === "avro" ? "AVRO" : "PROTOBUF";
    if (!entry) return { error: `schema id ${id}: the registry client kept no schema` };
    if (entry.type !== expected) return { error: `schema id ${id} is a ${entry.type} schema; decoder ${this.name} reads ${expected} schemas only` };
    const schema = entry.schema as { fromBuffer(b: Buffer): unknown; message?: unknown };
    if (this.name === "avro") {
      return { reader: (body, what) => attempt(what, `Avro schema id ${id}`, () => plainAvro(schema.fromBuffer(bytesOf(body))) as Record<string, unknown>) };
    }
    return {
      reader: (body, what) => {
        const at = readMessageIndexes(body, what);
        if ("error" in at) return at;
        const type = messageType(schema.message, at.indexes);
        if ("error" in type) return { error: `protobuf schema id ${id}: ${type.error}` };
        return attempt(what, `protobuf schema id ${id} (${type.name})`, () => decodeMessage(type, body.subarray(at.offset)));
      },
    };
  }

  private async connect(): Promise<RegistryClient> {
    if (this.client) return this.client;
    const mod = await requirePeer<RegistryModule>(REGISTRY_PACKAGE, `decoder: ${this.name}`);
    // The client's own avsc builds the long type, so its `Type` checks accept it.
    const avsc = createRequire(createRequire(import.meta.url).resolve(REGISTRY_PACKAGE))("avsc") as Parameters<typeof exactLongOptions>[0];
    this.client = new mod.SchemaRegistry(
      { host: this.settings.url.replace(/\/+$/, ""), auth: this.settings.auth, clientId: "lakelogic" },
      { AVRO: exactLongOptions(avsc) },
    );
    return this.client;
  }

  private redact(err: unknown): string {
    return redactText(err instanceof Error ? err.message : String(err), this.secrets);
  }
}

function attempt(what: string, schema: string, read: () => Record<string, unknown>): DecodedBody {
  try {
    return { value: read() };
  } catch (err) {
    return { error: `${what} does not decode with ${schema}: ${err instanceof Error ? err.message : String(err)}` };
  }
}
