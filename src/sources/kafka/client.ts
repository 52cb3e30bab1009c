// Types only: kafkajs is an optional peer dependency, loaded at run time through requirePeer.
import type { Admin, Consumer, Kafka } from "kafkajs";
import { MissingDependencyError } from "../../errors.js";
import { collapseRepeats, liveDefaultLogger, type Logger } from "../../observe/logger.js";
import { settledWithin, sleep } from "../../util/wait.js";
import { requirePeer } from "../core/spec.js";
import { causeOf, messageOf } from "./errors.js";
import type { ResolvedKafkaOptions } from "./options.js";
import type { KafkaLogLevel } from "./spec.js";
import { KafkaConnectError, KafkaTopicError } from "./errors.js";
import { ClientSockets, FORCED_CLOSE } from "./sockets.js";

type KafkaModule = typeof import("kafkajs");

/** A partition's log start and end (high watermark). */
export interface Marks {
  low: number;
  high: number;
}

const LOG_LEVELS: Record<KafkaLogLevel, number> = { nothing: 0, error: 1, warn: 2, info: 4, debug: 5 };

/**
 * The kafkajs client of one source and its admin connection, made on first use (so a source can
 * be built, and its options checked, without kafkajs installed).
 */
export class KafkaClients {
  private kafkajs: KafkaModule | undefined;
  private client: Kafka | undefined;
  private adminClient: Admin | undefined;
  private adminConnected: Promise<void> | undefined;
  private sockets: ClientSockets | undefined;
  /** Set by `close()`: a consumer that crashes now is not restarted by kafkajs. */
  private closing = false;

  constructor(
    private readonly topic: string,
    private readonly description: string,
    private readonly options: ResolvedKafkaOptions,
  ) {}

  /** The connected admin; a failed connection is tried again on the next call. */
  admin(): Promise<Admin> {
    const connect = async () => {
      const client = await this.kafka();
      this.adminClient ??= client.admin();
      await this.adminClient.connect();
    };
    this.adminConnected ??= connect().catch((err) => {
      this.adminConnected = undefined;
      if (err instanceof MissingDependencyError) throw err;
      throw new KafkaConnectError(`${this.description}: cannot reach brokers ${this.options.brokers.join(",")}: ${messageOf(err, this.options.sasl)}`, {
        cause: causeOf(err, this.options.sasl),
      });
    });
    return this.adminConnected.then(() => this.adminClient!);
  }

  /** A new member of the group. The admin connects first, so unreachable brokers fail with their addresses. */
  async consumer(): Promise<Consumer> {
    const client = await this.kafka();
    await this.admin();
    this.closing = false;
    return client.consumer({
      groupId: this.options.groupId,
      sessionTimeout: this.options.sessionTimeoutMs,
      rebalanceTimeout: this.options.rebalanceTimeoutMs,
      heartbeatInterval: this.options.heartbeatIntervalMs,
      maxBytes: this.options.maxBytes,
      maxBytesPerPartition: this.options.maxBytesPerPartition,
      maxWaitTimeInMs: this.options.maxWaitTimeMs,
      metadataMaxAge: this.options.metadataMaxAgeMs,
      readUncommitted: this.options.readUncommitted,
      allowAutoTopicCreation: false,
      // kafkajs's own default count; a crash during or after close() restarts nothing.
      retry: { retries: 5, restartOnFailure: async () => !this.closing },
    });
  }

  /** Each partition's log start and high watermark now. */
  async watermarks(): Promise<Map<number, Marks>> {
    const admin = await this.admin();
    let offsets: Array<{ partition: number; high: string; low: string }>;
    try {
      offsets = await retrying(() => admin.fetchTopicOffsets(this.topic));
    } catch (err) {
      throw new KafkaTopicError(
        `${this.description}: cannot read the offsets of topic "${this.topic}" (${messageOf(err, this.options.sasl)}). Check that it exists and that this client may describe it.`,
        { cause: causeOf(err, this.options.sasl) },
      );
    }
    return new Map(offsets.map((o) => [o.partition, { low: Number(o.low), high: Number(o.high) }]));
  }

  /** The group's committed offsets, of the partitions that have one. */
  async groupOffsets(): Promise<Map<number, number>> {
    const admin = await this.admin();
    const res = await retrying(() => admin.fetchOffsets({ groupId: this.options.groupId, topics: [this.topic] }));
    const out = new Map<number, number>();
    for (const t of res) {
      if (t.topic !== this.topic) continue;
      for (const p of t.partitions) {
        const n = Number(p.offset);
        if (Number.isFinite(n) && n >= 0) out.set(p.partition, n);
      }
    }
    return out;
  }

  /**
   * Leave the group and disconnect, within `closeTimeoutMs`; then close every connection the
   * client still has open, by force (see ClientSockets). A later call makes a new client.
   */
  async close(consumer?: Consumer): Promise<void> {
    this.closing = true;
    const admin = this.adminClient;
    const sockets = this.sockets;
    this.adminClient = undefined;
    this.adminConnected = undefined;
    this.client = undefined;
    this.sockets = undefined;
    const graceful = Promise.all([consumer?.disconnect().catch(() => undefined), admin?.disconnect().catch(() => undefined)]);
    const ms = this.options.closeTimeoutMs;
    if ((await settledWithin(graceful, ms)) === "timeout") {
      this.options.onWarning(
        `${this.description}: kafkajs did not disconnect within closeTimeoutMs (${ms} ms); its connections were closed by force ` +
          `(a member that did not leave group "${this.options.groupId}" gives up its partitions after sessionTimeoutMs).`,
      );
    }
    sockets?.destroy();
  }

  private async kafka(): Promise<Kafka> {
    if (!this.kafkajs) {
      const mod = await requirePeer<KafkaModule & { default?: KafkaModule }>("kafkajs", "The Kafka source");
      this.kafkajs = mod.default?.Kafka ? mod.default : mod;
    }
    const mod = this.kafkajs;
    if (!this.client) this.sockets = new ClientSockets();
    this.client ??= new mod.Kafka({
      socketFactory: this.sockets!.factory,
      brokers: this.options.brokers,
      clientId: this.options.clientId,
      ...(this.options.ssl !== undefined ? { ssl: this.options.ssl } : {}),
      ...(this.options.sasl !== undefined ? { sasl: this.options.sasl as never } : {}),
      connectionTimeout: this.options.connectionTimeoutMs,
      requestTimeout: this.options.requestTimeoutMs,
      retry: { initialRetryTime: 250, maxRetryTime: this.options.maxRetryTimeMs, retries: 10 },
      logLevel: LOG_LEVELS[this.options.logLevel],
      logCreator: kafkaLogCreator(collapseRepeats(liveDefaultLogger)),
    });
    return this.client;
  }
}

/**
 * kafkajs's own lines go through the process logger (not raw JSON on stdout), scalar facts only,
 * each condition once per client: its retries repeat the same error (the connection's, then the
 * broker pool's around it) on every attempt.
 */
function kafkaLogCreator(logger: Logger): () => (entry: { namespace: string; level: number; log: Record<string, unknown> }) => void {
  return () => ({ namespace, level, log }) => {
    const fields: Record<string, string | number | boolean> = { source: "kafka", namespace };
    for (const [k, v] of Object.entries(log)) {
      if (k === "message" || k === "timestamp" || k === "logger" || k === "stack") continue;
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") fields[k] = v;
    }
    const msg = typeof log.message === "string" ? log.message : namespace;
    if (msg.includes(FORCED_CLOSE)) logger.debug(msg, fields);
    else if (level <= 1) logger.error(msg, fields);
    else if (level === 2) logger.warn(msg, fields);
    else if (level <= 4) logger.info(msg, fields);
    else logger.debug(msg, fields);
  };
}

/**
 * kafkajs's admin does not retry everything a broker may answer while it settles (e.g. "not the
 * coordinator" right after start-up or a restart): retry errors kafkajs marks retriable, briefly.
 */
async function retrying<T>(fn: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= attempts || (err as { retriable?: unknown }).retriable !== true) throw err;
      await sleep(Math.min(2_000, 100 * 2 ** attempt));
    }
  }
}
