/**
 * Every built-in transport that a JSON source config can name, as one explicit list: importing
 * a transport has no side effects, and this file is where a new one is added.
 */
import { SourceRegistry, type SourceFactory } from "./core/registry.js";
import type { ComponentSpec } from "./core/spec.js";
import type { Source } from "./core/types.js";
import { eventgridSourceFactory } from "./eventgrid/connector.js";
import { fileSourceFactory } from "./file/connector.js";
import { httpSourceFactory } from "./http/connector.js";
import { kafkaSourceFactory } from "./kafka/connector.js";
import { duckdbLakeSourceFactory, lakeSourceFactory } from "./lake/connector.js";
import { KafkaOffsetSource } from "./kafka/source.js";
import { pubsubSourceFactory } from "./pubsub/connector.js";
import { servicebusSourceFactory } from "./servicebus/connector.js";
import { sqsSourceFactory } from "./sqs/connector.js";
import { sseSourceFactory } from "./sse/connector.js";
import { postgresSourceFactory } from "./watermark/connector.js";
import { streamSourceFactory } from "../python/stream/factory.js";
import { eventGridPushSourceFactory, webhookSourceFactory } from "./webhook/connector.js";
import { websocketSourceFactory } from "./websocket/connector.js";

export const BUILTIN_SOURCES: readonly SourceFactory[] = [
  fileSourceFactory,
  kafkaSourceFactory,
  // The Python form of a Kafka / Event Hubs source: the kafka source, configured its way.
  streamSourceFactory((topic, options) => new KafkaOffsetSource(topic, options)),
  sseSourceFactory,
  websocketSourceFactory,
  webhookSourceFactory,
  eventGridPushSourceFactory,
  sqsSourceFactory,
  pubsubSourceFactory,
  servicebusSourceFactory,
  eventgridSourceFactory,
  postgresSourceFactory,
  httpSourceFactory,
  lakeSourceFactory,
  duckdbLakeSourceFactory,
];

const registry = new SourceRegistry(BUILTIN_SOURCES);

/** Build a source from its JSON config (`{ "type": "kafka", ... }`). */
export function createSource(config: unknown): Promise<Source> {
  return registry.create(config);
}

/**
 * Refuse a secret written as a literal into a JSON source config, as `createSource` does, but
 * without resolving or opening anything: call it before storing the config (a workflow input).
 */
export function assertNoLiteralSecrets(config: unknown): void {
  registry.assertNoLiteralSecrets(config);
}

/** Add a source type of your own to what `createSource` (and so the CLI and Temporal) accepts. */
export function registerSource(factory: SourceFactory): void {
  registry.register(factory);
}

/** The specs of every source type `createSource` knows, for docs and lint. */
export function sourceSpecs(): ComponentSpec[] {
  return registry.specs();
}
