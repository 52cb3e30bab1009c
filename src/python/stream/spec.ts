/**
 * The `stream` source as the Python package declares it in a contract:
 *
 * ```yaml
 * source:
 *   type: stream
 *   path: rides                # the topic, when options.topic is not given
 *   options: { kind: kafka, brokers: env:KAFKA_BROKERS, starting_offsets: earliest, ... }
 * ```
 *
 * One declaration of every option, for validation and the reference docs. The options may also
 * be written beside `type` (flat, like every other source); each is given once.
 */
import type { ComponentSpec, OptionsOf } from "../../sources/core/spec.js";

export const STREAM_KINDS = ["kafka", "eventhubs"] as const;
export const SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
export const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] as const;

/** The options of a `type: stream` source, whether written under `options:` or beside `type`. */
export const STREAM_OPTIONS = {
  kind: {
    type: "string",
    enum: STREAM_KINDS,
    description:
      "Required. `kafka`: any Kafka-protocol broker (Apache Kafka, Confluent, Redpanda, MSK). `eventhubs`: Azure Event Hubs through its Kafka endpoint, configured from `connection_string` alone.",
  },
  brokers: {
    type: "string[]",
    description:
      "Bootstrap brokers, `host:port` each (a list or a comma-separated string; `env:KAFKA_BROKERS` works). Required for `kafka`; for `eventhubs` an override of the address taken from the connection string.",
  },
  topic: { type: "string", description: "Topic (event hub) to read. Default: `path`, then (eventhubs) the connection string's `EntityPath`." },
  startingOffsets: {
    type: "string",
    enum: ["earliest", "latest"],
    description: "Where a partition with no checkpoint position (and no group offset) starts: the first run, a new partition. Default `earliest`.",
  },
  groupId: {
    type: "string",
    description:
      "Consumer group. Optional: offsets live in the checkpoint. Default `lakelogic-<dataset>` when the CLI or a Temporal workflow runs the contract, `lakelogic-<topic>` otherwise.",
  },
  securityProtocol: {
    type: "string",
    enum: SECURITY_PROTOCOLS,
    description:
      "`PLAINTEXT` (default), `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`: TLS on for `SSL`/`SASL_SSL`, SASL credentials for the `SASL_` two. `eventhubs` sets it itself.",
  },
  saslMechanism: { type: "string", enum: SASL_MECHANISMS, description: "With a `SASL_` protocol: `PLAIN` (default), `SCRAM-SHA-256` or `SCRAM-SHA-512`." },
  saslUsername: { type: "string", description: "With a `SASL_` protocol: the user (a literal, or `env:NAME`)." },
  saslPassword: { type: "string", secret: true, description: "With a `SASL_` protocol: the password; must be `env:NAME` or hold `${ENV:NAME}`." },
  connectionString: {
    type: "string",
    secret: true,
    description:
      "`eventhubs` only, and required there: the namespace (or event hub) connection string, as `env:NAME`. It gives the brokers `<namespace>.servicebus.windows.net:9093`, SASL_SSL with PLAIN, user `$ConnectionString` and the string itself as password (`UseDevelopmentEmulator=true`: SASL_PLAINTEXT on port 9092, as the Event Hubs emulator serves it).",
  },
  metadataMaxAgeMs: {
    type: "integer",
    min: 100,
    description:
      "How old the consumer's picture of the topic may get before it is asked for again, in ms (default 300000): partitions added while a run reads are picked up within about this long. The `kafka` source's `metadataMaxAgeMs`.",
  },
  checkpoint: {
    type: "string",
    description:
      "Where the read position is kept: a SQLite file (`.sqlite` is added to a path without `.sqlite`/`.db`) or an object-store URI. Default `$LAKELOGIC_CHECKPOINT_ROOT/<dataset>`, else `_checkpoints/<dataset>.sqlite` beside the contract. `--checkpoint` overrides it.",
  },
  batchSize: {
    type: "integer",
    min: 1,
    description: "Records per batch, a hard cap. Unset, batches start at 1000 records and grow under a backlog (docs/streamsink.md, \"Batch size\"). `--batch-size` overrides it.",
  },
  trigger: {
    type: "string",
    description:
      "`available_now` (default: read what is there now, then stop), `continuous` or `processing_time` (keep running), as the contract's `trigger`. `--mode` overrides it.",
  },
  processingTime: {
    type: "string",
    description:
      'How long a batch may wait after its first record before it is cut: `"30 seconds"` or `30s` (the run\'s `maxWaitMs`; default 1 s). `--max-wait-ms` overrides it.',
  },
  maxOffsetsPerTrigger: {
    type: "integer",
    min: 1,
    description: "Most records in one batch: the batch size is the smaller of this and `batch_size`. `--batch-size` overrides both.",
  },
} as const;

/** The options under `options:`, checked on their own. */
export const streamOptionsSpec = {
  type: "stream",
  kind: "cursor",
  peerDependency: "kafkajs",
  summary: "The options of a `type: stream` source.",
  options: STREAM_OPTIONS,
} as const satisfies ComponentSpec;

export const streamSpec = {
  type: "stream",
  kind: "cursor",
  peerDependency: "kafkajs",
  summary:
    "A Kafka or Azure Event Hubs topic declared the way the Python package declares it (`type: stream` with `options.kind`). " +
    "It reads through the `kafka` source, so cursor, delivery and poison-message handling are those of `kafka`. " +
    "The options may be written under `options:` (snake_case as the Python package writes them, or camelCase) or beside `type`. " +
    "Secrets are `env:NAME` references, resolved by the process that reads (a Temporal worker), never stored resolved.",
  options: {
    path: { type: "string", description: "The topic, when `topic` is not given (the Python form's `source.path`)." },
    // `any` + secret: the credential fields inside are checked for literals wherever configs are
    // checked (also before a Temporal workflow is started), while their references are resolved
    // once, by mergeStreamOptions, not here.
    options: { type: "any", secret: true, description: "A mapping of the options below, as the Python package writes them (`source.options`)." },
    ...STREAM_OPTIONS,
  },
  check: (o) =>
    o["options"] !== undefined && (typeof o["options"] !== "object" || o["options"] === null || Array.isArray(o["options"]))
      ? { option: "options", message: "expected a mapping of stream options (kind, brokers, topic, …)" }
      : undefined,
} as const satisfies ComponentSpec;

/** Every stream option, wherever it was written, after validation (references resolved). */
export type StreamOptions = OptionsOf<typeof streamOptionsSpec> & { path?: string };
