import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import {
  CursorFnSource,
  FileSource,
  IterableSource,
  SSEOffsetSource,
  KafkaOffsetSource,
  WatermarkChunkSource,
  postgresChunkFetcher,
  postgresWatermarkSource,
} from "../../src/sources/index.js";
import { EventGridConnector, SQSConnector, SSEConnector, WebSocketConnector, WebSocketSource, WebhookSource } from "../../src/sources/connectors.js";

/** The error a constructor throws for `make()`, or undefined when it accepts. */
function refusal(make: () => unknown): ConfigError | undefined {
  try {
    make();
  } catch (err) {
    return err as ConfigError;
  }
  return undefined;
}

const noRows = { query: async () => ({ rows: [] }) };

describe("sources built in code refuse options they do not know", () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ["WebhookSource", () => new WebhookSource({ port: 0, hmac_secret: "x" } as never), /^WebhookSource: hmac_secret: unknown option; did you mean "hmacSecret"\? Known options: .*maxBodyBytes/],
    [
      "WatermarkChunkSource",
      () => new WatermarkChunkSource(async () => [], { watermarkField: "a", uniqueWatermark: true, chunkSize: 10, chunk_size: 5 } as never),
      /^WatermarkChunkSource: chunk_size: unknown option; did you mean "chunkSize"\?/,
    ],
    [
      "postgresWatermarkSource",
      () => postgresWatermarkSource(noRows, { table: "t", watermarkColumn: "a", chunkSize: 10, tieBreaker: "id" } as never),
      /^postgresWatermarkSource: tieBreaker: unknown option\. Known options: .*tieBreakerColumn/,
    ],
    ["postgresChunkFetcher", () => postgresChunkFetcher(noRows, { table: "t", watermarkColumn: "a", colums: ["x"] } as never), /^postgresChunkFetcher: colums: unknown option; did you mean "columns"\?/],
    ["IterableSource", () => new IterableSource([], { replayble: true } as never), /^IterableSource: replayble: unknown option; did you mean "replayable"\?/],
    ["CursorFnSource", () => new CursorFnSource(() => [], () => 1, { descripton: "x" } as never), /^CursorFnSource: descripton: unknown option; did you mean "description"\?/],
    ["SSEConnector", () => new SSEConnector("http://127.0.0.1:1/e", { event_types: ["a"] } as never), /^SSEConnector: event_types: unknown option; did you mean "eventTypes"\?/],
    ["SSEOffsetSource", () => new SSEOffsetSource("http://127.0.0.1:1/e", { lastEventId: "7" } as never), /^SSEOffsetSource: lastEventId: unknown option/],
    ["WebSocketConnector", () => new WebSocketConnector("ws://127.0.0.1:1", { pingInterval: 5 } as never), /^WebSocketConnector: pingInterval: unknown option; did you mean "pingIntervalMs"\?/],
    ["WebSocketSource", () => new WebSocketSource("ws://127.0.0.1:1", { drainIdle: 5 } as never), /^WebSocketSource: drainIdle: unknown option; did you mean "drainIdleMs"\?/],
    ["FileSource", () => new FileSource("x.ndjson", { chunk_bytes: 5 } as never), /^FileSource: chunk_bytes: unknown option; did you mean "chunkBytes"\?/],
    // Built on the option specs (parseOptions), as before:
    ["SQSConnector", () => new SQSConnector({ queueUrl: "http://127.0.0.1:1/q", region: "us-east-1", visiblityTimeout: 5 } as never), /did you mean "visibilityTimeout"/],
    ["KafkaOffsetSource", () => new KafkaOffsetSource("t", { brokers: ["127.0.0.1:9092"], groupid: "g" } as never), /did you mean "groupId"/],
    ["EventGridConnector", () => new EventGridConnector({ endpoint: "https://x", topicName: "t", subscriptionName: "s", max_events: 1, maxEvent: 2 } as never), /maxEvent: unknown option; did you mean "maxEvents"/],
  ];
  for (const [name, make, message] of cases) {
    it(name, () => {
      const err = refusal(make);
      expect(err).toBeInstanceOf(ConfigError);
      expect(err!.message).toMatch(message);
    });
  }

  it("accepts every option it declares", () => {
    expect(refusal(() => new IterableSource([], { replayable: true, description: "d", onClose: async () => {} }))).toBeUndefined();
    expect(refusal(() => new WebhookSource({ port: 0, host: "127.0.0.1", path: "/in", dedupeWindow: 10 }))).toBeUndefined();
    expect(refusal(() => new WebSocketSource("ws://127.0.0.1:1", { drainIdleMs: 5, decoder: "text", maxBuffered: 3 }))).toBeUndefined();
    expect(refusal(() => new SSEConnector("http://127.0.0.1:1/e", { lastEventId: "3", eventTypes: ["a"] }))).toBeUndefined();
  });
});
