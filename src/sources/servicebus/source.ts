import type { ServiceBusAdministrationClient, ServiceBusClient } from "@azure/service-bus";
import type { ServiceBusMessageLike as ServiceBusReceivedMessage, ServiceBusReceiverLike } from "./receiver.js";
import { ConfigError } from "../../errors.js";
import type { ReceivedRecord } from "../core/types.js";
import { QueueAckError, QueueReceiveError, QueueUnreachableError, isNetworkError, mapLimit, queueRecord, wrapJson, type DecodedBody, type Lease } from "../core/queue.js";
import { LeasedQueueConnector, queueOptions, type Taken } from "../core/queue-connector.js";
import { requirePeer, type OptionsOf } from "../core/spec.js";
import { decoderFrom, jsonDecoder, prepareAll, rawPayload, type PayloadDecoder } from "../core/decoders/index.js";
import { servicebusSpec, type ServiceBusConnectorOptions } from "./spec.js";

type ServiceBusModule = typeof import("@azure/service-bus");
type IdentityModule = typeof import("@azure/identity");

export type { ServiceBusMessageLike, ServiceBusReceiverLike } from "./receiver.js";

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

interface Held {
  message: ServiceBusReceivedMessage;
  /** The enqueued time. */
  producedAt: number | undefined;
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
export class ServiceBusConnector extends LeasedQueueConnector<ServiceBusAckToken, Held, ServiceBusReceivedMessage> {
  private readonly o: OptionsOf<typeof servicebusSpec>;
  private readonly decoder: PayloadDecoder;
  private readonly ownReceiver: ServiceBusReceiverLike | undefined;
  private opened: Promise<{ receiver: ServiceBusReceiverLike; client?: ServiceBusClient; admin?: ServiceBusAdministrationClient }> | undefined;
  private backlogOff = false;

  constructor(options: ServiceBusConnectorOptions) {
    const { options: o, hooks } = queueOptions(
      servicebusSpec,
      options,
      "ServiceBusConnector",
      "{ connectionString | namespace, queueName | topicName + subscriptionName }",
      ["receiver"],
    );
    const receiver = options.receiver;
    if (!receiver && o.connectionString === undefined && o.namespace === undefined) {
      throw new ConfigError("source servicebus: connectionString", "is required (or namespace, signed in with DefaultAzureCredential)");
    }
    const entity = o.queueName ?? `${o.topicName}/subscriptions/${o.subscriptionName}`;
    super({
      description: `servicebus ${namespaceHost(o) ?? "<receiver>"}/${entity}`,
      endpoint: namespaceHost(o) ?? "<receiver>",
      retry: o.retry,
      secrets: connectionSecrets(o.connectionString),
      hooks,
      warningCode: "LAKELOGIC_SERVICEBUS",
      streamBatch: { max: o.maxMessages, waitMs: o.maxWaitTimeMs },
      leases: { maxHoldMs: o.maxLockRenewalSeconds * 1000, renewFailed: "lock renewal failed" },
    });
    this.o = o;
    this.ownReceiver = receiver;
    this.decoder = decoderFrom(o, "source servicebus");
  }

  protected async take(max: number, waitMs: number, signal: AbortSignal): Promise<Array<Taken<ServiceBusAckToken, Held>>> {
    if (signal.aborted || max <= 0) return [];
    const { receiver } = await this.open();
    let messages: ServiceBusReceivedMessage[];
    // No abortSignal: a receive cut off by a stop could leave the messages it locked unreturned
    // until their locks expire; the wait is bounded, and close() abandons what it brought.
    const options = { maxWaitTimeInMs: Math.max(1, Math.min(waitMs, this.o.maxWaitTimeMs)) };
    try {
      messages = await this.reach("receiveMessages", () => receiver.receiveMessages(Math.min(max, this.o.maxMessages), options), signal);
    } catch (err) {
      if (signal.aborted) return [];
      throw err instanceof QueueUnreachableError ? err : this.receiveError(err);
    }
    // Schemas new to the decoder (decoder: avro / protobuf) are fetched before these messages are decoded.
    await prepareAll(this.decoder, messages.map((m) => (m.body instanceof Uint8Array ? m.body : undefined)));
    const now = Date.now();
    const taken: Array<Taken<ServiceBusAckToken, Held>> = [];
    for (const m of messages) {
      if (!m.lockToken) continue; // not peek-lock: nothing to settle
      const lockedUntil = m.lockedUntilUtc?.getTime();
      const leaseMs = lockedUntil !== undefined && lockedUntil > now ? lockedUntil - now : 60_000;
      this.leases.hold(m.lockToken, m, leaseMs, lockedUntil ?? now + leaseMs);
      taken.push({ key: m.lockToken, held: { message: m, producedAt: m.enqueuedTimeUtc?.getTime() }, record: this.toRecord(m) });
    }
    return taken;
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
          failures.push(`${t.messageId}: ${this.text(err)}`);
        }
      } finally {
        this.forget(t.lockToken);
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
      this.forget(t.lockToken);
      if (h) await receiver.abandonMessage(h.message).catch(() => undefined);
    });
  }

  /** Active messages, from the administration API when allowed. */
  protected override async backlog(): Promise<number | undefined> {
    const { admin } = await this.open();
    if (!admin || !this.o.reportBacklog || this.backlogOff) return undefined;
    try {
      const props = this.o.queueName
        ? await admin.getQueueRuntimeProperties(this.o.queueName)
        : await admin.getSubscriptionRuntimeProperties(this.o.topicName!, this.o.subscriptionName!);
      return props.activeMessageCount;
    } catch (err) {
      this.backlogOff = true;
      this.warn(`${this.description}: backlog not reported (the administration API refused: ${this.text(err)}); set reportBacklog: false to skip it`);
      return undefined;
    }
  }

  /** Abandon what is still held. */
  protected async giveBack(): Promise<void> {
    const opened = await this.opened?.catch(() => undefined);
    if (!opened) return;
    await mapLimit([...this.held.values()], 16, (h) => opened.receiver.abandonMessage(h.message).catch(() => undefined));
  }

  /** Close the receiver (and the client), when the connector made them. */
  protected override async disconnect(): Promise<void> {
    const opened = await this.opened?.catch(() => undefined);
    if (opened && !this.ownReceiver) {
      await opened.receiver.close().catch(() => undefined);
      await opened.client?.close().catch(() => undefined);
    }
  }

  /**
   * The SDK gives up on a refused connection at once ("GeneralError: ECONNREFUSED") and on a busy
   * or silent service after its own retries: both are retried here.
   */
  protected override unreachable(err: unknown): boolean {
    const code = (err as { code?: unknown }).code;
    return code === "ServiceCommunicationProblem" || code === "ServiceBusy" || code === "ServiceTimeout" || isNetworkError(err);
  }

  protected keyOf(token: ServiceBusAckToken): string {
    return token.lockToken;
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
    const { decoded, raw, bytes } = decodeServiceBusBody(m.body, this.decoder);
    const token: ServiceBusAckToken = { lockToken: m.lockToken!, messageId };
    if ("error" in decoded) token.poison = decoded.error;
    return queueRecord(decoded, { raw, position, bytes, meta, ackToken: token, producedAt: m.enqueuedTimeUtc?.getTime() });
  }

  protected async renew(leases: Array<Lease<ServiceBusReceivedMessage>>): Promise<Array<number | undefined>> {
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

  private open(): Promise<{ receiver: ServiceBusReceiverLike; client?: ServiceBusClient; admin?: ServiceBusAdministrationClient }> {
    this.opened ??= (async () => {
      if (this.ownReceiver) return { receiver: this.ownReceiver };
      const sdk = await requirePeer<ServiceBusModule>("@azure/service-bus", "The Service Bus connector");
      let client: ServiceBusClient;
      let admin: ServiceBusAdministrationClient | undefined;
      // The SDK's own retries (busy, timeouts) follow the `retry` option's pace, not 30 s apart.
      const retryOptions = { mode: sdk.RetryMode.Exponential, maxRetries: 3, retryDelayInMs: this.retry.initialDelayMs, maxRetryDelayInMs: this.retry.maxDelayMs };
      if (this.o.connectionString) {
        client = new sdk.ServiceBusClient(this.o.connectionString, { retryOptions });
        if (this.o.reportBacklog) admin = new sdk.ServiceBusAdministrationClient(this.o.connectionString);
      } else {
        const identity = await requirePeer<IdentityModule>("@azure/identity", "The Service Bus connector with a namespace (DefaultAzureCredential)");
        const credential = new identity.DefaultAzureCredential();
        client = new sdk.ServiceBusClient(namespaceHost(this.o)!, credential, { retryOptions });
        if (this.o.reportBacklog) admin = new sdk.ServiceBusAdministrationClient(namespaceHost(this.o)!, credential);
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
    const text = this.text(err);
    const cause = this.cause(err);
    if (code === "MessagingEntityNotFound") {
      return new QueueReceiveError(this.description, `the queue, topic or subscription does not exist; check queueName / topicName / subscriptionName (${text})`, { cause });
    }
    if (code === "UnauthorizedAccess" || /CredentialUnavailable|AuthenticationRequired|Unauthorized/i.test(text)) {
      return new QueueReceiveError(
        this.description,
        `not authorized: the connection string needs Listen rights, or the DefaultAzureCredential identity the "Azure Service Bus Data Receiver" role (${text})`,
        { cause },
      );
    }
    return new QueueReceiveError(this.description, text, { cause });
  }
}

/**
 * A Service Bus body as a record. Bodies sent as bytes (most SDKs, other languages) and strings
 * are parsed as UTF-8 JSON; a body sent as an AMQP value (a JS object from this SDK) is the record.
 */
export function decodeServiceBusBody(body: unknown, decoder: PayloadDecoder = jsonDecoder): { decoded: DecodedBody; raw?: string | Uint8Array; bytes: number } {
  if (body instanceof Uint8Array) {
    const raw = rawPayload(decoder, body);
    return { decoded: decoder.decode(body), raw, bytes: body.byteLength };
  }
  if (typeof body === "string") return { decoded: decoder.decode(body), raw: body, bytes: body.length };
  if (body === undefined || body === null) return { decoded: { error: "message has no body" }, bytes: 0 };
  let bytes = 0;
  try {
    bytes = JSON.stringify(body)?.length ?? 0;
  } catch {
    return { decoded: { error: "body is an AMQP value that is not JSON (it has cycles)" }, bytes: 0 };
  }
  if (decoder.name !== "json") return { decoded: { error: `body is an AMQP value, not bytes: decoder ${decoder.name} reads bytes` }, bytes };
  return { decoded: { value: wrapJson(body) }, bytes };
}

/** The namespace's host, from the connection string or the namespace option. */
/** What must never be shown of a connection string: the whole of it, and its key or signature. */
function connectionSecrets(connectionString: string | undefined): string[] {
  if (!connectionString) return [];
  const out = [connectionString];
  for (const m of connectionString.matchAll(/(?:^|;)\s*SharedAccess(?:Key|Signature)\s*=\s*([^;]+)/gi)) out.push(m[1]!.trim());
  return out;
}

function namespaceHost(o: { connectionString?: string; namespace?: string }): string | undefined {
  if (o.connectionString) return /Endpoint=sb:\/\/([^/;]+)/i.exec(o.connectionString)?.[1];
  if (!o.namespace) return undefined;
  const ns = o.namespace.replace(/^sb:\/\//, "").replace(/\/+$/, "");
  return ns.includes(".") ? ns : `${ns}.servicebus.windows.net`;
}

function isLockLost(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "MessageLockLost" || code === "SessionLockLost" || code === "MessageNotFound";
}
