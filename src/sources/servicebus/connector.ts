import { isUtf8 } from "node:buffer";
import type {
  ServiceBusAdministrationClient,
  ServiceBusClient,
  ServiceBusReceivedMessage,
  ServiceBusReceiver,
} from "@azure/service-bus";
import { ConfigError, LakeLogicError } from "../../errors.js";
import type { AckSource, ReceivedRecord, SourceLag, StreamConnector } from "../core/types.js";
import {
  LeaseKeeper,
  QueueAckError,
  QueueReceiveError,
  SingleStream,
  decodeBody,
  defaultWarn,
  errorText,
  mapLimit,
  wrapJson,
  type DecodedBody,
  type Lease,
  type QueueHooks,
} from "../core/queue.js";
import type { SourceFactory } from "../core/registry.js";
import { parseOptions, requirePeer, type ComponentSpec } from "../core/spec.js";

type ServiceBusModule = typeof import("@azure/service-bus");
type IdentityModule = typeof import("@azure/identity");

/**
 * The part of `ServiceBusReceiver` (peek-lock) the connector uses. Pass your own receiver —
 * made with any `ServiceBusClient` options, e.g. sessions or a proxy — as `receiver`.
 */
export type ServiceBusReceiverLike = Pick<
  ServiceBusReceiver,
  "receiveMessages" | "completeMessage" | "abandonMessage" | "deadLetterMessage" | "renewMessageLock" | "close"
>;

export interface ServiceBusConnectorOptions extends QueueHooks {
  /** `Endpoint=sb://<ns>.servicebus.windows.net/;SharedAccessKeyName=…;SharedAccessKey=…` */
  connectionString?: string;
  /** Namespace (`<ns>` or `<ns>.servicebus.windows.net`), signed in with DefaultAzureCredential. */
  namespace?: string;
  queueName?: string;
  topicName?: string;
  subscriptionName?: string;
  /** Longest wait of one receive (ms). Default 5000. */
  maxWaitTimeMs?: number;
  /** Messages asked for per receive call. Default 100. */
  maxMessages?: number;
  /** Stop renewing a message's lock after it was held this long (seconds). Default 3600. */
  maxLockRenewalSeconds?: number;
  /** `deadLetterReason` for poison messages. Default `LakeLogic.PoisonMessage`. */
  deadLetterReason?: string;
  /** Report the backlog (active messages) through the administration API; needs Manage rights. Default true. */
  reportBacklog?: boolean;
  /** Bring your own peek-lock receiver (code only); then no connection option is needed. */
  receiver?: ServiceBusReceiverLike;
}

/** Plain data. `poison` carries the decision to dead-letter instead of complete, with our reason. */
export interface ServiceBusAckToken {
  lockToken: string;
  messageId: string;
  poison?: string;
}

export interface ServiceBusMessageMeta {
  messageId: string;
  sequenceNumber?: string;
  enqueuedTime?: string;
  deliveryCount?: number;
  applicationProperties: Record<string, unknown>;
  contentType?: string;
  subject?: string;
  correlationId?: string;
  sessionId?: string;
}

export const DEFAULT_DEAD_LETTER_REASON = "LakeLogic.PoisonMessage";

export const servicebusSpec: ComponentSpec = {
  type: "servicebus",
  kind: "ack",
  summary:
    "Azure Service Bus queue or topic subscription, peek-lock. A message is completed only after its batch " +
    "committed; locks are renewed while a batch is in flight; a poison message is quarantined, then " +
    "dead-lettered with LakeLogic's reason. A connection string, or DefaultAzureCredential for a namespace.",
  peerDependency: "@azure/service-bus",
  options: {
    connectionString: { type: "string", secret: true, description: "Connection string with Listen rights (`Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…`). Either this or `namespace`." },
    namespace: { type: "string", description: "Namespace, `<name>` or `<name>.servicebus.windows.net`, signed in with `DefaultAzureCredential` (needs `@azure/identity`)." },
    queueName: { type: "string", description: "Queue to receive from. Either this or `topicName` + `subscriptionName`." },
    topicName: { type: "string", description: "Topic, with `subscriptionName`." },
    subscriptionName: { type: "string", description: "Subscription of `topicName`." },
    maxWaitTimeMs: { type: "integer", min: 1, default: 5000, description: "Longest wait of one receive call; a receive waits at most the sink's remaining batch time." },
    maxMessages: { type: "integer", min: 1, max: 5000, default: 100, description: "Messages asked for per receive call." },
    maxLockRenewalSeconds: { type: "integer", min: 1, default: 3600, description: "Stop renewing a message's lock after it was held this long." },
    deadLetterReason: { type: "string", default: DEFAULT_DEAD_LETTER_REASON, description: "`deadLetterReason` of poison messages; the description says why the body could not be decoded." },
    reportBacklog: { type: "boolean", default: true, description: "Report the active message count as lag through the administration API (needs Manage rights; turned off after the first refusal)." },
  },
  check: (o) => {
    if (o.connectionString !== undefined && o.namespace !== undefined) {
      return { option: "connectionString", message: "give either connectionString or namespace, not both" };
    }
    const queue = o.queueName !== undefined;
    const topic = o.topicName !== undefined || o.subscriptionName !== undefined;
    if (queue && topic) return { option: "queueName", message: "give either queueName or topicName + subscriptionName, not both" };
    if (!queue && !topic) return { option: "queueName", message: "is required (or topicName + subscriptionName)" };
    if (topic && (o.topicName === undefined || o.subscriptionName === undefined)) {
      return { option: o.topicName === undefined ? "topicName" : "subscriptionName", message: "topicName and subscriptionName go together" };
    }
    return undefined;
  },
};

interface Held {
  message: ServiceBusReceivedMessage;
  enqueuedAt: number | undefined;
}

/**
 * Azure Service Bus (peek-lock) as an ack source (StreamSink, Temporal) and a connector (`stream()`).
 *
 * `ack` — which the sink calls only after the commit (I8) — completes a message, or, for a
 * poison message (its token says so), dead-letters it with `deadLetterReason` and the decode
 * error as description. Locks are renewed whenever less than half is left while a batch is in
 * flight (the SDK's own auto-renewal is off, so one mechanism does it). A lost lock at completion
 * is not an error: the message is delivered again and a merge target absorbs it.
 */
export class ServiceBusConnector implements AckSource<ServiceBusAckToken>, StreamConnector {
  readonly kind = "ack" as const;
  readonly description: string;
  private readonly o: Omit<ServiceBusConnectorOptions, "onWarning" | "receiver"> & {
    maxWaitTimeMs: number;
    maxMessages: number;
    maxLockRenewalSeconds: number;
    deadLetterReason: string;
    reportBacklog: boolean;
  };
  private readonly warn: (message: string) => void;
  private readonly ownReceiver: ServiceBusReceiverLike | undefined;
  private opened: Promise<{ receiver: ServiceBusReceiverLike; client?: ServiceBusClient; admin?: ServiceBusAdministrationClient }> | undefined;
  private readonly held = new Map<string, Held>();
  private readonly leases: LeaseKeeper<string, ServiceBusReceivedMessage>;
  private lastOldestEnqueued: number | undefined;
  private backlogOff = false;
  private readonly streaming = new SingleStream();
  private closed = false;

  constructor(options: ServiceBusConnectorOptions) {
    if (typeof options !== "object" || options === null) {
      throw new ConfigError("ServiceBusConnector", "expected options { connectionString | namespace, queueName | topicName + subscriptionName }");
    }
    const { onPoison, onWarning, receiver, ...rest } = options;
    const o = parseOptions(servicebusSpec, rest as Record<string, unknown>) as unknown as ServiceBusConnectorOptions;
    if (!receiver && o.connectionString === undefined && o.namespace === undefined) {
      throw new ConfigError("source servicebus: connectionString", "is required (or namespace, signed in with DefaultAzureCredential)");
    }
    this.o = {
      ...o,
      maxWaitTimeMs: o.maxWaitTimeMs!,
      maxMessages: o.maxMessages!,
      maxLockRenewalSeconds: o.maxLockRenewalSeconds!,
      deadLetterReason: o.deadLetterReason!,
      reportBacklog: o.reportBacklog!,
      onPoison,
    };
    this.ownReceiver = receiver;
    this.warn = onWarning ?? defaultWarn("LAKELOGIC_SERVICEBUS");
    const entity = o.queueName ?? `${o.topicName}/subscriptions/${o.subscriptionName}`;
    this.description = `servicebus ${this.namespaceHost() ?? "<receiver>"}/${entity}`;
    this.leases = new LeaseKeeper({
      maxHoldMs: this.o.maxLockRenewalSeconds * 1000,
      renew: (leases) => this.renew(leases),
      onError: (err) => this.warn(`${this.description}: lock renewal failed: ${errorText(err)}`),
    });
  }

  async receive(max: number, waitMs: number, signal: AbortSignal): Promise<Array<ReceivedRecord<ServiceBusAckToken>>> {
    if (this.closed) throw new LakeLogicError("CLOSED", `${this.description}: closed`);
    if (signal.aborted || max <= 0) return [];
    const { receiver } = await this.open();
    let messages: ServiceBusReceivedMessage[];
    try {
      messages = await receiver.receiveMessages(Math.min(max, this.o.maxMessages), {
        maxWaitTimeInMs: Math.max(1, Math.min(waitMs, this.o.maxWaitTimeMs)),
        abortSignal: signal,
      });
    } catch (err) {
      if (signal.aborted) return [];
      throw this.receiveError(err);
    }
    const now = Date.now();
    let oldest: number | undefined;
    const records: Array<ReceivedRecord<ServiceBusAckToken>> = [];
    for (const m of messages) {
      if (!m.lockToken) continue; // not peek-lock: nothing to settle
      const enqueuedAt = m.enqueuedTimeUtc?.getTime();
      if (enqueuedAt !== undefined && (oldest === undefined || enqueuedAt < oldest)) oldest = enqueuedAt;
      const lockedUntil = m.lockedUntilUtc?.getTime();
      const leaseMs = lockedUntil !== undefined && lockedUntil > now ? lockedUntil - now : 60_000;
      this.held.set(m.lockToken, { message: m, enqueuedAt });
      this.leases.hold(m.lockToken, m, leaseMs, lockedUntil ?? now + leaseMs);
      records.push(this.toRecord(m));
    }
    if (oldest !== undefined) this.lastOldestEnqueued = oldest;
    return records;
  }

  /** Complete — or dead-letter a poison message — after the commit (I8). */
  async ack(tokens: ServiceBusAckToken[]): Promise<void> {
    if (tokens.length === 0) return;
    const { receiver } = await this.open();
    const failures: string[] = [];
    await mapLimit(tokens, 16, async (t) => {
      const h = this.held.get(t.lockToken);
      if (!h) return;
      try {
        if (t.poison !== undefined) {
          await receiver.deadLetterMessage(h.message, {
            deadLetterReason: this.o.deadLetterReason,
            deadLetterErrorDescription: t.poison.slice(0, 1024),
          });
        } else {
          await receiver.completeMessage(h.message);
        }
      } catch (err) {
        if (isLockLost(err)) {
          this.warn(`${this.description}: lock of message ${t.messageId} was lost before it could be settled; it will be delivered again`);
        } else {
          failures.push(`${t.messageId}: ${errorText(err)}`);
        }
      } finally {
        this.held.delete(t.lockToken);
        this.leases.release(t.lockToken);
      }
    });
    if (failures.length > 0) {
      throw new QueueAckError(this.description, "completeMessage", `${failures.length} messages not settled (${failures.slice(0, 3).join("; ")})`);
    }
  }

  /** Abandon: the messages are available again at once (their delivery count goes up). */
  async nack(tokens: ServiceBusAckToken[]): Promise<void> {
    if (tokens.length === 0) return;
    const { receiver } = await this.open();
    await mapLimit(tokens, 16, async (t) => {
      const h = this.held.get(t.lockToken);
      this.held.delete(t.lockToken);
      this.leases.release(t.lockToken);
      if (h) await receiver.abandonMessage(h.message).catch(() => undefined);
    });
  }

  /** Renew the locks of these messages if less than half of a lock is left. */
  async extend(tokens: ServiceBusAckToken[]): Promise<void> {
    await this.leases.renewDue(tokens.map((t) => t.lockToken));
  }

  /**
   * `oldestAgeMs` from the enqueued time of the oldest message held (or last received);
   * `records`: active messages, from the administration API when allowed.
   */
  async lag(): Promise<SourceLag | undefined> {
    const lag: SourceLag = {};
    let oldest: number | undefined;
    for (const h of this.held.values()) {
      if (h.enqueuedAt !== undefined && (oldest === undefined || h.enqueuedAt < oldest)) oldest = h.enqueuedAt;
    }
    oldest ??= this.lastOldestEnqueued;
    if (oldest !== undefined) lag.oldestAgeMs = Math.max(0, Date.now() - oldest);
    const { admin } = await this.open();
    if (admin && this.o.reportBacklog && !this.backlogOff) {
      try {
        const props = this.o.queueName
          ? await admin.getQueueRuntimeProperties(this.o.queueName)
          : await admin.getSubscriptionRuntimeProperties(this.o.topicName!, this.o.subscriptionName!);
        lag.records = props.activeMessageCount;
      } catch (err) {
        this.backlogOff = true;
        this.warn(`${this.description}: backlog not reported (the administration API refused: ${errorText(err)}); set reportBacklog: false to skip it`);
      }
    }
    return lag.oldestAgeMs === undefined && lag.records === undefined ? undefined : lag;
  }

  stream(): AsyncGenerator<unknown> {
    return this.streaming.run(this, {
      max: this.o.maxMessages,
      waitMs: this.o.maxWaitTimeMs,
      onPoison: this.o.onPoison,
      warn: this.warn,
      description: this.description,
    });
  }

  /** Abandon what is still held; close the receiver (and the client, when the connector made it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.streaming.abort();
    const opened = await this.opened?.catch(() => undefined);
    if (opened) {
      const held = [...this.held.values()];
      await mapLimit(held, 16, (h) => opened.receiver.abandonMessage(h.message).catch(() => undefined));
    }
    this.closed = true;
    this.held.clear();
    this.leases.close();
    if (opened && !this.ownReceiver) {
      await opened.receiver.close().catch(() => undefined);
      await opened.client?.close().catch(() => undefined);
    }
  }

  private toRecord(m: ServiceBusReceivedMessage): ReceivedRecord<ServiceBusAckToken> {
    const messageId = m.messageId === undefined ? "" : Buffer.isBuffer(m.messageId) ? m.messageId.toString("hex") : String(m.messageId);
    const sequenceNumber = m.sequenceNumber?.toString();
    const position = sequenceNumber !== undefined ? { messageId, sequenceNumber } : { messageId };
    const meta: ServiceBusMessageMeta = { messageId, applicationProperties: { ...(m.applicationProperties ?? {}) } };
    if (sequenceNumber !== undefined) meta.sequenceNumber = sequenceNumber;
    if (m.enqueuedTimeUtc) meta.enqueuedTime = m.enqueuedTimeUtc.toISOString();
    if (m.deliveryCount !== undefined) meta.deliveryCount = m.deliveryCount;
    if (m.contentType) meta.contentType = m.contentType;
    if (m.subject) meta.subject = m.subject;
    if (m.correlationId !== undefined) meta.correlationId = String(m.correlationId);
    if (m.sessionId) meta.sessionId = m.sessionId;
    const { decoded, raw, bytes } = decodeServiceBusBody(m.body);
    const token: ServiceBusAckToken = { lockToken: m.lockToken!, messageId };
    const produced = m.enqueuedTimeUtc ? { producedAt: m.enqueuedTimeUtc.getTime() } : {};
    if ("error" in decoded) {
      token.poison = decoded.error;
      return { value: undefined, ...(raw !== undefined ? { raw } : {}), decodeError: decoded.error, position, bytes, meta: { ...meta }, ackToken: token, ...produced };
    }
    return { value: decoded.value, position, bytes, meta: { ...meta }, ackToken: token, ...produced };
  }

  private async renew(leases: Array<Lease<ServiceBusReceivedMessage>>): Promise<Array<number | undefined>> {
    const { receiver } = await this.open();
    return mapLimit(leases, 16, async (l) => {
      try {
        const until = await receiver.renewMessageLock(l.message);
        return until.getTime();
      } catch (err) {
        if (isLockLost(err)) {
          this.warn(`${this.description}: lock of a message held since ${new Date(l.receivedAt).toISOString()} is lost; it will be delivered again`);
          return Number.POSITIVE_INFINITY; // stop renewing it
        }
        throw err;
      }
    });
  }

  private namespaceHost(): string | undefined {
    if (this.o.connectionString) return /Endpoint=sb:\/\/([^/;]+)/i.exec(this.o.connectionString)?.[1];
    if (!this.o.namespace) return undefined;
    const ns = this.o.namespace.replace(/^sb:\/\//, "").replace(/\/+$/, "");
    return ns.includes(".") ? ns : `${ns}.servicebus.windows.net`;
  }

  private open(): Promise<{ receiver: ServiceBusReceiverLike; client?: ServiceBusClient; admin?: ServiceBusAdministrationClient }> {
    this.opened ??= (async () => {
      if (this.ownReceiver) return { receiver: this.ownReceiver };
      const sdk = await requirePeer<ServiceBusModule>("@azure/service-bus", "The Service Bus connector");
      let client: ServiceBusClient;
      let admin: ServiceBusAdministrationClient | undefined;
      if (this.o.connectionString) {
        client = new sdk.ServiceBusClient(this.o.connectionString);
        if (this.o.reportBacklog) admin = new sdk.ServiceBusAdministrationClient(this.o.connectionString);
      } else {
        const identity = await requirePeer<IdentityModule>("@azure/identity", "The Service Bus connector with a namespace (DefaultAzureCredential)");
        const credential = new identity.DefaultAzureCredential();
        client = new sdk.ServiceBusClient(this.namespaceHost()!, credential);
        if (this.o.reportBacklog) admin = new sdk.ServiceBusAdministrationClient(this.namespaceHost()!, credential);
      }
      // Lock renewal is ours (LeaseKeeper): the SDK's auto-renewal is off so only one mechanism runs.
      const options = { receiveMode: "peekLock" as const, maxAutoLockRenewalDurationInMs: 0 };
      const receiver = this.o.queueName
        ? client.createReceiver(this.o.queueName, options)
        : client.createReceiver(this.o.topicName!, this.o.subscriptionName!, options);
      return { receiver, client, ...(admin ? { admin } : {}) };
    })();
    this.opened.catch(() => (this.opened = undefined));
    return this.opened;
  }

  private receiveError(err: unknown): Error {
    const code = (err as { code?: string }).code;
    const text = errorText(err);
    if (code === "MessagingEntityNotFound") {
      return new QueueReceiveError(this.description, `the queue, topic or subscription does not exist; check queueName / topicName / subscriptionName (${text})`, { cause: err });
    }
    if (code === "UnauthorizedAccess" || /CredentialUnavailable|AuthenticationRequired|Unauthorized/i.test(text)) {
      return new QueueReceiveError(
        this.description,
        `not authorized: the connection string needs Listen rights, or the DefaultAzureCredential identity the "Azure Service Bus Data Receiver" role (${text})`,
        { cause: err },
      );
    }
    return new QueueReceiveError(this.description, text, { cause: err });
  }
}

/**
 * A Service Bus body as a record. Bodies sent as bytes (most SDKs, other languages) and strings
 * are parsed as UTF-8 JSON; a body sent as an AMQP value (a JS object from this SDK) is the record.
 */
export function decodeServiceBusBody(body: unknown): { decoded: DecodedBody; raw?: string | Uint8Array; bytes: number } {
  if (body instanceof Uint8Array) {
    const raw = isUtf8(body) ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8") : new Uint8Array(body);
    return { decoded: decodeBody(body), raw, bytes: body.byteLength };
  }
  if (typeof body === "string") return { decoded: decodeBody(body), raw: body, bytes: body.length };
  if (body === undefined || body === null) return { decoded: { error: "message has no body" }, bytes: 0 };
  let bytes = 0;
  try {
    bytes = JSON.stringify(body)?.length ?? 0;
  } catch {
    return { decoded: { error: "body is an AMQP value that is not JSON (it has cycles)" }, bytes: 0 };
  }
  return { decoded: { value: wrapJson(body) }, bytes };
}

function isLockLost(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "MessageLockLost" || code === "SessionLockLost" || code === "MessageNotFound";
}

/** `{ "type": "servicebus", "connectionString" | "namespace", "queueName" | "topicName" + "subscriptionName" }`. */
export const servicebusSourceFactory: SourceFactory = {
  spec: servicebusSpec,
  create: (o) => new ServiceBusConnector(o as unknown as ServiceBusConnectorOptions),
};

