/**
 * A `type: stream` config as the `kafka` source's options: the Python package's security settings
 * (`security_protocol`, `sasl_*`) as kafkajs's `ssl` / `sasl`, and `kind: eventhubs` derived from
 * its connection string. Contradictory settings are refused, never silently dropped.
 */
import { ConfigError } from "../../errors.js";
import { eventHubsBrokers, parseEventHubsConnectionString } from "./eventhubs.js";
import type { StreamOptions } from "./spec.js";

/** What the `kafka` source takes from a stream config (a subset of its options, spelled as it spells them). */
export interface StreamKafkaOptions {
  brokers: string[];
  groupId?: string;
  autoOffsetReset?: "earliest" | "latest";
  metadataMaxAgeMs?: number;
  ssl?: boolean;
  sasl?: { mechanism: "plain" | "scram-sha-256" | "scram-sha-512"; username: string; password: string };
}

export interface KafkaSettings {
  topic: string;
  options: StreamKafkaOptions;
}

type Protocol = NonNullable<StreamOptions["securityProtocol"]>;
type Auth = { protocol: Protocol; sasl?: StreamKafkaOptions["sasl"]; brokers?: string[]; topic?: string };

const where = (option: string) => `source stream: ${option}`;
const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const MECHANISM: Record<NonNullable<StreamOptions["saslMechanism"]>, NonNullable<StreamKafkaOptions["sasl"]>["mechanism"]> = {
  PLAIN: "plain",
  "SCRAM-SHA-256": "scram-sha-256",
  "SCRAM-SHA-512": "scram-sha-512",
};

export function kafkaSettings(o: StreamOptions): KafkaSettings {
  if (o.kind === undefined) {
    throw new ConfigError(where("kind"), "is required: `kafka` (any Kafka-protocol broker) or `eventhubs` (Azure Event Hubs); a folder of files is `type: file`");
  }
  const auth = o.kind === "eventhubs" ? eventHubsAuth(o) : kafkaAuth(o);
  const brokers = o.brokers ?? auth.brokers;
  if (brokers === undefined) throw new ConfigError(where("brokers"), 'is required for kind kafka: "host:port" entries, or env:KAFKA_BROKERS');
  const topic = o.topic ?? o.path ?? auth.topic;
  if (topic === undefined) throw new ConfigError(where("topic"), "is required: the topic to read (or give the source a `path`)");
  const options: StreamKafkaOptions = { brokers };
  if (o.groupId !== undefined) options.groupId = o.groupId;
  if (o.startingOffsets !== undefined) options.autoOffsetReset = o.startingOffsets;
  if (o.metadataMaxAgeMs !== undefined) options.metadataMaxAgeMs = o.metadataMaxAgeMs;
  if (auth.protocol === "SSL" || auth.protocol === "SASL_SSL") options.ssl = true;
  if (auth.sasl) options.sasl = auth.sasl;
  return { topic, options };
}

function kafkaAuth(o: StreamOptions): Auth {
  if (o.connectionString !== undefined) {
    throw new ConfigError(where("connection_string"), "is for kind eventhubs; a kafka broker takes security_protocol with sasl_username and sasl_password");
  }
  const protocol = o.securityProtocol ?? "PLAINTEXT";
  const credentials = (["saslMechanism", "saslUsername", "saslPassword"] as const).filter((k) => o[k] !== undefined).map(snake);
  if (!protocol.startsWith("SASL_")) {
    if (credentials.length > 0) {
      throw new ConfigError(
        where("security_protocol"),
        `is ${protocol}${o.securityProtocol === undefined ? " (the default)" : ""}, which sends no SASL credentials, but ${credentials.join(", ")} ${credentials.length > 1 ? "are" : "is"} given; set SASL_SSL or SASL_PLAINTEXT`,
      );
    }
    return { protocol };
  }
  if (o.saslUsername === undefined) throw new ConfigError(where("sasl_username"), `is required with security_protocol ${protocol}`);
  if (o.saslPassword === undefined) throw new ConfigError(where("sasl_password"), `is required with security_protocol ${protocol}: env:NAME`);
  const mechanism = MECHANISM[o.saslMechanism ?? "PLAIN"];
  return { protocol, sasl: { mechanism, username: o.saslUsername, password: o.saslPassword } };
}

function eventHubsAuth(o: StreamOptions): Auth {
  if (o.connectionString === undefined) {
    throw new ConfigError(where("connection_string"), "is required for kind eventhubs: env:NAME naming the namespace's connection string");
  }
  for (const key of ["saslUsername", "saslPassword"] as const) {
    if (o[key] !== undefined) {
      throw new ConfigError(where(snake(key)), "is not used with kind eventhubs, which logs in with the connection string; leave it out");
    }
  }
  if (o.saslMechanism !== undefined && o.saslMechanism !== "PLAIN") {
    throw new ConfigError(where("sasl_mechanism"), `is ${o.saslMechanism}, but Event Hubs takes PLAIN only; leave it out`);
  }
  const endpoint = parseEventHubsConnectionString(o.connectionString);
  const protocol: Protocol = endpoint.emulator ? "SASL_PLAINTEXT" : "SASL_SSL";
  if (o.securityProtocol !== undefined && o.securityProtocol !== protocol) {
    throw new ConfigError(where("security_protocol"), `is ${o.securityProtocol}, but this connection string is served with ${protocol}; leave it out`);
  }
  return {
    protocol,
    brokers: eventHubsBrokers(endpoint),
    sasl: { mechanism: "plain", username: "$ConnectionString", password: o.connectionString },
    ...(endpoint.entityPath ? { topic: endpoint.entityPath } : {}),
  };
}
