/**
 * `lakelogic/connectors`: every connector, registered for JSON source configs on import.
 * Connector SDKs are optional peer dependencies, loaded only when a connector is used.
 */
export { createSource, registerSource, sourceSpecs, type SourceFactory } from "./registry.js";
export { parseOptions, renderSpecMarkdown, requirePeer, type ComponentSpec, type OptionSpec } from "./spec.js";
export { fileSourceFactory } from "./file.js";

// Kafka (cursor = per-partition offsets; kafkajs is an optional peer, loaded on first use). Importing registers `kafka`.
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
} from "./kafka.js";

// Push transports: SSE (cursor = last event id), WebSocket (no cursor), webhook / Event Grid push (acked).
export { SSEConnector, SSEClient, sseSpec, type SSEOptions, type SSEMessage, type SSEStats, type SSEEvent } from "./sse.js";
export { SSEParser } from "./sse-parser.js";
export { WebSocketConnector, websocketSpec, type WebSocketOptions, type WebSocketMessage, type WebSocketStats, type OverflowPolicy } from "./websocket.js";
export { DEFAULT_RETRY, type RetryPolicy, type RetryInfo } from "./backoff.js";
export { ConnectorHttpError, ConnectorGaveUpError, BufferOverflowError, SSEProtocolError } from "./errors.js";
export { SSEOffsetSource, sseSourceFactory, type SSEOffsetSourceOptions } from "../sources/sse.js";
export { WebSocketSource, websocketSourceFactory, type WebSocketSourceOptions } from "../sources/websocket.js";
export {
  WebhookSource,
  webhookSpec,
  webhookSourceFactory,
  eventGridPushSourceFactory,
  type WebhookOptions,
  type WebhookAckToken,
  type WebhookStats,
} from "../sources/webhook.js";
import { registerSource as registerPushSource } from "./registry.js";
import { sseSourceFactory as sseFactory } from "../sources/sse.js";
import { websocketSourceFactory as websocketFactory } from "../sources/websocket.js";
import { webhookSourceFactory as webhookFactory, eventGridPushSourceFactory as eventGridPushFactory } from "../sources/webhook.js";
for (const f of [sseFactory, websocketFactory, webhookFactory, eventGridPushFactory]) registerPushSource(f);

// Queues (ack sources: acknowledged only after the batch commits, I8). Importing registers `sqs`.
export { SQSConnector, sqsSpec, sqsSourceFactory, type SQSConnectorOptions, type SQSAckToken, type SQSPosition, type SQSMessageMeta } from "./sqs.js";
export { LeaseKeeper, QueueAckError, QueueReceiveError, decodeBody, type Lease } from "./queue.js";
export { PubSubConnector, pubsubSpec, pubsubSourceFactory, type PubSubConnectorOptions, type PubSubAckToken, type PubSubMessageMeta } from "./pubsub.js";
export { ServiceBusConnector, servicebusSpec, servicebusSourceFactory, DEFAULT_DEAD_LETTER_REASON, type ServiceBusConnectorOptions, type ServiceBusAckToken, type ServiceBusMessageMeta, type ServiceBusReceiverLike } from "./servicebus.js";
export { EventGridConnector, eventgridSpec, eventgridSourceFactory, type EventGridConnectorOptions, type EventGridAckToken, type EventGridEventMeta } from "./eventgrid.js";
