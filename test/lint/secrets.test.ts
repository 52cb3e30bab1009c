import { describe, expect, it } from "vitest";
import { lintText, type Finding } from "../../src/lint/index.js";

const lint = (yaml: string): Finding[] => lintText(yaml, "c.yaml");
const only = (yaml: string, id: string): Finding[] => lint(yaml).filter((f) => f.id === id);
const lineOf = (yaml: string, needle: string): number => yaml.split("\n").findIndex((l) => l.includes(needle)) + 1;

/** A safe streaming contract around a `source:` block (indented two spaces under `source:`). */
function withSource(source: string): string {
  return `version: 1.0.0
dataset: rides
primary_key: [ride_id]
source:
${source}model:
  fields:
    - { name: ride_id, type: string, required: true }
materialization:
  strategy: merge
`;
}

describe("SECRET-001 a secret written into the source block", () => {
  it("fires on a literal sasl_password of a Python `type: stream` source, pointing at the key, without the value", () => {
    const yaml = withSource("  type: stream\n  options:\n    kind: kafka\n    brokers: env:KAFKA_BROKERS\n    topic: rides\n    sasl_username: reader\n    sasl_password: hunter2\n");
    const found = only(yaml, "SECRET-001");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "critical", line: lineOf(yaml, "sasl_password"), path: "source.options.sasl_password" });
    expect(found[0]!.suggestion).toContain('"env:KAFKA_SASL_PASSWORD"');
    expect(JSON.stringify(found)).not.toContain("hunter2");
  });

  it("fires on a literal connection string, access key, hmac secret and credential header", () => {
    const cases: Array<[string, string]> = [
      ["  type: servicebus\n  connection_string: Endpoint=sb://x/;SharedAccessKey=abc\n  queue_name: q\n", "source.connection_string"],
      ["  type: eventgrid\n  endpoint: https://x\n  topicName: t\n  subscriptionName: s\n  accessKey: abc123\n", "source.accessKey"],
      ["  type: webhook\n  port: 8080\n  hmacSecret: abc123\n", "source.hmacSecret"],
      ["  type: sse\n  url: https://example.com/s\n  headers:\n    Accept: text/event-stream\n    Authorization: Bearer abc123\n", "source.headers.Authorization"],
      ["  type: kafka\n  brokers: [b:9092]\n  topic: t\n  sasl: { mechanism: plain, username: u, password: 1234 }\n", "source.sasl.password"],
      ["  type: stream\n  options:\n    kind: eventhubs\n    connection_string: Endpoint=sb://x/\n", "source.options.connection_string"],
    ];
    for (const [source, path] of cases) {
      expect(only(withSource(source), "SECRET-001").map((f) => f.path)).toEqual([path]);
    }
    expect(only(withSource(cases[3]![0]), "SECRET-001")[0]!.suggestion).toContain('"Bearer ${ENV:SSE_HEADERS_AUTHORIZATION}"');
    expect(only(withSource(cases[5]![0]), "SECRET-001")[0]!.suggestion).toContain('"env:EVENTHUBS_CONNECTION_STRING"');
  });

  it("accepts references and leaves ordinary options alone", () => {
    const ok = [
      "  type: stream\n  options:\n    kind: kafka\n    sasl_username: reader\n    sasl_password: env:KAFKA_PASSWORD\n",
      "  type: sse\n  url: https://example.com/s\n  headers: { Authorization: 'Bearer ${ENV:FEED_TOKEN}', User-Agent: lakelogic }\n",
      "  type: servicebus\n  connectionString: 'Endpoint=sb://x/;SharedAccessKeyName=l;SharedAccessKey=${ENV:SB_KEY}'\n  queueName: q\n",
      "  type: kafka\n  brokers: [b:9092]\n  topic: tokens\n  groupId: password-resets\n",
    ];
    for (const source of ok) expect(only(withSource(source), "SECRET-001")).toEqual([]);
  });
});

describe("CHECKPOINT-001 a checkpoint location no store can open", () => {
  it("fires on an unknown scheme in source.options.checkpoint, pointing at the key", () => {
    const yaml = withSource("  type: stream\n  options:\n    kind: kafka\n    checkpoint: ftp://backup.example.com/rides\n");
    const found = only(yaml, "CHECKPOINT-001");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "critical", line: lineOf(yaml, "checkpoint:"), path: "source.options.checkpoint" });
    expect(found[0]!.message).toMatch(/ftp/);
  });

  it("accepts a local file and the object stores", () => {
    for (const location of ["data/checkpoints/rides.sqlite", "s3://bucket/ck", "gs://bucket/ck", "memory"]) {
      expect([location, only(withSource(`  type: stream\n  options:\n    kind: kafka\n    checkpoint: ${location}\n`), "CHECKPOINT-001")]).toEqual([location, []]);
    }
  });
});

describe("STREAM-001/002 read a Python `type: stream` source", () => {
  it("STREAM-001: options.kind kafka with append is a streaming append", () => {
    const yaml = `dataset: rides\nprimary_key: [ride_id]\nsource:\n  type: stream\n  options:\n    kind: kafka\n    trigger: available_now\nmaterialization:\n  strategy: append\n`;
    expect(only(yaml, "STREAM-001").map((f) => f.message)).toEqual([expect.stringMatching(/source\.options\.kind: kafka/)]);
  });

  it("STREAM-002: options.trigger continuous, with its processing_time", () => {
    const yaml = `dataset: rides\nprimary_key: [ride_id]\nsource:\n  type: stream\n  options:\n    kind: eventhubs\n    trigger: continuous\n    processing_time: 30 seconds\nmaterialization:\n  strategy: merge\n`;
    const found = only(yaml, "STREAM-002");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ path: "source.options.trigger", line: lineOf(yaml, "trigger:") });
    expect(found[0]!.message).toMatch(/every 30 seconds/);
  });
});
