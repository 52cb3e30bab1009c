import type { ConnectionOptions } from "node:tls";
import type { ComponentSpec, OptionsOf } from "../core/spec.js";
import { DECODE_OPTIONS, type Deserialize } from "../core/decoders/index.js";

/** SASL credentials, passed through to kafkajs. */
export type KafkaSasl =
  | { mechanism: "plain" | "scram-sha-256" | "scram-sha-512"; username: string; password: string }
  | { mechanism: "aws"; authorizationIdentity: string; accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | { mechanism: "oauthbearer"; oauthBearerProvider: () => Promise<{ value: string }> };

export type KafkaLogLevel = "nothing" | "error" | "warn" | "info" | "debug";

export const KAFKA_DEFAULTS = {
  clientId: "lakelogic",
  autoOffsetReset: "earliest" as const,
  sessionTimeoutMs: 30_000,
  rebalanceTimeoutMs: 60_000,
  heartbeatIntervalMs: 3_000,
  maxBytes: 10 * 1024 * 1024,
  maxBytesPerPartition: 1024 * 1024,
  maxWaitTimeMs: 500,
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 30_000,
  maxRetryTimeMs: 5_000,
  metadataMaxAgeMs: 300_000,
  bufferMaxMessages: 20_000,
  bufferMaxBytes: 16 * 1024 * 1024,
  commitGroupOffsets: true,
  groupCommitTimeoutMs: 5_000,
  closeTimeoutMs: 10_000,
  readUncommitted: false,
  tombstones: "quarantine" as const,
  logLevel: "error" as KafkaLogLevel,
};

const SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512", "aws", "oauthbearer"] as const;

/** The `kafka` source: one declaration for validation (code and JSON configs), types and docs. */
export const kafkaSpec = {
  type: "kafka",
  kind: "cursor",
  peerDependency: "kafkajs",
  summary:
    "An Apache Kafka topic (or anything speaking its protocol: Confluent, MSK, Redpanda, Event Hubs). " +
    'The cursor is `{ "<topic>:<partition>": nextOffset }`, stored in the checkpoint after each write; a ' +
    "restarted run seeks each partition it is assigned to it (or to the group's offset, if another member got further). The consumer group's offsets are committed after each " +
    "checkpoint commit (auto-commit is off) so lag tools see progress. `available_now` ends at each " +
    "partition's high watermark taken when the run started. Values are decoded by `decoder` (JSON by default); a message that " +
    "does not decode (a tombstone among them) is quarantined with its bytes (base64), partition, offset, key, headers and the reason.",
  options: {
    brokers: { type: "string[]", required: true, description: "Bootstrap brokers, `host:port` each (a list or a comma-separated string)." },
    topic: { type: "string", required: true, description: "Topic to read." },
    groupId: {
      type: "string",
      description:
        "Consumer group id. Default `lakelogic-<topic>`: the offsets that matter live in the checkpoint; the group spreads partitions over members and shows lag. Give every stream reading one topic its own group.",
    },
    consumerGroup: { type: "string", description: "Alias of `groupId`." },
    autoOffsetReset: {
      type: "string",
      enum: ["earliest", "latest"],
      description:
        "Where a partition with neither a checkpoint position nor a group offset starts (new topics, new partitions). Default `earliest`.",
    },
    fromBeginning: { type: "boolean", description: "kafkajs-style alias of `autoOffsetReset`: true = earliest, false = latest." },
    clientId: { type: "string", default: KAFKA_DEFAULTS.clientId, description: "Client id the brokers see (quotas, logs)." },
    ssl: { type: "any", secret: true, description: "`true` for TLS with the system CAs, or Node TLS options (`ca`, `cert`, `key`, `servername`, `rejectUnauthorized`, …)." },
    sasl: {
      type: "object",
      secret: true,
      description:
        "SASL credentials: `{ mechanism: plain | scram-sha-256 | scram-sha-512, username, password }`, " +
        "`{ mechanism: aws, authorizationIdentity, accessKeyId, secretAccessKey, sessionToken? }`; " +
        "`oauthbearer` (with an `oauthBearerProvider` function) from code only. Usually with `ssl: true`.",
    },
    sessionTimeoutMs: { type: "integer", min: 1000, default: KAFKA_DEFAULTS.sessionTimeoutMs, description: "Group session timeout: a member silent this long is removed and its partitions reassigned." },
    rebalanceTimeoutMs: { type: "integer", min: 1000, default: KAFKA_DEFAULTS.rebalanceTimeoutMs, description: "How long the group waits for members to rejoin during a rebalance." },
    heartbeatIntervalMs: { type: "integer", min: 100, default: KAFKA_DEFAULTS.heartbeatIntervalMs, description: "Heartbeat interval; keep it well below `sessionTimeoutMs`." },
    maxBytes: { type: "integer", min: 1024, default: KAFKA_DEFAULTS.maxBytes, description: "Most bytes one fetch returns, over all partitions." },
    maxBytesPerPartition: { type: "integer", min: 1024, default: KAFKA_DEFAULTS.maxBytesPerPartition, description: "Most bytes one fetch returns per partition." },
    maxWaitTimeMs: { type: "integer", min: 1, default: KAFKA_DEFAULTS.maxWaitTimeMs, description: "How long the broker may hold a fetch open waiting for new records." },
    connectionTimeoutMs: { type: "integer", min: 100, default: KAFKA_DEFAULTS.connectionTimeoutMs, description: "TCP/TLS connect timeout per broker." },
    requestTimeoutMs: { type: "integer", min: 100, default: KAFKA_DEFAULTS.requestTimeoutMs, description: "Timeout of one protocol request." },
    maxRetryTimeMs: {
      type: "integer",
      min: 100,
      default: KAFKA_DEFAULTS.maxRetryTimeMs,
      description: "Longest wait between reconnection attempts (exponential backoff up to this). The consumer keeps retrying while the brokers are unreachable.",
    },
    metadataMaxAgeMs: {
      type: "integer",
      min: 100,
      default: KAFKA_DEFAULTS.metadataMaxAgeMs,
      description:
        "How old the consumer's picture of the topic (its partitions, their leaders) may get before it is asked for again: partitions added to the topic while a run reads are picked up within about this long (kafkajs `metadataMaxAge`). Each refresh is one metadata request.",
    },
    bufferMaxMessages: { type: "integer", min: 1, default: KAFKA_DEFAULTS.bufferMaxMessages, description: "Bounded read-ahead buffer, in messages: fetching pauses while it is full." },
    bufferMaxBytes: { type: "integer", min: 1024, default: KAFKA_DEFAULTS.bufferMaxBytes, description: "Bounded read-ahead buffer, in bytes of message keys and values." },
    commitGroupOffsets: { type: "boolean", default: KAFKA_DEFAULTS.commitGroupOffsets, description: "Commit the group's offsets after each checkpoint commit, so standard lag tools see progress." },
    groupCommitTimeoutMs: { type: "integer", min: 100, default: KAFKA_DEFAULTS.groupCommitTimeoutMs, description: "Stop waiting for one group commit after this long; the next commit catches up." },
    closeTimeoutMs: {
      type: "integer",
      min: 100,
      default: KAFKA_DEFAULTS.closeTimeoutMs,
      description:
        "How long `close()` (the end of a run, SIGTERM) waits for the consumer to leave the group and the connections to close; then every connection of the client is closed by force, so a process never lingers on an unreachable or restarted broker.",
    },
    readUncommitted: { type: "boolean", default: KAFKA_DEFAULTS.readUncommitted, description: "Also read records of open and aborted transactions (default: committed only)." },
    tombstones: {
      type: "string",
      enum: ["quarantine", "delete"],
      default: KAFKA_DEFAULTS.tombstones,
      description:
        "What a tombstone (a message with a null value) does. `quarantine`: it is quarantined with its key, headers and position. `delete`: it deletes its key's row from the target, in the same transaction as the batch's other rows, as Kafka Connect sinks do with `delete.enabled` — merge targets with a primary key only (refused at start otherwise). The key is a JSON object holding the primary-key fields, or, for a one-field primary key, that field's value as text; a key that is neither is quarantined.",
    },
    logLevel: { type: "string", enum: ["nothing", "error", "warn", "info", "debug"], default: KAFKA_DEFAULTS.logLevel, description: "kafkajs's own logging." },
    ...DECODE_OPTIONS,
  },
  check: checkOptions,
} as const satisfies ComponentSpec;

/** The options as `parseOptions` returns them for `kafkaSpec` (defaults filled). */
export type SpecOptions = OptionsOf<typeof kafkaSpec>;

/**
 * What code can give that the spec types only loosely or JSON cannot carry at all: one broker
 * string, Node TLS options, typed SASL credentials (an OAuth provider function), a warning sink.
 */
export type CodeOptions = {
  /** Bootstrap brokers, `host:port` each (an array, or one comma-separated string). */
  brokers: string | string[];
  /** `true` for TLS with the system CAs, or Node TLS options (ca, cert, key, servername, …). */
  ssl?: boolean | ConnectionOptions;
  sasl?: KafkaSasl;
  /** Where warnings go (retention gaps, failed group commits). Default `process.emitWarning`. */
  onWarning?: (message: string) => void;
  /** A value deserializer of your own (see DECODE_OPTIONS). */
  deserialize?: Deserialize;
};

/** Options of `new KafkaOffsetSource(topic, options)`: those of `kafkaSpec` (the topic is an argument of its own). */
export type KafkaSourceOptions = Partial<Omit<SpecOptions, "topic" | keyof CodeOptions>> & CodeOptions;

function checkOptions(options: Record<string, unknown>): { option: string; message: string } | undefined {
  // parseOptions calls this with the options it parsed, defaults filled.
  const o = options as SpecOptions;
  if (o.groupId !== undefined && o.consumerGroup !== undefined && o.groupId !== o.consumerGroup) {
    return { option: "consumerGroup", message: `is an alias of groupId but differs from it (${JSON.stringify(o.consumerGroup)} vs ${JSON.stringify(o.groupId)}); give one` };
  }
  if (o.fromBeginning !== undefined && o.autoOffsetReset !== undefined && (o.fromBeginning ? "earliest" : "latest") !== o.autoOffsetReset) {
    return { option: "fromBeginning", message: `contradicts autoOffsetReset ${JSON.stringify(o.autoOffsetReset)}; give one of them` };
  }
  for (const b of o.brokers) {
    if (!/^[^\s:/]+:\d{1,5}$/.test(b) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(b)) {
      return { option: "brokers", message: `expected host:port entries like "broker-1:9092"; got ${JSON.stringify(b)}` };
    }
  }
  if (o.ssl !== undefined && !isTls(o.ssl)) {
    return { option: "ssl", message: "expected true/false or an object of Node TLS options" };
  }
  if (o.sasl !== undefined) {
    const problem = checkSasl(o.sasl);
    if (problem) return { option: "sasl", message: problem };
  }
  if (o.heartbeatIntervalMs >= o.sessionTimeoutMs) {
    return { option: "heartbeatIntervalMs", message: `must be below sessionTimeoutMs (${String(o.sessionTimeoutMs)}); a third of it is usual` };
  }
  return undefined;
}

export function isTls(v: unknown): v is boolean | ConnectionOptions {
  return typeof v === "boolean" || (typeof v === "object" && v !== null && !Array.isArray(v));
}

export function isSasl(v: unknown): v is KafkaSasl {
  return typeof v === "object" && v !== null && !Array.isArray(v) && checkSasl(v) === undefined;
}

function checkSasl(s: Partial<Record<string, unknown>>): string | undefined {
  const mechanism = typeof s.mechanism === "string" ? s.mechanism.toLowerCase() : undefined;
  if (!mechanism || !(SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    return `mechanism must be one of ${SASL_MECHANISMS.join(", ")}; got ${JSON.stringify(s.mechanism ?? null)}`;
  }
  const need = (keys: string[]) => keys.find((k) => typeof s[k] !== "string" || s[k] === "");
  if (mechanism === "plain" || mechanism.startsWith("scram")) {
    const missing = need(["username", "password"]);
    if (missing) return `${mechanism} needs a non-empty string \`${missing}\``;
  } else if (mechanism === "aws") {
    const missing = need(["authorizationIdentity", "accessKeyId", "secretAccessKey"]);
    if (missing) return `aws needs a non-empty string \`${missing}\``;
  } else if (typeof s.oauthBearerProvider !== "function") {
    return "oauthbearer needs an `oauthBearerProvider` function (so it can only be configured from code)";
  }
  return undefined;
}
