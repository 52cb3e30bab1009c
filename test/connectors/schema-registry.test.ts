/**
 * `decoder: avro` and `decoder: protobuf` end to end against real servers: Apicurio Registry
 * (a real schema registry serving the Confluent API at /apis/ccompat/v7, provisioned from Maven
 * Central by scripts/provision-schema-registry.sh) and the provisioned Apache Kafka broker.
 * Schemas are registered over the Confluent API, values are produced in the Confluent wire
 * format, and the kafka source reads them into a DuckDB lake with a contract. The payloads are
 * encoded by hand here (Avro binary, protobufjs from the .proto text), not by the code under test.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import protobuf from "protobufjs";
import { afterAll, describe, expect, it } from "vitest";
import { DuckDBInstance } from "../../src/util/duckdb.js";
import { DUCKDB_FILE } from "../../src/lake/index.js";
import { createSource } from "../../src/sources/registry.js";
import { StreamSink } from "../../src/sink/index.js";
import { startKafka } from "../support/kafka.js";
import { startSchemaRegistry } from "../support/schema-registry.js";
import { requireService } from "../support/services.js";

const { Kafka, logLevel } = kafkajs;

const kafka = await requireService("connectors/schema-registry (Apache Kafka broker)", () => startKafka());
const registry = await requireService("connectors/schema-registry (Apicurio Registry)", () => startSchemaRegistry());
const dirs: string[] = [];
const servers: Server[] = [];
let producer: kafkajs.Producer | undefined;
afterAll(async () => {
  await producer?.disconnect().catch(() => undefined);
  for (const s of servers) s.close();
  await registry?.stop();
  await kafka?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(name: string): string {
  const d = mkdtempSync(join(tmpdir(), `ll-registry-${name}-`));
  dirs.push(d);
  return d;
}

async function produce(topic: string, values: Buffer[]): Promise<void> {
  if (!producer) {
    producer = new Kafka({ brokers: kafka!.brokers, clientId: "lakelogic-test", logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
  }
  await kafka!.createTopic(topic, 1);
  await producer.send({ topic, messages: values.map((value) => ({ value })) });
}

/** Magic byte 0, the schema id big-endian, then the value (and, for protobuf, its message indexes first). */
function wire(schemaId: number, ...parts: Uint8Array[]): Buffer {
  const head = Buffer.alloc(5);
  head.writeInt32BE(schemaId, 1);
  return Buffer.concat([head, ...parts]);
}

// Avro binary by hand: long = zigzag varint, string = length + UTF-8, double = 8 bytes LE, union = branch + value.
function avroLong(n: bigint): Buffer {
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
const avroString = (s: string) => Buffer.concat([avroLong(BigInt(Buffer.byteLength(s))), Buffer.from(s)]);
const avroDouble = (d: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(d);
  return b;
};
const payment = (id: bigint, account: string, amount: number, note: string | null) =>
  Buffer.concat([avroLong(id), avroString(account), avroDouble(amount), note === null ? avroLong(0n) : Buffer.concat([avroLong(1n), avroString(note)])]);

const PAYMENT_SCHEMA = {
  type: "record",
  name: "Payment",
  namespace: "lakelogic.test",
  fields: [
    { name: "id", type: "long" },
    { name: "account", type: "string" },
    { name: "amount", type: "double" },
    { name: "note", type: ["null", "string"], default: null },
  ],
};

const READING_PROTO = `syntax = "proto3";
package lakelogic.test;
message Envelope { string kind = 1; }
message Reading {
  int64 sensor = 1;
  string unit = 2;
  double value = 3;
  message Calibration { int64 at = 1; }
}
`;

function contract(dir: string, yaml: string): string {
  const path = join(dir, "contract.yaml");
  writeFileSync(path, yaml);
  return path;
}

interface Lake {
  good: Array<Record<string, unknown>>;
  quarantine: Array<{ raw: string | null; rawEncoding: string | null; reasons: string[] }>;
}

async function readLake(dir: string, table: string, columns: string): Promise<Lake> {
  const instance = await DuckDBInstance.create(join(dir, "lake", DUCKDB_FILE), { access_mode: "READ_ONLY" });
  try {
    const conn = await instance.connect();
    try {
      const good = await conn.runAndReadAll(`SELECT ${columns} FROM "${table}" ORDER BY 1`);
      const bad = await conn.runAndReadAll(`SELECT raw, raw_encoding, reasons FROM "${table}_quarantine" ORDER BY raw`);
      return {
        good: good.getRowObjectsJS(),
        quarantine: bad.getRowObjectsJS().map((r) => ({ raw: (r.raw as string | null) ?? null, rawEncoding: (r.raw_encoding as string | null) ?? null, reasons: (r.reasons as string[] | null) ?? [] })),
      };
    } finally {
      conn.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/** A basic-auth gate in front of the real registry: 401 without the right credentials, else forwarded. */
async function authProxy(target: string, username: string, password: string): Promise<string> {
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { "content-type": "application/json" }).end('{"error_code":401,"message":"Unauthorized"}');
      return;
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: `${upstream.pathname}${req.url}`, headers: { ...req.headers, host: upstream.host } },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(forward);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

describe.skipIf(!kafka || !registry)("schema registry decoders on a real registry and broker", () => {
  it("decoder: avro: wire-format values into the lake, longs beyond 2^53 exact, bad values quarantined per record", async () => {
    const id = await registry!.register("payments-value", "AVRO", JSON.stringify(PAYMENT_SCHEMA));
    const big = 2n ** 60n + 3n; // 1152921504606846979: a double would round it
    const magicOne = wire(id, payment(5n, "x", 1, null));
    magicOne[0] = 1;
    const values = [
      wire(id, payment(1n, "acc-1", 10.5, null)),
      wire(id, payment(big, "acc-2", 20, "big id")),
      wire(id, payment(3n, "acc-3", -4, null)), // breaks the contract's range rule
      magicOne, // not the wire format
      wire(987_654, payment(6n, "acc-6", 1, null)), // a schema id the registry does not have
      wire(id, payment(7n, "acc-7", 1, null).subarray(0, 4)), // truncated
      wire(id, payment(8n, "acc-8", 8, null)),
    ];
    await produce("payments", values);
    const dir = tempDir("avro");
    const path = contract(
      dir,
      `dataset: payments
primary_key: [id]
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: account, type: string, required: true }
    - { name: amount, type: double }
    - { name: note, type: string }
quality:
  row_rules:
    - range: { field: amount, min: 0 }
materialization: { strategy: merge, format: duckdb }
quarantine: { enabled: true, include_error_reason: true }
`,
    );
    const source = await createSource({
      type: "kafka",
      brokers: kafka!.brokers.join(","),
      topic: "payments",
      group_id: "payments-g",
      log_level: "nothing",
      decoder: "avro",
      schema_registry_url: registry!.url,
    });
    const summary = await new StreamSink(path, source, { targetPath: join(dir, "lake"), checkpoint: join(dir, "ck.sqlite") }).run("available_now");
    expect(summary.sourceCount).toBe(values.length);
    expect(summary.goodCount).toBe(3);
    expect(summary.badCount).toBe(4);

    const lake = await readLake(dir, "payments", "id::VARCHAR AS id, account, amount, note");
    expect(lake.good).toEqual([
      { id: "1", account: "acc-1", amount: 10.5, note: null },
      { id: big.toString(), account: "acc-2", amount: 20, note: "big id" },
      { id: "8", account: "acc-8", amount: 8, note: null },
    ]);
    const byRaw = new Map(lake.quarantine.map((q) => [q.raw, q]));
    expect(byRaw.get(magicOne.toString("base64"))).toMatchObject({ rawEncoding: "base64", reasons: [expect.stringContaining("magic byte is 1, expected 0")] });
    expect(byRaw.get(values[4]!.toString("base64"))?.reasons).toEqual([expect.stringContaining("schema id 987654 is not in the schema registry")]);
    expect(byRaw.get(values[5]!.toString("base64"))?.reasons).toEqual([expect.stringMatching(/does not decode with Avro schema id/)]);
    expect(lake.quarantine.filter((q) => q.reasons.some((r) => /amount/.test(r)))).toHaveLength(1);
  }, 120_000);

  it("an unreachable registry stops the run with a retriable error: nothing quarantined, the next run reads it all", async () => {
    const id = await registry!.register("later-value", "AVRO", JSON.stringify(PAYMENT_SCHEMA));
    await produce("later", [wire(id, payment(1n, "a", 1, null)), wire(id, payment(2n, "b", 2, null))]);
    const dir = tempDir("later");
    const path = contract(
      dir,
      `dataset: later
primary_key: [id]
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: account, type: string }
    - { name: amount, type: double }
    - { name: note, type: string }
materialization: { strategy: merge, format: duckdb }
quarantine: { enabled: true }
`,
    );
    const closed = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const config = (url: string) => ({ type: "kafka", brokers: kafka!.brokers.join(","), topic: "later", group_id: "later-g", log_level: "nothing", decoder: "avro", schema_registry_url: url });
    const options = { targetPath: join(dir, "lake"), checkpoint: join(dir, "ck.sqlite") };
    const err = (await new StreamSink(path, await createSource(config(`http://127.0.0.1:${closed}`)), options).run("available_now").catch((e: unknown) => e)) as Error & { cause?: unknown };
    expect(err).toMatchObject({ code: "STREAM_RUN_FAILED", retriable: true, summary: { batches: 0, badCount: 0 } });
    expect(err.cause).toMatchObject({ code: "SCHEMA_REGISTRY", retriable: true });

    const summary = await new StreamSink(path, await createSource(config(registry!.url)), options).run("available_now");
    expect(summary).toMatchObject({ goodCount: 2, badCount: 0 });
  }, 120_000);

  it("decoder: protobuf: message indexes pick the message, int64 exact, an unknown index quarantined", async () => {
    const id = await registry!.register("readings-value", "PROTOBUF", READING_PROTO);
    const Reading = protobuf.parse(READING_PROTO).root.lookupType("lakelogic.test.Reading");
    const reading = (sensor: string, unit: string, value: number) => Reading.encode(Reading.fromObject({ sensor, unit, value })).finish();
    const SECOND = Buffer.from([2, 2]); // message indexes [1]: the file's second message, Reading
    const values = [
      wire(id, SECOND, reading("1", "C", 21.5)),
      wire(id, SECOND, reading("9223372036854775807", "K", 300)), // int64 max
      wire(id, Buffer.from([2, 10]), reading("3", "C", 1)), // indexes [5]: no such message
      wire(id, SECOND, Buffer.from([0x0a, 0xff])), // a length-delimited field cut short
    ];
    await produce("readings", values);
    const dir = tempDir("protobuf");
    const path = contract(
      dir,
      `dataset: readings
primary_key: [sensor]
model:
  fields:
    - { name: sensor, type: long, required: true }
    - { name: unit, type: string, required: true }
    - { name: value, type: double }
materialization: { strategy: merge, format: duckdb }
quarantine: { enabled: true, include_error_reason: true }
`,
    );
    const source = await createSource({
      type: "kafka",
      brokers: kafka!.brokers.join(","),
      topic: "readings",
      group_id: "readings-g",
      log_level: "nothing",
      decoder: "protobuf",
      schema_registry_url: registry!.url,
    });
    const summary = await new StreamSink(path, source, { targetPath: join(dir, "lake"), checkpoint: join(dir, "ck.sqlite") }).run("available_now");
    expect(summary.goodCount).toBe(2);
    expect(summary.badCount).toBe(2);
    const lake = await readLake(dir, "readings", "sensor::VARCHAR AS sensor, unit, value");
    expect(lake.good).toEqual([
      { sensor: "1", unit: "C", value: 21.5 },
      { sensor: "9223372036854775807", unit: "K", value: 300 },
    ]);
    const byRaw = new Map(lake.quarantine.map((q) => [q.raw, q]));
    expect(byRaw.get(values[2]!.toString("base64"))?.reasons).toEqual([expect.stringContaining("message index path [5] names no message")]);
    expect(byRaw.get(values[3]!.toString("base64"))?.reasons).toEqual([expect.stringMatching(/does not decode with protobuf schema id \d+ \(Reading\)/)]);
  }, 120_000);

  it("schemaRegistryAuth by env reference; refused credentials stop the run without quarantining and without the secret", async () => {
    const id = await registry!.register("auth-value", "AVRO", JSON.stringify(PAYMENT_SCHEMA));
    await produce("auth", [wire(id, payment(1n, "a", 1, null))]);
    const url = `${await authProxy(registry!.url, "reader", "s3cret-pass")}`;
    process.env.LL_TEST_REGISTRY_USER = "reader";
    process.env.LL_TEST_REGISTRY_PASS = "s3cret-pass";
    process.env.LL_TEST_REGISTRY_WRONG = "wrong-pass";
    const yaml = `dataset: auth
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: account, type: string }
    - { name: amount, type: double }
    - { name: note, type: string }
materialization: { strategy: append, format: duckdb }
quarantine: { enabled: true }
`;
    const config = (password: string, group: string) => ({
      type: "kafka",
      brokers: kafka!.brokers.join(","),
      topic: "auth",
      group_id: group,
      log_level: "nothing",
      decoder: "avro",
      schema_registry_url: url,
      schema_registry_auth: { username: "env:LL_TEST_REGISTRY_USER", password },
    });

    const refusedDir = tempDir("auth-refused");
    const refused = new StreamSink(contract(refusedDir, yaml), await createSource(config("env:LL_TEST_REGISTRY_WRONG", "auth-g1")), {
      targetPath: join(refusedDir, "lake"),
      checkpoint: join(refusedDir, "ck.sqlite"),
    }).run("available_now");
    const err = (await refused.catch((e: unknown) => e)) as Error & { retriable?: boolean; cause?: unknown };
    expect(err).toMatchObject({ code: "STREAM_RUN_FAILED", retriable: false, summary: { batches: 0, sourceCount: 0 } });
    expect(err.cause).toMatchObject({ code: "SCHEMA_REGISTRY", retriable: false });
    expect(err.message).toMatch(/credentials were refused: check schemaRegistryAuth/);
    expect(err.message).not.toContain("wrong-pass");

    const dir = tempDir("auth");
    const summary = await new StreamSink(contract(dir, yaml), await createSource(config("env:LL_TEST_REGISTRY_PASS", "auth-g2")), {
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "ck.sqlite"),
    }).run("available_now");
    expect(summary).toMatchObject({ goodCount: 1, badCount: 0 });
  }, 120_000);
});
