/**
 * The shared payload decoders (src/sources/core/decoders): json, text, a user's `deserialize`,
 * the Confluent wire format's header and protobuf message indexes, and 64-bit integers that
 * keep every digit (Avro `long` and protobuf `int64`/`uint64` beyond 2^53). The registry path
 * against a real schema registry is in test/connectors/schema-registry.test.ts.
 */
import { createRequire } from "node:module";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { exactLongOptions } from "../../src/sources/core/decoders/avro.js";
import { decoderFrom, jsonDecoder, textDecoder } from "../../src/sources/core/decoders/index.js";
import { decodeMessage, messageType } from "../../src/sources/core/decoders/protobuf.js";
import { readFrame, readMessageIndexes } from "../../src/sources/core/decoders/wire.js";

const bytes = (...b: number[]) => new Uint8Array(b);
const INVALID_UTF8 = bytes(0x7b, 0xff, 0x7d);

describe("decoder: json (the default)", () => {
  it("is today's strict JSON decoding: objects as they are, anything else as { data }, bad bytes quarantined", () => {
    const d = decoderFrom({}, "source x");
    expect(d).toBe(jsonDecoder);
    expect(d.decode(Buffer.from('{"a":1}'))).toEqual({ value: { a: 1 } });
    expect(d.decode("[1]")).toEqual({ value: { data: [1] } });
    expect(d.decode(INVALID_UTF8)).toEqual({ error: "body is not valid UTF-8" });
    expect(d.decode("nope")).toMatchObject({ error: expect.stringMatching(/^body is not JSON/) });
  });

  it("a source can keep its own JSON decoding as the default", () => {
    const own = { name: "json" as const, decode: () => ({ value: { own: true } }) };
    expect(decoderFrom({ decoder: "json" }, "source sse", own)).toBe(own);
  });
});

describe("decoder: text", () => {
  it("gives the UTF-8 text as { value }, never parsed", () => {
    const d = decoderFrom({ decoder: "text" }, "source x");
    expect(d).toBe(textDecoder);
    expect(d.decode(Buffer.from("a,b,\"c\""))).toEqual({ value: { value: 'a,b,"c"' } });
    expect(d.decode("{not json")).toEqual({ value: { value: "{not json" } });
    expect(d.decode(Buffer.from("héllo ✓"))).toEqual({ value: { value: "héllo ✓" } });
  });

  it("quarantines bytes that are not UTF-8 instead of replacing them, and a missing payload", () => {
    expect(textDecoder.decode(INVALID_UTF8, { name: "value", missing: "a tombstone" })).toEqual({ error: "value is not valid UTF-8" });
    expect(textDecoder.decode(null, { name: "value", missing: "a tombstone" })).toEqual({ error: "a tombstone" });
  });
});

describe("deserialize (code only)", () => {
  const csv = (b: Uint8Array) => {
    const [id, name, extra] = Buffer.from(b).toString("utf8").split(",");
    if (extra !== undefined || !name) throw new Error("expected 2 columns");
    return { id: Number(id), name };
  };

  it("maps the bytes to the record; what it throws is the quarantine reason", () => {
    const d = decoderFrom({ deserialize: csv }, "source x");
    expect(d.name).toBe("deserialize");
    expect(d.decode(Buffer.from("7,ada"))).toEqual({ value: { id: 7, name: "ada" } });
    expect(d.decode("8,bob")).toEqual({ value: { id: 8, name: "bob" } });
    expect(d.decode(Buffer.from("1,2,3"), { name: "value", missing: "" })).toEqual({ error: "deserialize failed on the value: expected 2 columns" });
  });

  it("quarantines a result that is not a record", () => {
    const d = decoderFrom({ deserialize: () => 42 as unknown as Record<string, unknown> }, "source x");
    expect(d.decode(Buffer.from("x"))).toEqual({ error: "deserialize returned number for the body; expected an object (the record)" });
  });

  it("refuses an async deserializer loudly instead of quarantining every record", () => {
    const d = decoderFrom({ deserialize: async () => ({}) }, "source x");
    expect(() => d.decode(Buffer.from("x"))).toThrow(ConfigError);
  });

  it("is refused from a JSON config (not a function) and together with decoder", () => {
    expect(() => decoderFrom({ deserialize: "csv" }, "source kafka")).toThrow(/source kafka: deserialize: expected a function/);
    expect(() => decoderFrom({ deserialize: csv, decoder: "text" }, "source kafka")).toThrow(/either deserialize or decoder/);
  });
});

describe("decoder: avro / protobuf options", () => {
  it("need schemaRegistryUrl, an http(s) URL, and { username, password } auth", () => {
    expect(() => decoderFrom({ decoder: "avro" }, "source kafka")).toThrow(/source kafka: schemaRegistryUrl: is required with decoder: avro/);
    expect(() => decoderFrom({ decoder: "protobuf", schemaRegistryUrl: "registry:8081" }, "source kafka")).toThrow(/expected an http or https URL/);
    expect(() => decoderFrom({ decoder: "avro", schemaRegistryUrl: "http://r:8081", schemaRegistryAuth: { username: "u" } }, "source kafka")).toThrow(
      /schemaRegistryAuth: expected \{ username, password \}/,
    );
    const d = decoderFrom({ decoder: "avro", schemaRegistryUrl: "http://r:8081", schemaRegistryAuth: { username: "u", password: "p" } }, "source kafka");
    expect(d.name).toBe("avro");
  });

  it("quarantines a payload outside the wire format without asking the registry", () => {
    const d = decoderFrom({ decoder: "avro", schemaRegistryUrl: "http://127.0.0.1:9" }, "source kafka");
    expect(d.prepare?.([Buffer.from('{"a":1}'), bytes(0, 0)])).toBeUndefined();
    expect(d.decode(Buffer.from('{"a":1}'), { name: "value", missing: "" })).toEqual({
      error: "value is not in the schema registry wire format: magic byte is 123, expected 0",
    });
    expect(d.decode(bytes(0, 0), { name: "value", missing: "" })).toMatchObject({ error: expect.stringMatching(/fewer than the 5-byte header/) });
  });

  it("an unreachable registry is a retriable error, not a quarantined record", async () => {
    const d = decoderFrom({ decoder: "avro", schemaRegistryUrl: "http://127.0.0.1:9" }, "source kafka");
    const err = (await d.prepare?.([bytes(0, 0, 0, 0, 1, 2)])?.catch((e: unknown) => e)) as { code?: string; retriable?: boolean };
    expect(err).toMatchObject({ code: "SCHEMA_REGISTRY", retriable: true });
  }, 30_000);
});

describe("the Confluent wire format", () => {
  it("reads the magic byte and the big-endian schema id", () => {
    expect(readFrame(bytes(0, 0, 0, 1, 2, 9, 9), "value")).toEqual({ schemaId: 258, body: bytes(9, 9) });
    expect(readFrame(bytes(1, 0, 0, 0, 1), "value")).toEqual({ error: "value is not in the schema registry wire format: magic byte is 1, expected 0" });
  });

  it("reads protobuf message indexes: 0 = the first message, else a zigzag count and path", () => {
    expect(readMessageIndexes(bytes(0, 8, 1), "v")).toEqual({ indexes: [0], offset: 1 });
    expect(readMessageIndexes(bytes(2, 2, 8, 1), "v")).toEqual({ indexes: [1], offset: 2 });
    expect(readMessageIndexes(bytes(4, 2, 0, 8), "v")).toEqual({ indexes: [1, 0], offset: 3 });
    expect(readMessageIndexes(bytes(4, 2), "v")).toMatchObject({ error: expect.stringMatching(/no valid protobuf message indexes/) });
  });
});

describe("64-bit integers keep every digit", () => {
  it("Avro long: a number while exact, a bigint beyond 2^53 (avsc alone would refuse the record)", () => {
    const req = createRequire(createRequire(import.meta.url).resolve("@kafkajs/confluent-schema-registry"));
    const avsc = req("avsc") as { Type: { forSchema(s: unknown, o?: object): { fromBuffer(b: Buffer): Record<string, unknown>; toBuffer(v: object): Buffer } } };
    const schema = { type: "record", name: "T", fields: [{ name: "big", type: "long" }, { name: "small", type: ["null", "long"] }] };
    const exact = avsc.Type.forSchema(schema, exactLongOptions(avsc as never));
    const big = 2n ** 62n + 7n; // 4611686018427387911: beyond 2^53
    const encoded = exact.toBuffer({ big, small: -5 });
    expect(exact.fromBuffer(encoded)).toEqual({ big, small: -5 });
    expect(exact.fromBuffer(exact.toBuffer({ big: -(2n ** 63n), small: null }))).toEqual({ big: -(2n ** 63n), small: null });
    expect(() => avsc.Type.forSchema(schema).fromBuffer(encoded)).toThrow(/precision/);
  });

  it("protobuf int64 / uint64 / sint64: numbers while exact, bigints beyond; enums by name, bytes base64", () => {
    const root = protobuf.parse(
      `syntax = "proto3"; package t;
       message A { int64 a = 1; }
       enum Kind { K0 = 0; K1 = 1; }
       message B { int64 big = 1; uint64 top = 2; sint64 neg = 3; Kind kind = 4; bytes raw = 5; repeated int64 list = 6; message C { string s = 1; } C c = 7; }`,
    ).root;
    const b = root.lookupType("t.B");
    const msg = b.encode(b.fromObject({ big: "9007199254740993", top: "18446744073709551615", neg: "-9223372036854775808", kind: "K1", raw: Buffer.from([1, 2]), list: ["1", "9007199254740993"], c: { s: "x" } })).finish();
    const type = messageType(root.lookupType("t.A"), [1]);
    expect("error" in type).toBe(false);
    expect(decodeMessage(type as Exclude<typeof type, { error: string }>, msg)).toEqual({
      big: 9007199254740993n,
      top: 18446744073709551615n,
      neg: -9223372036854775808n,
      kind: "K1",
      raw: "AQI=",
      list: [1, 9007199254740993n],
      c: { s: "x" },
    });
    expect(messageType(root.lookupType("t.A"), [1, 0])).toMatchObject({ name: "C" });
    expect(messageType(root.lookupType("t.A"), [2])).toMatchObject({ error: expect.stringMatching(/names no message/) });
  });
});
