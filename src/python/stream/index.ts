/** The Python package's `type: stream` source (Kafka, Azure Event Hubs) and the run settings its contracts declare. */
export { streamSourceFactory, type OpenKafka } from "./factory.js";
export { streamSpec, STREAM_KINDS, type StreamOptions } from "./spec.js";
export { streamRunSettings, streamSourceKind, defaultCheckpoint, type StreamRunSettings } from "./run-settings.js";
export { parseEventHubsConnectionString, eventHubsBrokers, type EventHubsEndpoint } from "./eventhubs.js";
export { kafkaSettings, type KafkaSettings, type StreamKafkaOptions } from "./kafka-settings.js";
