import type { Message as SqsMessage, MessageAttributeValue, SQSClient } from "@aws-sdk/client-sqs";
import { ConfigError } from "../../errors.js";
import type { ReceivedRecord } from "../core/types.js";
import { redactUrl, secretsOfUrl } from "../../util/redact.js";
import { QueueAckError, QueueReceiveError, QueueUnreachableError, isNetworkError, chunks, mapLimit, queueRecord, type Lease } from "../core/queue.js";
import { LeasedQueueConnector, queueOptions, type Taken } from "../core/queue-connector.js";
import { requirePeer, type OptionsOf } from "../core/spec.js";
import { decoderFrom, type PayloadDecoder } from "../core/decoders/index.js";
import { sqsSpec, type SQSConnectorOptions } from "./spec.js";

type SqsModule = typeof import("@aws-sdk/client-sqs");

/** What `ack` needs: plain data, so a batch's tokens can be kept anywhere. */
export interface SQSAckToken {
  receiptHandle: string;
  messageId: string;
  /** The body could not be decoded; it was quarantined and is deleted like any other. */
  poison: boolean;
}

export interface SQSPosition {
  messageId: string;
  /** FIFO queues: the message's sequence number. */
  sequenceNumber?: string;
}

/** Transport details kept with every record (`record.meta`). */
export interface SQSMessageMeta {
  messageId: string;
  receiveCount: number;
  sentAt?: string;
  groupId?: string;
  sequenceNumber?: string;
  deduplicationId?: string;
  /** Message attributes: String and Number as text, Binary as bytes. */
  attributes: Record<string, string | Uint8Array | string[] | Uint8Array[]>;
  /** Set when `unwrapSns` found an SNS envelope. */
  sns?: { messageId?: string; topicArn?: string; subject?: string; timestamp?: string; attributes: Record<string, string> };
}

interface Held {
  receiptHandle: string;
  messageId: string;
  /** SentTimestamp. */
  producedAt: number | undefined;
}

/**
 * Amazon SQS as an ack source (StreamSink, Temporal) and a connector (`stream()`).
 *
 * Receives with long polling, several ReceiveMessage calls in parallel when a batch needs more
 * than 10 messages. Nothing is deleted until `ack`, which the sink calls only after the batch
 * committed (I8): a crash before that leaves the messages in the queue, and they come back when
 * their visibility timeout ends. While a batch is in flight its visibility is extended whenever
 * less than half of it is left, so a slow write does not hand the batch to another consumer.
 */
export class SQSConnector extends LeasedQueueConnector<SQSAckToken, Held, Held> {
  readonly isFifo: boolean;
  private readonly o: OptionsOf<typeof sqsSpec>;
  private readonly decoder: PayloadDecoder;
  private client: Promise<{ sdk: SqsModule; client: SQSClient }> | undefined;

  constructor(options: SQSConnectorOptions) {
    const { options: o, hooks } = queueOptions(
      sqsSpec,
      options,
      "SQSConnector",
      "{ queueUrl, region?, maxMessages?, waitTimeSeconds?, visibilityTimeout? }",
    );
    super({
      description: `sqs ${redactUrl(o.queueUrl)}`,
      endpoint: redactUrl(o.endpoint ?? new URL(o.queueUrl).origin).replace(/\/$/, ""),
      retry: o.retry,
      secrets: sqsSecrets(o.queueUrl, o.endpoint),
      hooks,
      warningCode: "LAKELOGIC_SQS",
      streamBatch: { max: o.maxMessages * o.concurrency, waitMs: o.waitTimeSeconds * 1000 },
      leases: { maxHoldMs: o.maxExtensionSeconds * 1000, renewFailed: "could not extend visibility" },
    });
    this.o = {
      ...o,
      region: o.region ?? regionOf(o.queueUrl),
      // A queue URL on another host than AWS (ElasticMQ, LocalStack) is its own endpoint; saying
      // so spares the SDK's "QueueUrl differs from the resolved endpoint" warning on every call.
      endpoint: o.endpoint ?? (/\.amazonaws\.com(\.cn)?(:\d+)?\//.test(o.queueUrl) ? undefined : new URL(o.queueUrl).origin),
    };
    this.isFifo = o.queueUrl.endsWith(".fifo");
    this.decoder = decoderFrom(o, "source sqs");
  }

  protected async take(max: number, waitMs: number, signal: AbortSignal): Promise<Array<Taken<SQSAckToken, Held>>> {
    if (signal.aborted || max <= 0) return [];
    const { sdk, client } = await this.sdk();
    // Long polling in whole seconds: at most the caller's wait (rounded up), at most the cap.
    const wait = Math.min(this.o.waitTimeSeconds, Math.max(0, Math.ceil(waitMs / 1000)));
    const sizes: number[] = [];
    for (let left = max; left > 0 && sizes.length < this.o.concurrency; left -= this.o.maxMessages) {
      sizes.push(Math.min(left, this.o.maxMessages));
    }
    // The requests are not aborted by a stop: SQS makes the messages of a long poll invisible
    // as it answers, so a request cut off in flight would hide them for the whole visibility
    // timeout. A stop waits for the answers (at most `wait` seconds), and what they bring is
    // handed back or written like any other message.
    const settled = await Promise.allSettled(
      sizes.map(async (n) => {
        const command = new sdk.ReceiveMessageCommand({
          QueueUrl: this.o.queueUrl,
          MaxNumberOfMessages: n,
          WaitTimeSeconds: wait,
          VisibilityTimeout: this.o.visibilityTimeout,
          MessageAttributeNames: ["All"],
          MessageSystemAttributeNames: ["All"],
        });
        const out = await this.reach("ReceiveMessage", () => client.send(command), signal);
        return out.Messages ?? [];
      }),
    );
    const taken: Array<Taken<SQSAckToken, Held>> = [];
    const leaseMs = this.o.visibilityTimeout * 1000;
    for (const result of settled) {
      if (result.status === "rejected") continue;
      for (const m of result.value) {
        if (!m.ReceiptHandle || !m.MessageId) continue;
        const held: Held = { receiptHandle: m.ReceiptHandle, messageId: m.MessageId, producedAt: numberOr(m.Attributes?.SentTimestamp) };
        this.leases.hold(m.ReceiptHandle, held, leaseMs);
        taken.push({ key: m.ReceiptHandle, held, record: this.toRecord(m) });
      }
    }
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed && !signal.aborted) {
      // The other calls' messages go back at once rather than wait out their visibility.
      await this.nack(taken.map((t) => t.record.ackToken));
      const err: unknown = failed.reason;
      throw err instanceof QueueUnreachableError ? err : this.receiveError(err);
    }
    return taken;
  }

  /** DeleteMessageBatch — called only after the batch committed (I8). */
  async ack(tokens: SQSAckToken[]): Promise<void> {
    if (tokens.length === 0) return;
    const { sdk, client } = await this.sdk();
    const failures: string[] = [];
    await mapLimit(chunks(tokens, 10), 8, async (chunk) => {
      const out = await client
        .send(
          new sdk.DeleteMessageBatchCommand({
            QueueUrl: this.o.queueUrl,
            Entries: chunk.map((t, i) => ({ Id: String(i), ReceiptHandle: t.receiptHandle })),
          }),
        )
        .catch((err: unknown) => {
          throw new QueueAckError(this.description, "DeleteMessageBatch", this.text(err), { cause: this.cause(err) });
        });
      for (const f of out.Failed ?? []) {
        const token = chunk[Number(f.Id)];
        if (!token) continue;
        if (isLostReceipt(f.Code, f.Message)) {
          // The visibility ran out and the message was (or will be) received again: the rows are
          // committed and a merge target absorbs the repeat.
          this.warn(`${this.description}: message ${token.messageId} could not be deleted (${f.Code}: ${f.Message ?? ""}); it will be delivered again`);
        } else {
          failures.push(`${token.messageId}: ${f.Code ?? "error"} ${f.Message ?? ""}`.trim());
        }
      }
    });
    for (const t of tokens) this.forget(t.receiptHandle);
    if (failures.length > 0) {
      throw new QueueAckError(this.description, "DeleteMessageBatch", `${failures.length} messages not deleted (${failures.slice(0, 3).join("; ")})`);
    }
  }

  /** Make the messages visible again at once (visibility timeout 0). */
  async nack(tokens: SQSAckToken[]): Promise<void> {
    if (tokens.length === 0) return;
    for (const t of tokens) this.forget(t.receiptHandle);
    const { sdk, client } = await this.sdk();
    await mapLimit(chunks(tokens, 10), 8, (chunk) =>
      client
        .send(
          new sdk.ChangeMessageVisibilityBatchCommand({
            QueueUrl: this.o.queueUrl,
            Entries: chunk.map((t, i) => ({ Id: String(i), ReceiptHandle: t.receiptHandle, VisibilityTimeout: 0 })),
          }),
        )
        .catch((err: unknown) => this.warn(`${this.description}: could not return messages to the queue: ${this.text(err)}`)),
    );
  }

  /**
   * `records`: messages waiting in the queue (ApproximateNumberOfMessages; one GetQueueAttributes
   * call per committed batch); `oldestAgeMs` from the SentTimestamp of the oldest message held now
   * (or last received). (ApproximateAgeOfOldestMessage itself is a CloudWatch metric, not a queue
   * attribute.)
   */
  protected override async backlog(): Promise<number | undefined> {
    const { sdk, client } = await this.sdk();
    const out = await client.send(
      new sdk.GetQueueAttributesCommand({ QueueUrl: this.o.queueUrl, AttributeNames: ["ApproximateNumberOfMessages"] }),
    );
    return numberOr(out.Attributes?.ApproximateNumberOfMessages);
  }

  /** What is still held becomes visible again (visibility 0). */
  protected async giveBack(): Promise<void> {
    const held = [...this.held.values()].map((h) => ({ receiptHandle: h.receiptHandle, messageId: h.messageId, poison: false }));
    if (held.length > 0 && this.client) await this.nack(held).catch(() => undefined);
  }

  protected override async disconnect(): Promise<void> {
    const c = await this.client?.catch(() => undefined);
    c?.client.destroy();
  }

  /** Network failures, and a service that stayed in error through the SDK's own retries (5xx). */
  protected override unreachable(err: unknown): boolean {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    return isNetworkError(err) || (status !== undefined && status >= 500);
  }

  protected keyOf(token: SQSAckToken): string {
    return token.receiptHandle;
  }

  private toRecord(m: SqsMessage): ReceivedRecord<SQSAckToken> {
    const body = m.Body ?? "";
    const messageId = m.MessageId!;
    const sequenceNumber = m.Attributes?.SequenceNumber;
    const position: SQSPosition = sequenceNumber ? { messageId, sequenceNumber } : { messageId };
    const meta: SQSMessageMeta = {
      messageId,
      receiveCount: numberOr(m.Attributes?.ApproximateReceiveCount) ?? 1,
      attributes: attributesOf(m.MessageAttributes),
    };
    const sentAt = numberOr(m.Attributes?.SentTimestamp);
    if (sentAt !== undefined) meta.sentAt = new Date(sentAt).toISOString();
    if (m.Attributes?.MessageGroupId) meta.groupId = m.Attributes.MessageGroupId;
    if (sequenceNumber) meta.sequenceNumber = sequenceNumber;
    if (m.Attributes?.MessageDeduplicationId) meta.deduplicationId = m.Attributes.MessageDeduplicationId;

    let payload = body;
    if (this.o.unwrapSns) {
      const envelope = snsEnvelope(body);
      if (envelope) {
        payload = envelope.message;
        meta.sns = envelope.meta;
      }
    }
    const decoded = this.decoder.decode(payload);
    const token: SQSAckToken = { receiptHandle: m.ReceiptHandle!, messageId, poison: "error" in decoded };
    return queueRecord(decoded, { raw: body, position, bytes: body.length, meta, ackToken: token, producedAt: sentAt });
  }

  protected async renew(leases: Array<Lease<Held>>): Promise<Array<number | undefined>> {
    const { sdk, client } = await this.sdk();
    const expiries: Array<number | undefined> = leases.map(() => undefined);
    const indexed = leases.map((l, i) => ({ l, i }));
    await mapLimit(chunks(indexed, 10), 8, async (chunk) => {
      const out = await client.send(
        new sdk.ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.o.queueUrl,
          Entries: chunk.map(({ l }, j) => ({ Id: String(j), ReceiptHandle: l.message.receiptHandle, VisibilityTimeout: this.o.visibilityTimeout })),
        }),
      );
      const at = Date.now() + this.o.visibilityTimeout * 1000;
      for (const { i } of chunk) expiries[i] = at;
      for (const f of out.Failed ?? []) {
        const entry = chunk[Number(f.Id)];
        if (!entry) continue;
        // The lease is gone: stop renewing it; the message comes back and is merged.
        expiries[entry.i] = Number.POSITIVE_INFINITY;
        this.warn(`${this.description}: visibility of ${entry.l.message.messageId} not extended (${f.Code}: ${f.Message ?? ""})`);
      }
    });
    return expiries;
  }

  private sdk(): Promise<{ sdk: SqsModule; client: SQSClient }> {
    this.client ??= (async () => {
      const sdk = await requirePeer<SqsModule>("@aws-sdk/client-sqs", "The SQS connector");
      // Credentials: the AWS default chain (env, shared config/SSO, web identity, container, instance).
      const client = new sdk.SQSClient({
        ...(this.o.region ? { region: this.o.region } : {}),
        ...(this.o.endpoint ? { endpoint: this.o.endpoint } : {}),
        maxAttempts: 5,
      });
      return { sdk, client };
    })();
    this.client.catch(() => (this.client = undefined));
    return this.client;
  }

  private receiveError(err: unknown): Error {
    const e = err as { name?: string; message?: string; Code?: string };
    const name = e.name ?? "";
    const text = this.text(err);
    const cause = this.cause(err);
    if (/Region is missing/i.test(text)) {
      return new ConfigError("region", `${this.description}: no AWS region; set the region option or AWS_REGION`, { cause });
    }
    if (name === "CredentialsProviderError" || /Could not load credentials/i.test(text)) {
      return new QueueReceiveError(
        this.description,
        `no AWS credentials: the default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, SSO, web identity, container or instance role) found none`,
        { cause },
      );
    }
    if (name === "QueueDoesNotExist" || /NonExistentQueue|does not exist/i.test(text)) {
      return new QueueReceiveError(this.description, `the queue does not exist; check queueUrl (${text})`, { cause });
    }
    if (/AccessDenied|not authorized/i.test(text)) {
      return new QueueReceiveError(this.description, `access denied; the credentials need sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility and sqs:GetQueueAttributes (${text})`, { cause });
    }
    return new QueueReceiveError(this.description, text, { cause });
  }
}

/**
 * What an SQS error must never show: credentials in the queue URL or endpoint, and the AWS
 * secret key and session token of the environment (SDK errors may echo a signed request).
 */
function sqsSecrets(queueUrl: string, endpoint: string | undefined): string[] {
  const out = [...secretsOfUrl(queueUrl), ...(endpoint ? secretsOfUrl(endpoint) : [])];
  for (const name of ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]) {
    const value = process.env[name];
    if (value) out.push(value);
  }
  return out;
}

/** `https://sqs.<region>.amazonaws.com/…` names its region; other hosts do not. */
function regionOf(queueUrl: string): string | undefined {
  const m = /^https?:\/\/sqs[.-]([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\//.exec(queueUrl);
  return m?.[1];
}

function numberOr(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function isLostReceipt(code: string | undefined, message: string | undefined): boolean {
  return /ReceiptHandleIsInvalid|InvalidReceiptHandle/i.test(code ?? "") || /receipt handle/i.test(message ?? "");
}

function attributesOf(attrs: Record<string, MessageAttributeValue> | undefined): SQSMessageMeta["attributes"] {
  const out: SQSMessageMeta["attributes"] = {};
  for (const [name, a] of Object.entries(attrs ?? {})) {
    if (a.StringValue !== undefined) out[name] = a.StringValue;
    else if (a.BinaryValue !== undefined) out[name] = new Uint8Array(a.BinaryValue);
    else if (a.StringListValues?.length) out[name] = a.StringListValues;
    else if (a.BinaryListValues?.length) out[name] = a.BinaryListValues.map((b) => new Uint8Array(b));
  }
  return out;
}

/** An SNS notification as delivered to SQS without raw message delivery. */
function snsEnvelope(body: string): { message: string; meta: NonNullable<SQSMessageMeta["sns"]> } | undefined {
  let env: unknown;
  try {
    env = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof env !== "object" || env === null) return undefined;
  const e = env as Record<string, unknown>;
  if (e.Type !== "Notification" || typeof e.Message !== "string") return undefined;
  const attributes: Record<string, string> = {};
  if (typeof e.MessageAttributes === "object" && e.MessageAttributes !== null) {
    for (const [k, v] of Object.entries(e.MessageAttributes as Record<string, { Value?: unknown }>)) {
      // SNS sends attribute values as strings; anything else is kept as its JSON text.
      if (v && v.Value !== undefined) attributes[k] = typeof v.Value === "string" ? v.Value : JSON.stringify(v.Value);
    }
  }
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const meta: NonNullable<SQSMessageMeta["sns"]> = { attributes };
  if (str(e.MessageId)) meta.messageId = str(e.MessageId)!;
  if (str(e.TopicArn)) meta.topicArn = str(e.TopicArn)!;
  if (str(e.Subject)) meta.subject = str(e.Subject)!;
  if (str(e.Timestamp)) meta.timestamp = str(e.Timestamp)!;
  return { message: e.Message, meta };
}
