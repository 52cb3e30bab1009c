import type { Message as PubSubMessage, PubSub, Subscription } from "@google-cloud/pubsub";
import type { PubSubMessageLike } from "./message.js";
import type { ReceivedRecord } from "../core/types.js";
import { redactUrl } from "../core/errors.js";
import { QueueReceiveError, QueueUnreachableError, isNetworkError, queueRecord } from "../core/queue.js";
import { QueueConnector, queueOptions, type Taken } from "../core/queue-connector.js";
import { requirePeer, type OptionsOf } from "../core/spec.js";
import { decoderFrom, prepareAll, rawPayload, type PayloadDecoder } from "../core/decoders/index.js";
import { pubsubSpec, type PubSubConnectorOptions } from "./spec.js";

type PubSubModule = typeof import("@google-cloud/pubsub");

/** Plain data: which delivery of which message to acknowledge. */
export interface PubSubAckToken {
  ackId: string;
  messageId: string;
  poison: boolean;
}

export interface PubSubMessageMeta {
  messageId: string;
  publishTime: string;
  attributes: Record<string, string>;
  orderingKey?: string;
  /** Set when the subscription has a dead-letter policy. */
  deliveryAttempt?: number;
}

interface Held {
  message: PubSubMessageLike;
  /** The publish time. */
  producedAt: number;
}

/**
 * Google Cloud Pub/Sub as an ack source (StreamSink, Temporal) and a connector (`stream()`).
 *
 * Streaming pull fills a local buffer that flow control bounds (`maxMessages`, `maxBytes` count
 * every message leased: buffered or in the batch being written). A message is acknowledged only
 * by `ack`, which the sink calls after the commit (I8); until then the client's lease manager
 * keeps extending its ack deadline (up to `maxExtensionMinutes`), however long the write takes.
 * With ordering keys the service delivers a key's messages in order and the source hands them
 * over in that order; a nacked or expired message is redelivered with the ones after it.
 *
 * Lag has no `records`: the backlog (`num_undelivered_messages`) is a Cloud Monitoring metric, not
 * part of the Pub/Sub API; `oldestAgeMs` comes from publish times.
 */
export class PubSubConnector extends QueueConnector<PubSubAckToken, Held> {
  private readonly o: OptionsOf<typeof pubsubSpec>;
  private readonly decoder: PayloadDecoder;
  private opened: Promise<{ pubsub: PubSub; subscription: Subscription }> | undefined;
  private readonly buffer: PubSubMessage[] = [];
  private failure: Error | undefined;

  constructor(options: PubSubConnectorOptions) {
    const { options: o, hooks } = queueOptions(pubsubSpec, options, "PubSubConnector", "{ projectId?, subscription, maxMessages? }");
    const projectId = o.projectId ?? /^projects\/([^/]+)\/subscriptions\//.exec(o.subscription)?.[1];
    super({
      description: `pubsub ${o.subscription.includes("/") ? o.subscription : `${projectId ?? "<adc project>"}/${o.subscription}`}`,
      endpoint: shownEndpoint(o.apiEndpoint ?? process.env.PUBSUB_EMULATOR_HOST ?? "pubsub.googleapis.com:443"),
      retry: o.retry,
      hooks,
      warningCode: "LAKELOGIC_PUBSUB",
      streamBatch: { max: Math.min(o.maxMessages, 500), waitMs: 10_000 },
    });
    this.o = { ...o, projectId };
    this.decoder = decoderFrom(o, "source pubsub");
  }

  protected async take(max: number, waitMs: number, signal: AbortSignal): Promise<Array<Taken<PubSubAckToken, Held>>> {
    const { subscription } = await this.open();
    await this.waitFor(() => this.buffer.length > 0 || this.failure !== undefined, waitMs, signal);
    if (this.failure) throw this.failure;
    // A streaming pull that cannot connect looks exactly like an empty subscription, and the
    // client retries it for minutes: nothing is "empty" until the service has answered.
    if (this.buffer.length === 0 && !this.reachable && !signal.aborted && !this.closed) await this.confirm(subscription, signal);
    const batch = this.buffer.splice(0, Math.max(0, max));
    try {
      // Schemas new to the decoder (decoder: avro / protobuf) are fetched before these messages are decoded.
      await prepareAll(this.decoder, batch.map((m) => m.data));
    } catch (err) {
      this.buffer.unshift(...batch); // still leased: the next receive takes them again
      throw err;
    }
    return batch.map((m) => ({
      key: m.ackId,
      held: { message: m, producedAt: m.publishTime.getTime() },
      record: this.toRecord(m),
    }));
  }

  /**
   * Acknowledge — called only after the batch committed (I8). The client sends acks in batches
   * within about 100 ms (and on close); if the process dies in between, the messages come back
   * and a merge target absorbs them. With exactly-once delivery, this waits for the service.
   */
  async ack(tokens: PubSubAckToken[]): Promise<void> {
    const failures: string[] = [];
    await Promise.all(
      tokens.map(async (t) => {
        const h = this.held.get(t.ackId);
        if (!h) return;
        this.forget(t.ackId);
        try {
          await h.message.ackWithResponse();
        } catch (err) {
          // Exactly-once subscriptions refuse an ack whose lease was lost: the message will be
          // delivered again and merged.
          failures.push(`${t.messageId}: ${this.text(err)}`);
        }
      }),
    );
    if (failures.length > 0) {
      this.warn(`${this.description}: ${failures.length} acks were refused, those messages will be delivered again (${failures.slice(0, 3).join("; ")})`);
    }
  }

  /** Redeliver at once (ack deadline 0). */
  async nack(tokens: PubSubAckToken[]): Promise<void> {
    for (const t of tokens) {
      const h = this.held.get(t.ackId);
      if (!h) continue;
      this.forget(t.ackId);
      h.message.nack();
    }
  }

  /** Stop pulling; give back (nack) whatever is still held. */
  protected async giveBack(): Promise<void> {
    const opened = await this.opened?.catch(() => undefined);
    if (!opened) return;
    for (const h of this.held.values()) h.message.nack();
  }

  /** Send pending acks and release the client. */
  protected override async disconnect(): Promise<void> {
    const opened = await this.opened?.catch(() => undefined);
    if (!opened) return;
    this.buffer.length = 0;
    await opened.subscription.close().catch(() => undefined);
    await opened.pubsub.close().catch(() => undefined);
  }

  /** Ask the service about the subscription (bounded retries): an answer proves it is reachable. */
  private async confirm(subscription: Subscription, signal: AbortSignal): Promise<void> {
    try {
      await this.reach(
        "GetSubscription",
        async () => {
          try {
            await subscription.getMetadata({ retry: null, timeout: 20_000 });
          } catch (err) {
            // A subscriber need not be allowed to read the subscription's settings: still an answer.
            if ((err as { code?: number }).code !== GRPC_PERMISSION_DENIED) throw err;
          }
        },
        signal,
      );
    } catch (err) {
      if (signal.aborted || this.closed) return;
      throw err instanceof QueueUnreachableError ? err : this.receiveError(err);
    }
  }

  /** UNAVAILABLE and DEADLINE_EXCEEDED, and network failures the client passes on as they are. */
  protected override unreachable(err: unknown): boolean {
    const code = (err as { code?: unknown }).code;
    return code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED || isNetworkError(err);
  }

  private toRecord(m: PubSubMessage): ReceivedRecord<PubSubAckToken> {
    const publishedAt = m.publishTime.getTime();
    const position = { messageId: m.id };
    const meta: PubSubMessageMeta = { messageId: m.id, publishTime: new Date(publishedAt).toISOString(), attributes: { ...m.attributes } };
    if (m.orderingKey) meta.orderingKey = m.orderingKey;
    if (typeof m.deliveryAttempt === "number" && m.deliveryAttempt > 0) meta.deliveryAttempt = m.deliveryAttempt;
    const data = m.data;
    const decoded = this.decoder.decode(data);
    const token: PubSubAckToken = { ackId: m.ackId, messageId: m.id, poison: "error" in decoded };
    const raw = "error" in decoded ? rawPayload(this.decoder, data) : undefined;
    return queueRecord(decoded, { raw, position, bytes: data.length, meta, ackToken: token, producedAt: publishedAt });
  }

  private open(): Promise<{ pubsub: PubSub; subscription: Subscription }> {
    this.opened ??= (async () => {
      const sdk = await requirePeer<PubSubModule>("@google-cloud/pubsub", "The Pub/Sub connector");
      const PubSubClass = sdk.PubSub ?? (sdk as unknown as { default: PubSubModule }).default.PubSub;
      const Duration = sdk.Duration ?? (sdk as unknown as { default: PubSubModule }).default.Duration;
      // Credentials: Application Default Credentials; the client itself switches to the emulator
      // (no TLS, no credentials) when PUBSUB_EMULATOR_HOST is set.
      const pubsub = new PubSubClass({
        ...(this.o.projectId ? { projectId: this.o.projectId } : {}),
        ...(this.o.apiEndpoint ? { apiEndpoint: this.o.apiEndpoint } : {}),
      });
      const deadline = this.o.ackDeadlineSeconds === undefined ? undefined : Duration.from({ seconds: this.o.ackDeadlineSeconds });
      const subscription = pubsub.subscription(this.o.subscription, {
        flowControl: { maxMessages: this.o.maxMessages, maxBytes: this.o.maxBytes, allowExcessMessages: false },
        maxExtensionTime: Duration.from({ minutes: this.o.maxExtensionMinutes }),
        streamingOptions: { maxStreams: this.o.streams },
        ...(deadline ? { minAckDeadline: deadline, maxAckDeadline: deadline } : {}),
      });
      subscription.on("message", (m: PubSubMessage) => {
        if (this.closed) return m.nack();
        this.reachable = true;
        this.buffer.push(m);
        this.wake();
      });
      // A stream that ended and will be retried (the client's own loop): unconfirmed again.
      subscription.on("debug", (msg: { error?: Error }) => {
        const error = msg.error;
        if (error !== undefined && this.unreachable(error)) this.reachable = false;
      });
      subscription.on("error", (err: unknown) => {
        this.failure = this.receiveError(err);
        this.wake();
      });
      return { pubsub, subscription };
    })();
    return this.opened;
  }

  private receiveError(err: unknown): Error {
    const code = (err as { code?: number }).code;
    const text = this.text(err);
    const cause = this.cause(err);
    // gRPC status codes: 5 NOT_FOUND, 7 PERMISSION_DENIED, 16 UNAUTHENTICATED.
    if (code === 5) return new QueueReceiveError(this.description, `subscription not found; check subscription and projectId (${text})`, { cause });
    if (code === 7) return new QueueReceiveError(this.description, `permission denied; the credentials need roles/pubsub.subscriber on the subscription (${text})`, { cause });
    if (code === 16 || /Could not load the default credentials/i.test(text)) {
      return new QueueReceiveError(
        this.description,
        `no Google credentials: Application Default Credentials found none (set GOOGLE_APPLICATION_CREDENTIALS, run gcloud auth application-default login, or use a workload identity); for the emulator set PUBSUB_EMULATOR_HOST (${text})`,
        { cause },
      );
    }
    return new QueueReceiveError(this.description, text, { cause });
  }
}

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNAVAILABLE = 14;

/** `host:port`, or a URL without credentials and query string. */
function shownEndpoint(endpoint: string): string {
  return endpoint.includes("://") ? redactUrl(endpoint) : endpoint.replace(/^[^@/]*@/, "").replace(/[/?].*$/, "");
}
