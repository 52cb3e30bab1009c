/**
 * `lakelogic/connectors`: every connector, and `createSource` for JSON source configs.
 * Connector SDKs are optional peer dependencies, loaded only when a connector is used.
 */
export { assertNoLiteralSecrets, createSource, registerSource, sourceSpecs, BUILTIN_SOURCES } from "./registry.js";
export { SourceRegistry, type SourceFactory } from "./core/registry.js";
export { parseOptions, renderSpecMarkdown, requirePeer, type ComponentSpec, type OptionSpec, type OptionsOf, type OptionsInput } from "./core/spec.js";
export { fileSourceFactory } from "./file/connector.js";
// PostgreSQL keyset backfill from a JSON config (pg is an optional peer, loaded on first query).
export { postgresSourceFactory } from "./watermark/connector.js";
export { postgresSpec } from "./watermark/spec.js";
// A JSON document polled over HTTP (conditional GET); cursor = ETag / Last-Modified and a record watermark.
export { HttpPollSource, HttpResponseError, type HttpCursor } from "./http/source.js";
export { httpSourceFactory } from "./http/connector.js";
export { httpSpec, type HttpPollOptions, type HttpClock } from "./http/spec.js";
// A lake table another stream writes (bronze → silver); cursor = the last row sequence number read.
export { LakeTableSource, type LakeSourceOptions, type LakeCursor } from "./lake/source.js";
export { lakeSourceFactory, duckdbLakeSourceFactory } from "./lake/connector.js";
export { lakeSpec, duckdbLakeSpec } from "./lake/spec.js";
export { LakeSourceBusyError } from "./lake/readers.js";

// Kafka (cursor = per-partition offsets; kafkajs is an optional peer, loaded on first use).
export {
  KafkaConnector,
  KafkaOffsetSource,
  kafkaSpec,
  kafkaSourceFactory,
  type KafkaConnectorOptions,
  type KafkaSourceOptions,
  type KafkaCursor,
  type KafkaPosition,
  type KafkaSasl,
  type KafkaLogLevel,
} from "./kafka/connector.js";

// Push transports: SSE (cursor = last event id), WebSocket (no cursor), webhook / Event Grid push (acked).
export { SSEConnector, SSEClient, sseSpec, type SSEOptions, type SSEMessage, type SSEStats, type SSEEvent } from "./sse/client.js";
export { SSEParser } from "./sse/parser.js";
export { WebSocketConnector, websocketSpec, type WebSocketOptions, type WebSocketMessage, type WebSocketStats, type OverflowPolicy } from "./websocket/client.js";
export { DEFAULT_RETRY, type RetryPolicy, type RetryInfo } from "./core/backoff.js";
export { ConnectorHttpError, ConnectorGaveUpError, BufferOverflowError, SSEProtocolError } from "./core/errors.js";
export { SSEOffsetSource, type SSEOffsetSourceOptions } from "./sse/source.js";
export { sseSourceFactory } from "./sse/connector.js";
export { WebSocketSource, type WebSocketSourceOptions } from "./websocket/source.js";
export { websocketSourceFactory } from "./websocket/connector.js";
export { WebhookSource, webhookSpec, type WebhookOptions, type WebhookAckToken, type WebhookStats } from "./webhook/source.js";
export { webhookSourceFactory, eventGridPushSourceFactory } from "./webhook/connector.js";

// Queues (ack sources: acknowledged only after the batch commits, I8).
export { SQSConnector, type SQSAckToken, type SQSPosition, type SQSMessageMeta } from "./sqs/source.js";
export { sqsSpec, type SQSConnectorOptions } from "./sqs/spec.js";
export { sqsSourceFactory } from "./sqs/connector.js";
export { LeaseKeeper, QueueAckError, QueueReceiveError, decodeBody, type Lease } from "./core/queue.js";
export { PubSubConnector, type PubSubAckToken, type PubSubMessageMeta } from "./pubsub/source.js";
export { pubsubSpec, type PubSubConnectorOptions } from "./pubsub/spec.js";
export { pubsubSourceFactory } from "./pubsub/connector.js";
export { ServiceBusConnector, type ServiceBusAckToken, type ServiceBusMessageMeta, type ServiceBusReceiverLike } from "./servicebus/source.js";
export { servicebusSpec, DEFAULT_DEAD_LETTER_REASON, type ServiceBusConnectorOptions } from "./servicebus/spec.js";
export { servicebusSourceFactory } from "./servicebus/connector.js";
export { EventGridConnector, type EventGridAckToken, type EventGridEventMeta } from "./eventgrid/source.js";
export { eventgridSpec, type EventGridConnectorOptions } from "./eventgrid/spec.js";
export { eventgridSourceFactory } from "./eventgrid/connector.js";
export { SchemaRegistryError, DECODER_NAMES, type DecoderName, type Deserialize, type PayloadDecoder } from "./core/decoders/index.js";

// The Python package's connector names, argument order, option names and defaults (docs/connectors.md#migrating-from-the-python-connectors).
export {
  AWSSQSConnector,
  AzureEventGridConnector,
  AzureServiceBusConnector,
  GCPPubSubConnector,
  WebhookConnector,
  type AWSSQSConnectorOptions,
  type AzureEventGridConnectorOptions,
  type AzureServiceBusConnectorOptions,
  type GCPPubSubConnectorOptions,
  type WebhookConnectorOptions,
} from "../python/names.js";
