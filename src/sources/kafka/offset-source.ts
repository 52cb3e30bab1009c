import { isUtf8 } from "node:buffer";
import type { ConnectionOptions } from "node:tls";
// Types only: kafkajs is an optional peer dependency, loaded at run time through requirePeer.
import type { Admin, Consumer, EachBatchPayload, Kafka, KafkaMessage } from "kafkajs";
import type { Cursor } from "../../checkpoint/types.js";
import { parseOptions, requirePeer, type ComponentSpec } from "../core/spec.js";
import { ConfigError, LakeLogicError, MissingDependencyError } from "../../errors.js";
import type { CursorSource, ReadOptions, RunMode, SourceLag, SourceRecord } from "../core/types.js";

/** `{ "<topic>:<partition>": nextOffset }` — the offset of the next record to read, per partition. */
export type KafkaCursor = Record<string, number>;

/** Where a Kafka record sits; kept with quarantined rows. */
export interface KafkaPosition {
  topic: string;
  partition: number;
  offset: number;
}

/** SASL credentials, passed through to kafkajs. */
export type KafkaSasl =
  | { mechanism: "plain" | "scram-sha-256" | "scram-sha-512"; username: string; password: string }
  | { mechanism: "aws"; authorizationIdentity: string; accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | { mechanism: "oauthbearer"; oauthBearerProvider: () => Promise<{ value: string }> };

export type KafkaLogLevel = "nothing" | "error" | "warn" | "info" | "debug";

export interface KafkaSourceOptions {
  /** Bootstrap brokers, `host:port` each (an array, or one comma-separated string). */
  brokers: string | string[];
  /** Consumer group. Its committed offsets are updated after each checkpoint commit. */
  groupId?: string;
  /** Alias of `groupId` (the connector's name for it). */
  consumerGroup?: string;
  /** Where a partition with no checkpoint position and no group offset starts. Default `earliest`. */
  autoOffsetReset?: "earliest" | "latest";
  /** kafkajs-style alias: `true` = earliest, `false` = latest. */
  fromBeginning?: boolean;
  clientId?: string;
  /** `true` for TLS with the system CAs, or Node TLS options (ca, cert, key, servername, …). */
  ssl?: boolean | ConnectionOptions;
  sasl?: KafkaSasl;
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Most bytes one fetch returns (all partitions). */
  maxBytes?: number;
  maxBytesPerPartition?: number;
  /** How long the broker may hold a fetch open waiting for data. */
  maxWaitTimeMs?: number;
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  /**
   * Longest wait between reconnection attempts. kafkajs backs off exponentially up to this; a
   * small cap means a consumer is back within seconds of its broker. Default 5000.
   */
  maxRetryTimeMs?: number;
  /** Bounded buffer between the fetcher and the reader (I5): fetching pauses when it is full. */
  bufferMaxMessages?: number;
  bufferMaxBytes?: number;
  /** Commit the group's offsets after each checkpoint commit (for lag tools). Default true. */
  commitGroupOffsets?: boolean;
  /** Give up on one group commit after this long (it is advisory; the next commit catches up). */
  groupCommitTimeoutMs?: number;
  /** Read records of open and aborted transactions too. Default false (read committed). */
  readUncommitted?: boolean;
  /** kafkajs's own log level. Default `error`. */
  logLevel?: KafkaLogLevel;
  /** Where warnings go (retention gaps, failed group commits). Default `process.emitWarning`. */
  onWarning?: (message: string) => void;
}

const DEFAULTS = {
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
  bufferMaxMessages: 20_000,
  bufferMaxBytes: 16 * 1024 * 1024,
  commitGroupOffsets: true,
  groupCommitTimeoutMs: 5_000,
  readUncommitted: false,
  logLevel: "error" as KafkaLogLevel,
};

const SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512", "aws", "oauthbearer"] as const;

/** The `kafka` source: one declaration for validation (code and JSON configs) and docs. */
export const kafkaSpec: ComponentSpec = {
  type: "kafka",
  kind: "cursor",
  peerDependency: "kafkajs",
  summary:
    "An Apache Kafka topic (or anything speaking its protocol: Confluent, MSK, Redpanda, Event Hubs). " +
    'The cursor is `{ "<topic>:<partition>": nextOffset }`, stored in the checkpoint after each write; a ' +
    "restarted run seeks each partition it is assigned to it (or to the group's offset, if another member got further). The consumer group's offsets are committed after each " +
    "checkpoint commit (auto-commit is off) so lag tools see progress. `available_now` ends at each " +
    "partition's high watermark taken when the run started. Values are parsed as JSON; a message that is " +
    "not UTF-8 JSON is quarantined with its bytes (base64), partition, offset and the reason.",
  options: {
    brokers: { type: "string[]", required: true, description: "Bootstrap brokers, `host:port` each (a list or a comma-separated string)." },
    topic: { type: "string", required: true, description: "Topic to read." },
    groupId: { type: "string", description: "Consumer group id (required unless `consumerGroup` is given)." },
    consumerGroup: { type: "string", description: "Alias of `groupId`." },
    autoOffsetReset: {
      type: "string",
      enum: ["earliest", "latest"],
      description:
        "Where a partition with neither a checkpoint position nor a group offset starts (new topics, new partitions). Default `earliest`.",
    },
    fromBeginning: { type: "boolean", description: "kafkajs-style alias of `autoOffsetReset`: true = earliest, false = latest." },
    clientId: { type: "string", default: DEFAULTS.clientId, description: "Client id the brokers see (quotas, logs)." },
    ssl: { type: "any", description: "`true` for TLS with the system CAs, or Node TLS options (`ca`, `cert`, `key`, `servername`, `rejectUnauthorized`, …)." },
    sasl: {
      type: "object",
      secret: true,
      description:
        "SASL credentials: `{ mechanism: plain | scram-sha-256 | scram-sha-512, username, password }`, " +
        "`{ mechanism: aws, authorizationIdentity, accessKeyId, secretAccessKey, sessionToken? }`; " +
        "`oauthbearer` (with an `oauthBearerProvider` function) from code only. Usually with `ssl: true`.",
    },
    sessionTimeoutMs: { type: "integer", min: 1000, default: DEFAULTS.sessionTimeoutMs, description: "Group session timeout: a member silent this long is removed and its partitions reassigned." },
    rebalanceTimeoutMs: { type: "integer", min: 1000, default: DEFAULTS.rebalanceTimeoutMs, description: "How long the group waits for members to rejoin during a rebalance." },
    heartbeatIntervalMs: { type: "integer", min: 100, default: DEFAULTS.heartbeatIntervalMs, description: "Heartbeat interval; keep it well below `sessionTimeoutMs`." },
    maxBytes: { type: "integer", min: 1024, default: DEFAULTS.maxBytes, description: "Most bytes one fetch returns, over all partitions." },
    maxBytesPerPartition: { type: "integer", min: 1024, default: DEFAULTS.maxBytesPerPartition, description: "Most bytes one fetch returns per partition." },
    maxWaitTimeMs: { type: "integer", min: 1, default: DEFAULTS.maxWaitTimeMs, description: "How long the broker may hold a fetch open waiting for new records." },
    connectionTimeoutMs: { type: "integer", min: 100, default: DEFAULTS.connectionTimeoutMs, description: "TCP/TLS connect timeout per broker." },
    requestTimeoutMs: { type: "integer", min: 100, default: DEFAULTS.requestTimeoutMs, description: "Timeout of one protocol request." },
    maxRetryTimeMs: {
      type: "integer",
      min: 100,
      default: DEFAULTS.maxRetryTimeMs,
      description: "Longest wait between reconnection attempts (exponential backoff up to this). The consumer keeps retrying while the brokers are unreachable.",
    },
    bufferMaxMessages: { type: "integer", min: 1, default: DEFAULTS.bufferMaxMessages, description: "Bounded read-ahead buffer, in messages: fetching pauses while it is full." },
    bufferMaxBytes: { type: "integer", min: 1024, default: DEFAULTS.bufferMaxBytes, description: "Bounded read-ahead buffer, in bytes of message keys and values." },
    commitGroupOffsets: { type: "boolean", default: DEFAULTS.commitGroupOffsets, description: "Commit the group's offsets after each checkpoint commit, so standard lag tools see progress." },
    groupCommitTimeoutMs: { type: "integer", min: 100, default: DEFAULTS.groupCommitTimeoutMs, description: "Stop waiting for one group commit after this long; the next commit catches up." },
    readUncommitted: { type: "boolean", default: DEFAULTS.readUncommitted, description: "Also read records of open and aborted transactions (default: committed only)." },
    logLevel: { type: "string", enum: ["nothing", "error", "warn", "info", "debug"], default: DEFAULTS.logLevel, description: "kafkajs's own logging." },
  },
  check(o) {
    const group = o.groupId ?? o.consumerGroup;
    if (group === undefined) return { option: "groupId", message: "is required (or its alias consumerGroup): the consumer group to read as" };
    if (o.groupId !== undefined && o.consumerGroup !== undefined && o.groupId !== o.consumerGroup) {
      return { option: "consumerGroup", message: `is an alias of groupId but differs from it (${JSON.stringify(o.consumerGroup)} vs ${JSON.stringify(o.groupId)}); give one` };
    }
    if (o.fromBeginning !== undefined && o.autoOffsetReset !== undefined && (o.fromBeginning ? "earliest" : "latest") !== o.autoOffsetReset) {
      return { option: "fromBeginning", message: `contradicts autoOffsetReset ${JSON.stringify(o.autoOffsetReset)}; give one of them` };
    }
    for (const b of o.brokers as string[]) {
      if (!/^[^\s:/]+:\d{1,5}$/.test(b) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(b)) {
        return { option: "brokers", message: `expected host:port entries like "broker-1:9092"; got ${JSON.stringify(b)}` };
      }
    }
    if (o.ssl !== undefined && typeof o.ssl !== "boolean" && (typeof o.ssl !== "object" || o.ssl === null || Array.isArray(o.ssl))) {
      return { option: "ssl", message: "expected true/false or an object of Node TLS options" };
    }
    if (o.sasl !== undefined) {
      const problem = checkSasl(o.sasl as Record<string, unknown>);
      if (problem) return { option: "sasl", message: problem };
    }
    if ((o.heartbeatIntervalMs as number) >= (o.sessionTimeoutMs as number)) {
      return { option: "heartbeatIntervalMs", message: `must be below sessionTimeoutMs (${String(o.sessionTimeoutMs)}); a third of it is usual` };
    }
    return undefined;
  },
};

function checkSasl(s: Record<string, unknown>): string | undefined {
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

/** Options after validation and defaults. */
type Resolved = Required<Omit<KafkaSourceOptions, "consumerGroup" | "fromBeginning" | "ssl" | "sasl" | "onWarning" | "brokers">> & {
  brokers: string[];
  ssl?: boolean | ConnectionOptions;
  sasl?: KafkaSasl;
  onWarning: (message: string) => void;
};

type KafkaModule = typeof import("kafkajs");

/** A stored cursor does not belong to this topic, or cannot be right for it. */
export class KafkaCursorError extends LakeLogicError {
  constructor(code: "CURSOR_MISMATCH" | "CURSOR_BEYOND_END", message: string) {
    super(code, message);
  }
}

/** The kafkajs consumer stopped for good (it gave up, or was refused). */
export class KafkaConsumerError extends LakeLogicError {
  constructor(description: string, cause: unknown) {
    super("KAFKA_CONSUMER", `${description}: the consumer stopped: ${messageOf(cause)}`, { cause });
  }
}

interface Chunk {
  partition: number;
  /** Decoded on arrival, while the sink is busy writing, rather than on the read path. */
  records: SourceRecord[];
  offsets: number[];
  index: number;
  bytes: number;
  /** After the last message: the partition's position moves here (past control records). */
  advanceTo: number | undefined;
}

interface Marks {
  low: number;
  high: number;
}

/**
 * A Kafka topic as a replayable cursor source (see `kafkaSpec` for the options).
 *
 * **Cursor.** `{ "<topic>:<partition>": nextOffset }`, describing exactly the records yielded
 * (never prefetched ones). On start, each partition this member is assigned seeks to
 * max(checkpoint position, group's committed offset); with neither, it starts per
 * `autoOffsetReset`. In a single-member deployment the group offset is committed after the
 * checkpoint and never passes it, so the checkpoint decides; in a shared group a group offset
 * ahead of this member's checkpoint means another member already committed those records.
 *
 * **Reading.** kafkajs pushes fetched batches; they are decoded on arrival (so decoding overlaps
 * the sink's writes) into a bounded buffer (messages and bytes), and the fetch callback waits —
 * heartbeating — while it is full, so memory is bounded (I5). `read` pulls from the buffer.
 *
 * **Rebalance.** Records of a partition this member lost are dropped from the buffer at the
 * rebalance and never yielded. Records already yielded but not yet committed are committed by
 * this member's in-flight batch, and may also be read by the partition's new owner, from the
 * group offset: at-least-once, a replayed batch at most, absorbed by a merge target.
 *
 * **Poison messages.** A value that is null, not UTF-8 or not JSON becomes a record with
 * `decodeError`, `raw` = the bytes and `position` = {topic, partition, offset}: quarantined (I6).
 * JSON that is not an object is wrapped as `{ data: value }`, like the other connectors.
 */
export class KafkaOffsetSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  /**
   * Not `replays`: members of a consumer group each keep their own checkpoint, and a partition
   * that moves to another member is read again from the group's offset by that member's stream,
   * so records one stream committed can come again in another's (the lake looks every id up).
   */
  readonly replays = false;
  readonly topic: string;
  protected readonly options: Resolved;

  private kafkajs: KafkaModule | undefined;
  private client: Kafka | undefined;
  private admin: Admin | undefined;
  private adminConnected: Promise<void> | undefined;
  private consumer: Consumer | undefined;
  private reading = false;
  private closed = false;

  /** Next offset to yield, per partition: the cursor. */
  private readonly positions = new Map<number, number>();
  private cursorCache: KafkaCursor | undefined;
  /** Partitions of the cursor in order, with their keys (rebuilt only when one is added). */
  private cursorKeys: Array<[number, string]> = [];
  /** End snapshot of this drain (available_now). */
  private end: Map<number, number> | undefined;
  /** The snapshot in force for the current read (set only in available_now). */
  private limit: Map<number, number> | undefined;

  // Per-consumer state, reset for every read.
  private assigned = new Set<number>();
  /** Next offset to enqueue, per assigned partition whose start has been settled. */
  private readonly fetched = new Map<number, number>();
  private joins = 0;
  private settledJoins = 0;
  private joinWork: Promise<void> = Promise.resolve();
  private holding = false;
  private stopping = false;
  private failure: Error | undefined;
  private queue: Chunk[] = [];
  private queuedMessages = 0;
  private queuedBytes = 0;
  private wakeReader: (() => void) | undefined;
  private wakeWriter: (() => void) | undefined;
  private readonly highWatermarks = new Map<number, number>();
  private readonly groupOffsets = new Map<number, number>();
  private groupCommit: Promise<void> | undefined;
  private commitWanted: Map<number, number> | undefined;
  /** The last checkpointed positions: committed to the group again after a rejoin, in case the
   * commit that followed the checkpoint was refused during the rebalance or an outage. */
  private lastCommitted: Map<number, number> | undefined;
  private groupCommitFailing = false;

  constructor(topic: string, options: KafkaSourceOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ConfigError("source kafka", "expected options with at least brokers and groupId");
    }
    const { onWarning, ...rest } = options;
    const o = parseOptions(kafkaSpec, { ...rest, topic } as Record<string, unknown>);
    this.topic = o.topic as string;
    this.description = `kafka ${this.topic}`;
    const reset =
      (o.autoOffsetReset as "earliest" | "latest" | undefined) ??
      (o.fromBeginning === undefined ? DEFAULTS.autoOffsetReset : o.fromBeginning ? "earliest" : "latest");
    this.options = {
      brokers: o.brokers as string[],
      groupId: (o.groupId ?? o.consumerGroup) as string,
      autoOffsetReset: reset,
      clientId: o.clientId as string,
      ssl: o.ssl as boolean | ConnectionOptions | undefined,
      sasl: normaliseSasl(o.sasl as KafkaSasl | undefined),
      sessionTimeoutMs: o.sessionTimeoutMs as number,
      rebalanceTimeoutMs: o.rebalanceTimeoutMs as number,
      heartbeatIntervalMs: o.heartbeatIntervalMs as number,
      maxBytes: o.maxBytes as number,
      maxBytesPerPartition: o.maxBytesPerPartition as number,
      maxWaitTimeMs: o.maxWaitTimeMs as number,
      connectionTimeoutMs: o.connectionTimeoutMs as number,
      requestTimeoutMs: o.requestTimeoutMs as number,
      maxRetryTimeMs: o.maxRetryTimeMs as number,
      bufferMaxMessages: o.bufferMaxMessages as number,
      bufferMaxBytes: o.bufferMaxBytes as number,
      commitGroupOffsets: o.commitGroupOffsets as boolean,
      groupCommitTimeoutMs: o.groupCommitTimeoutMs as number,
      readUncommitted: o.readUncommitted as boolean,
      logLevel: o.logLevel as KafkaLogLevel,
      onWarning: onWarning ?? ((message) => process.emitWarning(message, { code: "LAKELOGIC_KAFKA" })),
    };
  }

  get groupId(): string {
    return this.options.groupId;
  }

  // ---------------------------------------------------------------- cursor protocol

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (this.reading) throw new LakeLogicError("SOURCE_BUSY", `${this.description}: seek() while a read is in progress`);
    this.positions.clear();
    this.cursorKeys = [];
    this.cursorCache = undefined;
    this.end = undefined;
    for (const [p, offset] of this.parseCursor(cursor, "stored cursor")) this.positions.set(p, offset);
  }

  currentCursor(): KafkaCursor | undefined {
    if (this.positions.size === 0) return undefined;
    // The sink samples this after every record; rebuild only when a position moved. A returned
    // object is never mutated afterwards.
    if (!this.cursorCache) {
      if (this.cursorKeys.length !== this.positions.size) {
        this.cursorKeys = [...this.positions.keys()].sort((a, b) => a - b).map((p) => [p, `${this.topic}:${p}`]);
      }
      const c: KafkaCursor = {};
      for (const [p, key] of this.cursorKeys) c[key] = this.positions.get(p)!;
      this.cursorCache = c;
    }
    return this.cursorCache;
  }

  /** Each partition's high watermark now (I7), or adopt a snapshot captured by another worker. */
  async endCursor(snapshot?: Cursor): Promise<KafkaCursor> {
    if (snapshot !== undefined && snapshot !== null) {
      this.end = this.parseCursor(snapshot, "end snapshot");
    } else {
      const marks = await this.watermarks();
      this.end = new Map([...marks].map(([p, m]) => [p, m.high]));
    }
    return toCursor(this.topic, this.end);
  }

  progress(cursor: Cursor, end: Cursor): number | undefined {
    try {
      const at = this.parseCursor(cursor, "cursor");
      const until = this.parseCursor(end, "end snapshot");
      let total = 0;
      let done = 0;
      for (const [p, e] of until) {
        total += e;
        done += Math.min(e, at.get(p) ?? 0);
      }
      return total === 0 ? 1 : done / total;
    } catch {
      return undefined;
    }
  }

  async lag(): Promise<SourceLag | undefined> {
    let records = 0;
    let known = false;
    for (const p of this.assigned) {
      const hw = this.highWatermarks.get(p);
      const at = this.positions.get(p);
      if (hw === undefined || at === undefined) continue;
      known = true;
      records += Math.max(0, hw - at);
    }
    if (!known) return undefined;
    const first = this.queue[0];
    const head = first?.records[first.index];
    const ts = head ? Number(head.meta?.timestamp) : NaN;
    return Number.isFinite(ts) ? { records, oldestAgeMs: Math.max(0, Date.now() - ts) } : { records };
  }

  /**
   * After a checkpoint commit: commit the group's offsets for the partitions this member owns,
   * never moving one backwards. Advisory (the checkpoint is the truth), so it does not hold up
   * the next batch: commits run one at a time in the background, the newest cursor wins, and
   * `close()` waits for the last one. A failure is a warning; the next commit catches up.
   */
  async committed(cursor: Cursor): Promise<void> {
    if (!this.options.commitGroupOffsets) return;
    this.lastCommitted = this.parseCursor(cursor, "committed cursor");
    this.scheduleGroupCommit(this.lastCommitted);
  }

  private scheduleGroupCommit(positions: Map<number, number>): void {
    this.commitWanted = positions;
    this.groupCommit ??= this.commitLoop().finally(() => {
      this.groupCommit = undefined;
    });
  }

  /** Wait until the group commits asked for so far have been tried. */
  async flushGroupCommits(): Promise<void> {
    while (this.groupCommit) await this.groupCommit;
  }

  private async commitLoop(): Promise<void> {
    for (let positions = this.commitWanted; positions; positions = this.commitWanted) {
      this.commitWanted = undefined;
      await this.commitGroup(positions);
    }
  }

  private async commitGroup(positions: Map<number, number>): Promise<void> {
    if (this.closed) return; // never reconnect just to commit after close()
    const consumer = this.consumer;
    // A member commits for the partitions it owns; a consumer still joining has nothing to commit.
    if (consumer && this.settledJoins === 0) return;
    const offsets = [...positions]
      .filter(([p, offset]) => (consumer ? this.assigned.has(p) : true) && offset > (this.groupOffsets.get(p) ?? -1))
      .map(([partition, offset]) => ({ topic: this.topic, partition, offset: String(offset) }));
    if (offsets.length === 0) return;
    try {
      const commit = consumer
        ? consumer.commitOffsets(offsets)
        : // Not a member (the drain had nothing to read): set them as an admin, which the broker
          // allows only while the group has no active members; otherwise they stay as they are.
          this.adminClient().then((admin) =>
            admin.setOffsets({ groupId: this.options.groupId, topic: this.topic, partitions: offsets.map(({ partition, offset }) => ({ partition, offset })) }),
          );
      const outcome = await raceTimer(commit.then(() => "ok" as const), this.options.groupCommitTimeoutMs);
      if (outcome === "timeout") throw new Error(`no answer within ${this.options.groupCommitTimeoutMs} ms`);
      for (const { partition, offset } of offsets) this.groupOffsets.set(partition, Number(offset));
      this.groupCommitFailing = false;
    } catch (err) {
      // During a rebalance the broker refuses commits of the old generation: expected, and the
      // member (or the partition's new owner) commits again once the group has settled.
      const rebalancing = errorTypes(err).some((t) => REBALANCE_ERRORS.has(t));
      if (!this.groupCommitFailing && !rebalancing) {
        this.options.onWarning(
          `${this.description}: could not commit offsets of group "${this.options.groupId}" (${messageOf(err)}). ` +
            `The checkpoint holds the true position; lag tools show the group behind until a later commit succeeds.`,
        );
        this.groupCommitFailing = true;
      }
    }
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.flushGroupCommits();
    this.closed = true;
    const consumer = this.consumer;
    this.consumer = undefined;
    await consumer?.disconnect().catch(() => undefined);
    const admin = this.admin;
    this.admin = undefined;
    this.adminConnected = undefined;
    await admin?.disconnect().catch(() => undefined);
    this.client = undefined;
    this.reading = false;
  }

  // ---------------------------------------------------------------- reading

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    if (this.reading) throw new LakeLogicError("SOURCE_BUSY", `${this.description}: read() is already in progress`);
    this.reading = true;
    this.closed = false;
    this.lastCommitted = undefined;
    // A consumer left over from an earlier read of this instance leaves the group first.
    await this.consumer?.disconnect().catch(() => undefined);
    this.consumer = undefined;
    this.resetSession(options.mode);
    try {
      if (options.mode === "available_now") {
        if (!this.end) await this.endCursor();
        this.limit = this.end;
        // Nothing to read? Then do not join the group at all (a join costs a rebalance).
        if (await this.nothingToRead()) return;
      }
      await this.startConsumer();
      while (true) {
        if (this.failure) throw this.failure;
        if (options.signal.aborted || this.stopping) return;
        if (this.limit && this.drained()) return;
        const item = this.holding ? undefined : this.take();
        if (!item) {
          await this.waitForData(options.signal);
          continue;
        }
        // The position moves before the record is handed over: when the sink samples the
        // cursor right after receiving it, the cursor includes it, and nothing later.
        this.positions.set(item.partition, item.offset + 1);
        this.cursorCache = undefined;
        yield item.record;
      }
    } finally {
      // Stop fetching but stay in the group: the sink still commits the last batch's offsets.
      this.limit = undefined;
      this.holding = true;
      this.dropQueue();
      this.wakeWriter?.();
      this.pauseAll();
      this.reading = false;
    }
  }

  private pauseAll(): void {
    try {
      this.consumer?.pause([{ topic: this.topic }]);
    } catch {
      // not running
    }
  }

  private toRecord(partition: number, offset: number, m: KafkaMessage): SourceRecord {
    const position: KafkaPosition = { topic: this.topic, partition, offset };
    // Topic, partition and offset are in `position`; meta carries the rest of the envelope.
    const meta: Record<string, unknown> = { timestamp: Number(m.timestamp) };
    if (m.key) meta.key = isUtf8(m.key) ? m.key.toString("utf8") : m.key.toString("base64");
    const headers = m.headers;
    if (headers && Object.keys(headers).length > 0) meta.headers = headerStrings(headers);
    const bytes = m.value?.length ?? 0;
    const decoded = decodeValue(m.value);
    if ("error" in decoded) {
      // Keep the exact bytes (quarantine stores them base64) so the message can be inspected or replayed.
      return { value: undefined, raw: m.value ?? new Uint8Array(0), decodeError: decoded.error, position, bytes, meta };
    }
    return { value: decoded.value, position, bytes, meta };
  }

  private take(): { partition: number; offset: number; record: SourceRecord } | undefined {
    while (this.queue.length > 0) {
      const chunk = this.queue[0]!;
      if (chunk.index < chunk.records.length) {
        const i = chunk.index++;
        this.queuedMessages--;
        return { partition: chunk.partition, offset: chunk.offsets[i]!, record: chunk.records[i]! };
      }
      this.queue.shift();
      this.queuedBytes -= chunk.bytes;
      if (chunk.advanceTo !== undefined && chunk.advanceTo > (this.positions.get(chunk.partition) ?? -1)) {
        // Only control records (transaction markers) or filtered records lie before this offset.
        this.positions.set(chunk.partition, chunk.advanceTo);
        this.cursorCache = undefined;
      }
      this.wakeWriter?.();
    }
    return undefined;
  }

  private drained(): boolean {
    if (this.settledJoins === 0 || this.holding) return false;
    for (const [p, end] of this.limit!) {
      // A partition another member owns is that member's to drain.
      if (!this.assigned.has(p)) continue;
      if ((this.positions.get(p) ?? -1) < end) return false;
    }
    return true;
  }

  private async waitForData(signal: AbortSignal): Promise<void> {
    let onAbort: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      this.wakeReader = resolve;
      onAbort = resolve;
      signal.addEventListener("abort", onAbort, { once: true });
    });
    this.wakeReader = undefined;
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }

  private wake(): void {
    this.wakeReader?.();
    this.wakeWriter?.();
  }

  private resetSession(mode: RunMode): void {
    this.assigned = new Set();
    this.fetched.clear();
    this.joins = 0;
    this.settledJoins = 0;
    this.joinWork = Promise.resolve();
    this.holding = false;
    this.stopping = false;
    this.failure = undefined;
    this.dropQueue();
    this.highWatermarks.clear();
    this.limit = mode === "available_now" ? this.end : undefined;
  }

  private dropQueue(partition?: number): void {
    if (partition === undefined) {
      this.queue = [];
      this.queuedMessages = 0;
      this.queuedBytes = 0;
      return;
    }
    const kept: Chunk[] = [];
    for (const c of this.queue) {
      if (c.partition === partition) {
        this.queuedMessages -= c.records.length - c.index;
        this.queuedBytes -= c.bytes;
      } else {
        kept.push(c);
      }
    }
    this.queue = kept;
  }

  /** available_now fast path: every partition already at (or past) the snapshot. */
  private async nothingToRead(): Promise<boolean> {
    const [group, marks] = await Promise.all([this.fetchGroupOffsets(), this.watermarks()]);
    const starts = new Map<number, number>();
    for (const [p, end] of this.limit!) {
      const start = this.startOf(p, group, marks);
      if (start < end) return false;
      starts.set(p, start);
    }
    for (const [p, start] of starts) this.positions.set(p, Math.max(start, this.positions.get(p) ?? -1));
    this.cursorCache = undefined;
    for (const [p, offset] of group) this.groupOffsets.set(p, offset);
    return true;
  }

  /** Where partition p starts: max(checkpoint, group offset), else the reset policy; never before the log start. */
  private startOf(p: number, group: Map<number, number>, marks: Map<number, Marks>): number {
    const mine = this.positions.get(p);
    const mark = marks.get(p);
    if (mine !== undefined && mark && mine > mark.high) {
      throw new KafkaCursorError(
        "CURSOR_BEYOND_END",
        `${this.description}: the checkpoint says partition ${p} is at offset ${mine}, but the partition ends at ` +
          `${mark.high}. The topic was deleted and recreated, or this checkpoint belongs to another cluster. ` +
          `Resuming could skip records; start over with a new checkpointKey (and consumer group).`,
      );
    }
    let start = Math.max(mine ?? -1, group.get(p) ?? -1);
    if (start < 0) start = mark ? (this.options.autoOffsetReset === "earliest" ? mark.low : mark.high) : 0;
    if (mark && start < mark.low) {
      this.options.onWarning(
        `${this.description}: partition ${p} should resume at offset ${start}, but retention already deleted ` +
          `records before ${mark.low}; continuing at ${mark.low}. ${mark.low - start} records were never read.`,
      );
      start = mark.low;
    }
    return start;
  }

  // ---------------------------------------------------------------- kafkajs plumbing

  private async kafka(): Promise<{ mod: KafkaModule; client: Kafka }> {
    if (!this.kafkajs) {
      const mod = await requirePeer<KafkaModule & { default?: KafkaModule }>("kafkajs", "The Kafka source");
      this.kafkajs = mod.default?.Kafka ? mod.default : mod;
    }
    const mod = this.kafkajs;
    this.client ??= new mod.Kafka({
      brokers: this.options.brokers,
      clientId: this.options.clientId,
      ...(this.options.ssl !== undefined ? { ssl: this.options.ssl } : {}),
      ...(this.options.sasl !== undefined ? { sasl: this.options.sasl as never } : {}),
      connectionTimeout: this.options.connectionTimeoutMs,
      requestTimeout: this.options.requestTimeoutMs,
      retry: { initialRetryTime: 250, maxRetryTime: this.options.maxRetryTimeMs, retries: 10 },
      logLevel: LOG_LEVELS[this.options.logLevel],
    });
    return { mod, client: this.client };
  }

  private adminClient(): Promise<Admin> {
    const connect = async () => {
      const { client } = await this.kafka();
      this.admin ??= client.admin();
      await this.admin.connect();
    };
    this.adminConnected ??= connect().catch((err) => {
      this.adminConnected = undefined;
      if (err instanceof MissingDependencyError) throw err;
      throw new LakeLogicError("KAFKA_CONNECT", `${this.description}: cannot reach brokers ${this.options.brokers.join(",")}: ${messageOf(err)}`, {
        cause: err,
      });
    });
    return this.adminConnected.then(() => this.admin!);
  }

  private async watermarks(): Promise<Map<number, Marks>> {
    const admin = await this.adminClient();
    let offsets: Array<{ partition: number; high: string; low: string }>;
    try {
      offsets = await retrying(() => admin.fetchTopicOffsets(this.topic));
    } catch (err) {
      throw new LakeLogicError(
        "KAFKA_TOPIC",
        `${this.description}: cannot read the offsets of topic "${this.topic}" (${messageOf(err)}). Check that it exists and that this client may describe it.`,
        { cause: err },
      );
    }
    return new Map(offsets.map((o) => [o.partition, { low: Number(o.low), high: Number(o.high) }]));
  }

  private async fetchGroupOffsets(): Promise<Map<number, number>> {
    const admin = await this.adminClient();
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

  private async startConsumer(): Promise<void> {
    const { client } = await this.kafka();
    await this.adminClient();
    const consumer = client.consumer({
      groupId: this.options.groupId,
      sessionTimeout: this.options.sessionTimeoutMs,
      rebalanceTimeout: this.options.rebalanceTimeoutMs,
      heartbeatInterval: this.options.heartbeatIntervalMs,
      maxBytes: this.options.maxBytes,
      maxBytesPerPartition: this.options.maxBytesPerPartition,
      maxWaitTimeInMs: this.options.maxWaitTimeMs,
      readUncommitted: this.options.readUncommitted,
      allowAutoTopicCreation: false,
    });
    this.consumer = consumer;
    const { GROUP_JOIN, REBALANCING, CRASH, START_BATCH_PROCESS } = consumer.events;
    consumer.on(GROUP_JOIN, (e) => this.onJoin(e.payload.memberAssignment[this.topic] ?? []));
    // Eager rebalancing: every partition may be about to move. Hold the reader until the new
    // assignment is known, so records of a lost partition are not yielded in the meantime.
    consumer.on(REBALANCING, () => {
      this.holding = true;
    });
    consumer.on(CRASH, (e) => {
      if (e.payload.restart) {
        // kafkajs left the group and will rejoin: assume nothing is ours any more.
        this.holding = true;
        this.dropQueue();
        this.fetched.clear();
        this.wakeWriter?.();
      } else {
        this.failure ??= new KafkaConsumerError(this.description, e.payload.error);
        this.wake();
      }
    });
    // A fetch that returned only control records or aborted transactions never reaches
    // eachBatch; its end still moves the position, or a drain could wait for offsets that
    // will never be delivered.
    consumer.on(START_BATCH_PROCESS, (e) => {
      const { partition, batchSize, lastOffset } = e.payload;
      if (batchSize === 0 && e.payload.topic === this.topic) this.advanceEmpty(partition, Number(lastOffset) + 1);
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.topic, fromBeginning: this.options.autoOffsetReset === "earliest" });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: (payload) => this.onBatch(payload),
      });
    } catch (err) {
      throw new LakeLogicError("KAFKA_CONNECT", `${this.description}: cannot start the consumer of group "${this.options.groupId}": ${messageOf(err)}`, {
        cause: err,
      });
    }
  }

  /** GROUP_JOIN: take the new assignment at once, settle start positions (async) after. */
  private onJoin(partitions: number[]): void {
    const join = ++this.joins;
    const next = new Set(partitions);
    for (const p of this.assigned) {
      if (!next.has(p)) {
        // Lost: never yield its buffered records; its position stays in the cursor.
        this.dropQueue(p);
        this.fetched.delete(p);
      }
    }
    this.assigned = next;
    this.holding = true;
    this.wakeWriter?.();
    this.joinWork = this.joinWork.then(() => this.settleJoin(join));
  }

  private async settleJoin(join: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (join !== this.joins || this.stopping) return; // superseded: the newest join settles
      try {
        const unsettled = [...this.assigned].filter((p) => !this.fetched.has(p));
        const [group, marks] =
          unsettled.length > 0 ? await Promise.all([this.fetchGroupOffsets(), this.watermarks()]) : [new Map<number, number>(), new Map<number, Marks>()];
        if (join !== this.joins || this.stopping) return;
        for (const [p, offset] of group) this.groupOffsets.set(p, Math.max(offset, this.groupOffsets.get(p) ?? -1));
        for (const p of unsettled) {
          const start = this.startOf(p, group, marks);
          this.fetched.set(p, start);
          if (start > (this.positions.get(p) ?? -1)) {
            this.positions.set(p, start);
            this.cursorCache = undefined;
          }
        }
        const consumer = this.consumer;
        if (!consumer) return;
        const pause: number[] = [];
        const resume: number[] = [];
        for (const p of this.assigned) {
          const at = this.fetched.get(p)!;
          // kafkajs restarts every partition from the group offset after a rebalance; ours is ahead.
          consumer.seek({ topic: this.topic, partition: p, offset: String(at) });
          const end = this.limit ? (this.limit.get(p) ?? at) : undefined;
          // After the read ended (the member stays for the last group commit) nothing is fetched.
          (!this.reading || (end !== undefined && at >= end) ? pause : resume).push(p);
        }
        if (pause.length > 0) consumer.pause([{ topic: this.topic, partitions: pause }]);
        if (resume.length > 0) consumer.resume([{ topic: this.topic, partitions: resume }]);
        this.settledJoins++;
        this.holding = false;
        this.wake();
        if (this.lastCommitted && this.options.commitGroupOffsets) this.scheduleGroupCommit(this.commitWanted ?? this.lastCommitted);
        return;
      } catch (err) {
        if (err instanceof KafkaCursorError) {
          this.failure ??= err;
          this.wake();
          return;
        }
        // The brokers are unreachable (a restart, an outage): keep trying, like the consumer does.
        if (attempt === 5) this.options.onWarning(`${this.description}: still cannot settle partition positions after a rebalance: ${messageOf(err)}; retrying`);
        await sleep(Math.min(this.options.maxRetryTimeMs, 250 * 2 ** attempt));
      }
    }
  }

  /** eachBatch: buffer the batch (bounded), then wait for room while heartbeating. */
  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const p = batch.partition;
    const from = this.fetched.get(p);
    if (
      this.stopping ||
      this.holding ||
      !this.reading ||
      !isRunning() ||
      isStale() ||
      from === undefined ||
      !this.assigned.has(p) ||
      batch.topic !== this.topic
    ) {
      // Not resolved: kafkajs fetches it again (or from a pending seek) once the new assignment
      // is settled. Returning (rather than waiting here) lets kafkajs keep heartbeating.
      await sleep(100);
      return;
    }
    this.highWatermarks.set(p, Number(batch.highWatermark));
    const end = this.limit ? (this.limit.get(p) ?? from) : Infinity;
    const records: SourceRecord[] = [];
    const offsets: number[] = [];
    let bytes = 0;
    for (const m of batch.messages) {
      const offset = Number(m.offset);
      if (offset < from) continue; // already buffered or yielded (a refetch after a rebalance)
      if (offset >= end) break; // I7: beyond the snapshot, for the next run
      records.push(this.toRecord(p, offset, m));
      offsets.push(offset);
      bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0);
    }
    const last = offsets.at(-1);
    let fetchedTo = last !== undefined ? last + 1 : from;
    const batchEnd = Math.min(Number(batch.lastOffset()) + 1, end);
    const advanceTo = batchEnd > fetchedTo ? batchEnd : undefined;
    if (advanceTo !== undefined) fetchedTo = advanceTo;
    if (records.length > 0 || advanceTo !== undefined) {
      this.queue.push({ partition: p, records, offsets, index: 0, bytes, advanceTo });
      this.queuedMessages += records.length;
      this.queuedBytes += bytes;
      this.fetched.set(p, fetchedTo);
      this.wakeReader?.();
    }
    resolveOffset(String(fetchedTo - 1));
    if (fetchedTo >= end) this.consumer?.pause([{ topic: this.topic, partitions: [p] }]);

    // Backpressure (I5): kafkajs fetches again only after this returns.
    const join = this.joins;
    while (this.full() && !this.stopping && isRunning() && join === this.joins) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(1_000, this.options.heartbeatIntervalMs));
        this.wakeWriter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeWriter = undefined;
      // Keeps the membership alive while the sink writes; throws when a rebalance started,
      // which is how kafkajs learns it must rejoin.
      await heartbeat();
    }
  }

  /** A fetch with only control/aborted records: move the position past them, in order. */
  private advanceEmpty(p: number, to: number): void {
    const from = this.fetched.get(p);
    if (from === undefined || !this.assigned.has(p) || this.holding) return;
    const end = this.limit ? (this.limit.get(p) ?? from) : Infinity;
    const target = Math.min(to, end);
    if (target <= from) return;
    this.queue.push({ partition: p, records: [], offsets: [], index: 0, bytes: 0, advanceTo: target });
    this.fetched.set(p, target);
    this.wakeReader?.();
  }

  private full(): boolean {
    return this.queuedMessages >= this.options.bufferMaxMessages || this.queuedBytes >= this.options.bufferMaxBytes;
  }

  private parseCursor(cursor: Cursor | undefined, what: string): Map<number, number> {
    const out = new Map<number, number>();
    if (cursor === undefined || cursor === null) return out;
    if (typeof cursor !== "object" || Array.isArray(cursor)) throw this.mismatch(cursor, what);
    const prefix = `${this.topic}:`;
    for (const [key, value] of Object.entries(cursor as Record<string, unknown>)) {
      if (!key.startsWith(prefix)) throw this.mismatch(cursor, what);
      const p = Number(key.slice(prefix.length));
      const offset = typeof value === "bigint" ? Number(value) : typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      if (!Number.isInteger(p) || p < 0 || typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) {
        throw this.mismatch(cursor, what);
      }
      out.set(p, offset);
    }
    return out;
  }

  private mismatch(cursor: unknown, what: string): KafkaCursorError {
    return new KafkaCursorError(
      "CURSOR_MISMATCH",
      `${this.description}: the ${what} ${JSON.stringify(cursor)} is not a Kafka cursor of topic "${this.topic}" ` +
        `({"${this.topic}:<partition>": nextOffset}); this checkpoint key belongs to another source or topic.`,
    );
  }
}

const REBALANCE_ERRORS = new Set(["ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID"]);

const LOG_LEVELS: Record<KafkaLogLevel, number> = { nothing: 0, error: 1, warn: 2, info: 4, debug: 5 };

function normaliseSasl(s: KafkaSasl | undefined): KafkaSasl | undefined {
  if (!s) return undefined;
  return { ...s, mechanism: s.mechanism.toLowerCase() } as KafkaSasl;
}

function toCursor(topic: string, m: Map<number, number>): KafkaCursor {
  const c: KafkaCursor = {};
  for (const p of [...m.keys()].sort((a, b) => a - b)) c[`${topic}:${p}`] = m.get(p)!;
  return c;
}

type Decoded = { value: unknown } | { error: string };

/** UTF-8 JSON, strictly: a null value, invalid UTF-8 or invalid JSON is a decode error. */
export function decodeValue(value: Buffer | null): Decoded {
  if (value === null) return { error: "message has no value (a tombstone)" };
  if (!isUtf8(value)) return { error: "value is not valid UTF-8" };
  let v: unknown;
  try {
    v = JSON.parse(value.toString("utf8"));
  } catch (err) {
    return { error: `value is not JSON: ${(err as Error).message}` };
  }
  // Same shape rule as the other connectors: an object as is, any other JSON value as { data }.
  return { value: typeof v === "object" && v !== null && !Array.isArray(v) ? v : { data: v } };
}

/** Protocol error types along an error's cause chain (kafkajs wraps them in retry errors). */
function errorTypes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === "string") out.push(type);
  }
  return out;
}

function headerStrings(headers: Record<string, unknown>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const str = (v: unknown) => (Buffer.isBuffer(v) ? v.toString("utf8") : String(v));
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.map(str) : str(v);
  }
  return out;
}

function messageOf(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error && cause.message && !err.message.includes(cause.message) ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function raceTimer<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
