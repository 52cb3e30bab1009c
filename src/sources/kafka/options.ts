// The kafka source's options resolved for the consumer: spec.ts validates them, this fills aliases and defaults.
import type { ConnectionOptions } from "node:tls";
import { ConfigError } from "../../errors.js";
import { parseOptions } from "../core/spec.js";
import { DECODE_OPTIONS, decoderFrom, type Deserialize, type PayloadDecoder } from "../core/decoders/index.js";
import { KAFKA_DEFAULTS as DEFAULTS, isSasl, isTls, kafkaSpec, type CodeOptions, type KafkaSasl, type KafkaSourceOptions, type SpecOptions } from "./spec.js";

/** Options after validation and defaults. */
export type ResolvedKafkaOptions = Omit<SpecOptions, "topic" | "groupId" | "consumerGroup" | "autoOffsetReset" | "fromBeginning" | keyof typeof DECODE_OPTIONS | keyof CodeOptions> & {
  /** Turns each value into a record (`decoder`, `deserialize`). */
  payloadDecoder: PayloadDecoder;
  brokers: string[];
  groupId: string;
  autoOffsetReset: "earliest" | "latest";
  ssl?: boolean | ConnectionOptions;
  sasl?: KafkaSasl;
  onWarning: (message: string) => void;
};

/** Validate `options` against `kafkaSpec`, resolve the aliases and fill the defaults. */
export function resolveOptions(topic: string, options: KafkaSourceOptions): { topic: string; options: ResolvedKafkaOptions } {
  if (typeof options !== "object" || options === null) {
    throw new ConfigError("source kafka", "expected options with at least brokers");
  }
  const { onWarning, ...rest } = options;
  const o = parseOptions(kafkaSpec, { ...rest, topic });
  const reset = o.autoOffsetReset ?? (o.fromBeginning === undefined ? DEFAULTS.autoOffsetReset : o.fromBeginning ? "earliest" : "latest");
  const resolved: ResolvedKafkaOptions = {
    brokers: o.brokers,
    groupId: o.groupId ?? o.consumerGroup ?? defaultGroupId(o.topic),
    autoOffsetReset: reset,
    clientId: o.clientId,
    // TLS options pass parseOptions as they are; credentials come parsed, with env: references resolved.
    ssl: rest.ssl,
    sasl: normaliseSasl(isSasl(o.sasl) ? o.sasl : rest.sasl),
    sessionTimeoutMs: o.sessionTimeoutMs,
    rebalanceTimeoutMs: o.rebalanceTimeoutMs,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    maxBytes: o.maxBytes,
    maxBytesPerPartition: o.maxBytesPerPartition,
    maxWaitTimeMs: o.maxWaitTimeMs,
    connectionTimeoutMs: o.connectionTimeoutMs,
    requestTimeoutMs: o.requestTimeoutMs,
    maxRetryTimeMs: o.maxRetryTimeMs,
    metadataMaxAgeMs: o.metadataMaxAgeMs,
    bufferMaxMessages: o.bufferMaxMessages,
    bufferMaxBytes: o.bufferMaxBytes,
    commitGroupOffsets: o.commitGroupOffsets,
    groupCommitTimeoutMs: o.groupCommitTimeoutMs,
    closeTimeoutMs: o.closeTimeoutMs,
    readUncommitted: o.readUncommitted,
    tombstones: o.tombstones,
    logLevel: o.logLevel,
    payloadDecoder: decoderFrom(o, "source kafka"),
    onWarning: onWarning ?? ((message) => process.emitWarning(message, { code: "LAKELOGIC_KAFKA" })),
  };
  return { topic: o.topic, options: resolved };
}

/**
 * The consumer group when none is given. Stable across runs, so lag tools follow one group; the
 * checkpoint, not the group, decides where a run resumes.
 */
export function defaultGroupId(topic: string): string {
  return `lakelogic-${topic}`;
}

/** A JSON source config (`{ "type": "kafka", ... }`) as the constructor's arguments. */
export function optionsFromJson(config: Record<string, unknown>): { topic: string; options: KafkaSourceOptions } {
  const { topic, ssl, sasl, deserialize, ...rest } = parseOptions(kafkaSpec, config);
  // JSON holds no function: a `deserialize` here is refused by decoderFrom with its own message.
  return { topic, options: { ...rest, ssl: isTls(ssl) ? ssl : undefined, sasl: isSasl(sasl) ? sasl : undefined, deserialize: deserialize as Deserialize | undefined } };
}

function normaliseSasl(s: KafkaSasl | undefined): KafkaSasl | undefined {
  if (!s) return undefined;
  return { ...s, mechanism: s.mechanism.toLowerCase() } as KafkaSasl;
}
