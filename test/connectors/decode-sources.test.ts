/**
 * Every byte source takes the shared decoders (src/sources/core/decoders): `decoder` from a JSON
 * config, `deserialize` from code. Each source is driven by its real peer on loopback (a file,
 * an SSE and a WebSocket server written here, ElasticMQ for SQS, Google's pstest for Pub/Sub,
 * Apicurio Registry for the schemas) — Service Bus, which has no emulator outside Docker, by the
 * faithful fake at the SDK boundary (./servicebus-fake.ts). A payload that does not decode is a
 * record with its raw payload and the reason; the stream goes on.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import protobuf from "protobufjs";
import { WebSocketServer } from "ws";
import { afterAll, describe, expect, it } from "vitest";
import { FileSource } from "../../src/sources/file/source.js";
import { PubSubConnector } from "../../src/sources/pubsub/source.js";
import { ServiceBusConnector } from "../../src/sources/servicebus/source.js";
import { SQSConnector } from "../../src/sources/sqs/source.js";
import { createSource } from "../../src/sources/registry.js";
import type { AckSource, CursorSource, SourceRecord } from "../../src/sources/core/types.js";
import { startPubSub } from "../support/pubsub.js";
import { startSchemaRegistry } from "../support/schema-registry.js";
import { requireService } from "../support/services.js";
import { startSqs } from "../support/sqs.js";
import { FakeServiceBusEntity } from "./servicebus-fake.js";
import { ScriptedSSEServer } from "./sse-server.js";

const registry = await requireService("connectors/decode-sources (Apicurio Registry)", () => startSchemaRegistry());
const sqs = await requireService("connectors/decode-sources (ElasticMQ)", () => startSqs());
const pubsub = await requireService("connectors/decode-sources (Pub/Sub pstest)", () => startPubSub());
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await registry?.stop();
  await sqs?.stop();
  await pubsub?.stop();
});

const csv = (b: Uint8Array) => {
  const cells = Buffer.from(b).toString("utf8").split(",");
  if (cells.length !== 2) throw new Error(`expected 2 columns, got ${cells.length}`);
  return { id: Number(cells[0]), name: cells[1] };
};

/** What a test compares: the value, or the reason and the raw payload (text, or bytes as base64). */
function shape(r: SourceRecord): unknown {
  if (r.decodeError === undefined) return r.value;
  return { error: r.decodeError, raw: typeof r.raw === "string" ? r.raw : Buffer.from(r.raw!).toString("base64") };
}

async function drain(source: CursorSource, max = 100): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  await source.seek(undefined);
  await source.endCursor?.();
  for await (const r of source.read({ mode: "available_now", signal: new AbortController().signal })) {
    out.push(r);
    if (out.length >= max) break;
  }
  await source.close?.();
  return out;
}

async function receiveAll(source: AckSource, count: number): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  const signal = new AbortController().signal;
  for (let i = 0; i < 50 && out.length < count; i++) {
    const got = await source.receive(count - out.length, 1000, signal);
    out.push(...got);
    await source.ack(got.map((r) => r.ackToken));
  }
  await source.close?.();
  return out;
}

// Avro: { id: long, name: string } in the Confluent wire format, encoded by hand.
function zigzag(n: bigint): Buffer {
  let z = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const out: number[] = [];
  do {
    let b = Number(z & 0x7fn);
    z >>= 7n;
    if (z > 0n) b |= 0x80;
    out.push(b);
  } while (z > 0n);
  return Buffer.from(out);
}
const AVRO_ITEM = { type: "record", name: "Item", namespace: "lakelogic.test", fields: [{ name: "id", type: "long" }, { name: "name", type: "string" }] };
function avroItem(schemaId: number, id: bigint, name: string): Buffer {
  const head = Buffer.alloc(5);
  head.writeInt32BE(schemaId, 1);
  return Buffer.concat([head, zigzag(id), zigzag(BigInt(Buffer.byteLength(name))), Buffer.from(name)]);
}
const BIG = 2n ** 58n + 1n;

describe("file", () => {
  const dir = mkdtempSync(join(tmpdir(), "ll-decode-file-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "lines.csv");
  writeFileSync(path, Buffer.concat([Buffer.from("1,ada\r\n2,bob\n\n3\n"), Buffer.from([0x34, 0x2c, 0xff, 0x0a]), Buffer.from("5,é\n")]));

  it("decoder: text from a JSON config: each line as { value }; a line that is not UTF-8 quarantined with its bytes", async () => {
    const records = await drain(await createSource({ type: "file", path, decoder: "text" }) as CursorSource);
    expect(records.map(shape)).toEqual([
      { value: "1,ada" },
      { value: "2,bob" },
      { value: "3" },
      { error: "line 5: line is not valid UTF-8", raw: Buffer.from([0x34, 0x2c, 0xff]).toString("base64") },
      { value: "5,é" },
    ]);
  });

  it("deserialize from code: what it throws is the reason, the file goes on", async () => {
    const records = await drain(new FileSource(path, { deserialize: csv }));
    expect(records.map(shape)).toEqual([
      { id: 1, name: "ada" },
      { id: 2, name: "bob" },
      { error: "line 4: deserialize failed on the line: expected 2 columns, got 1", raw: "3" },
      { id: 4, name: "\ufffd" },
      { id: 5, name: "é" },
    ]);
  });

  it("refuses avro for a file (a text source) and deserialize from JSON", async () => {
    await expect(createSource({ type: "file", path, decoder: "avro" })).rejects.toThrow(/decoder: expected one of json, text/);
    await expect(createSource({ type: "file", path, deserialize: "csv" })).rejects.toThrow(/deserialize: expected a function/);
  });
});

describe("sse", () => {
  it("decoder: text keeps event data as { value }; the default keeps today's JSON-or-{ data }", async () => {
    const server = await new ScriptedSSEServer([{ id: "1", data: '{"a":1}' }, { id: "2", data: "plain" }], () => ({})).start();
    cleanups.push(() => server.stop());
    const text = await drain(await createSource({ type: "sse", url: server.url, decoder: "text", drain_idle_ms: 300 }) as CursorSource);
    expect(text.map(shape)).toEqual([{ value: '{"a":1}' }, { value: "plain" }]);
    const json = await drain(await createSource({ type: "sse", url: server.url, drain_idle_ms: 300 }) as CursorSource);
    expect(json.map(shape)).toEqual([{ a: 1 }, { data: "plain" }]);
  });
});

describe.skipIf(!registry)("websocket", () => {
  it("decoder: avro on binary frames; a text frame that is not the wire format is quarantined", async () => {
    const id = await registry!.register("ws-items-value", "AVRO", JSON.stringify(AVRO_ITEM));
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((resolve) => wss.once("listening", resolve));
    cleanups.push(() => new Promise((resolve) => wss.close(resolve)));
    wss.on("connection", (ws) => {
      ws.send(avroItem(id, 1n, "one"), { binary: true });
      ws.send(avroItem(id, BIG, "big"), { binary: true });
      ws.send('{"id":3}');
    });
    const { port } = wss.address() as { port: number };
    const source = (await createSource({ type: "websocket", url: `ws://127.0.0.1:${port}`, decoder: "avro", schema_registry_url: registry!.url, drain_idle_ms: 500 })) as CursorSource;
    const records = await drain(source, 3);
    expect(records.map(shape)).toEqual([
      { id: 1, name: "one" },
      { id: BIG, name: "big" },
      { error: "message is not in the schema registry wire format: magic byte is 123, expected 0", raw: '{"id":3}' },
    ]);
  });
});

describe.skipIf(!sqs)("sqs", () => {
  it("decoder: text and deserialize; a body deserialize refuses is a poison record with its body", async () => {
    const url = await sqs!.createQueue("decode-text");
    for (const body of ["1,ada", "not csv"]) await sqs!.client.send(new (await import("@aws-sdk/client-sqs")).SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    const text = await receiveAll(new SQSConnector({ queueUrl: url, decoder: "text", visibilityTimeout: 1 }), 2);
    expect(text.map(shape).sort()).toEqual([{ value: "1,ada" }, { value: "not csv" }].sort());
    // The text run acknowledged them: send again for the deserialize run.
    for (const body of ["2,bob", "not csv"]) await sqs!.client.send(new (await import("@aws-sdk/client-sqs")).SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    const custom = await receiveAll(new SQSConnector({ queueUrl: url, deserialize: csv }), 2);
    expect(custom.map(shape)).toEqual(
      expect.arrayContaining([{ id: 2, name: "bob" }, { error: "deserialize failed on the body: expected 2 columns, got 1", raw: "not csv" }]),
    );
  });
});

describe.skipIf(!pubsub || !registry)("pubsub", () => {
  it("decoder: protobuf: schemas fetched before the batch is decoded, int64 exact", async () => {
    const proto = `syntax = "proto3"; package lakelogic.test; message Tick { int64 seq = 1; string symbol = 2; }`;
    const id = await registry!.register("ticks-value", "PROTOBUF", proto);
    const Tick = protobuf.parse(proto).root.lookupType("lakelogic.test.Tick");
    const frame = (seq: string, symbol: string) => {
      const head = Buffer.alloc(6); // magic, id, then message indexes [0] as the single byte 0
      head.writeInt32BE(id, 1);
      return Buffer.concat([head, Tick.encode(Tick.fromObject({ seq, symbol })).finish()]);
    };
    const { topic, subscription } = await pubsub!.createSubscription("ticks");
    const t = pubsub!.pubsub.topic(topic);
    await t.publishMessage({ data: frame("7", "ABC") });
    await t.publishMessage({ data: frame((2n ** 63n - 1n).toString(), "MAX") });
    await t.publishMessage({ data: Buffer.from([0, 0, 0, 0x7f, 0x7f, 0]) }); // an id the registry lacks
    const source = new PubSubConnector({ subscription, projectId: pubsub!.projectId, decoder: "protobuf", schemaRegistryUrl: registry!.url });
    const records = await receiveAll(source, 3);
    expect(records.map(shape)).toEqual(
      expect.arrayContaining([
        { seq: 7, symbol: "ABC" },
        { seq: 2n ** 63n - 1n, symbol: "MAX" },
        { error: expect.stringContaining("schema id 32639 is not in the schema registry") as unknown, raw: "AAAAf38A" },
      ]),
    );
  });
});

describe.skipIf(!registry)("servicebus (SDK-boundary fake)", () => {
  it("decoder: avro on byte bodies; an AMQP-value body is quarantined for a byte decoder", async () => {
    const id = await registry!.register("sb-items-value", "AVRO", JSON.stringify(AVRO_ITEM));
    const entity = new FakeServiceBusEntity();
    entity.send({ body: avroItem(id, BIG, "big") }, { body: { id: 2, name: "amqp" } });
    const source = new ServiceBusConnector({ receiver: entity.receiver(), queueName: "q", decoder: "avro", schemaRegistryUrl: registry!.url });
    const records = await receiveAll(source, 2);
    expect(records.map((r) => (r.decodeError === undefined ? r.value : r.decodeError))).toEqual([
      { id: BIG, name: "big" },
      "body is an AMQP value, not bytes: decoder avro reads bytes",
    ]);
  });
});
