import type { CloudEvent, EventGridReceiverClient, FailedLockToken, ReceiveDetails } from "@azure/eventgrid-namespaces";
import type { EventGridDetailLike } from "./event.js";
import type { ReceivedRecord } from "../core/types.js";
import { hasLongDigitRun, parseJsonRecord } from "../../util/exact-json.js";
import { secretsOfUrl } from "../../util/redact.js";
import { QueueAckError, QueueReceiveError, QueueUnreachableError, chunks, decodeBody, isNetworkError, mapLimit, queueRecord, wrapJson, type DecodedBody, type Lease } from "../core/queue.js";
import { LeasedQueueConnector, queueOptions, type Taken } from "../core/queue-connector.js";
import { requirePeer, type OptionsOf } from "../core/spec.js";
import { eventgridSpec, type EventGridConnectorOptions } from "./spec.js";

type EventGridModule = typeof import("@azure/eventgrid-namespaces");
type IdentityModule = typeof import("@azure/identity");

/** Plain data: the lock token, and whether the event is poison (then it is rejected, not acknowledged). */
export interface EventGridAckToken {
  lockToken: string;
  eventId: string;
  poison?: string;
}

export interface EventGridEventMeta {
  id: string;
  source: string;
  type: string;
  subject?: string;
  time?: string;
  dataContentType?: string;
  deliveryCount: number;
}

interface Held {
  detail: EventGridDetailLike;
  /** The CloudEvent's `time`. */
  producedAt: number | undefined;
}

/**
 * Azure Event Grid pull delivery as an ack source (StreamSink, Temporal) and a connector (`stream()`).
 *
 * One receive call (a long poll of `maxWaitTimeSeconds`) is in flight at a time and only while
 * nothing is buffered, so at most `maxEvents` events are held before the sink takes them (I5).
 * Received events are locked; their locks are renewed when half is left, until `ack` — called by
 * the sink only after the commit (I8) — acknowledges them by lock token, or rejects the poison
 * ones (the service dead-letters them when the subscription has a dead-letter destination).
 * `nack` releases events for immediate redelivery. A lock token the service no longer knows
 * (the lock expired) is reported, not fatal: that event is delivered again and merged.
 */
export class EventGridConnector extends LeasedQueueConnector<EventGridAckToken, Held, string> {
  private readonly o: OptionsOf<typeof eventgridSpec>;
  private client: Promise<EventGridReceiverClient> | undefined;
  private readonly buffer: Array<ReceiveDetails<unknown>> = [];
  private poll: Promise<void> | undefined;
  private pollAbort: AbortController | undefined;
  private failure: Error | undefined;

  constructor(options: EventGridConnectorOptions) {
    const { options: o, hooks } = queueOptions(
      eventgridSpec,
      options,
      "EventGridConnector",
      "{ endpoint, topicName, subscriptionName, maxEvents?, maxWaitTimeSeconds? }",
    );
    const endpoint = o.endpoint.replace(/\/+$/, "");
    // Shown without credentials or query string (a SAS token may travel there).
    const url = new URL(endpoint);
    const hostPath = `${url.host}${url.pathname.replace(/\/+$/, "")}`;
    super({
      description: `eventgrid ${hostPath}/${o.topicName}/${o.subscriptionName}`,
      endpoint: `${url.protocol}//${hostPath}`,
      retry: o.retry,
      secrets: [...secretsOfUrl(endpoint), ...(o.accessKey ? [o.accessKey] : [])],
      hooks,
      warningCode: "LAKELOGIC_EVENTGRID",
      streamBatch: { max: o.maxEvents, waitMs: o.maxWaitTimeSeconds * 1000 },
      leases: { maxHoldMs: o.maxLockRenewalSeconds * 1000, renewFailed: "lock renewal failed" },
    });
    this.o = { ...o, endpoint };
  }

  protected async take(max: number, waitMs: number, signal: AbortSignal): Promise<Array<Taken<EventGridAckToken, Held>>> {
    if (max <= 0) return [];
    const poke = () => void this.startPoll();
    await this.waitFor(() => this.buffer.length > 0 || this.failure !== undefined, waitMs, signal, poke);
    // Nothing yet is "empty" only once the service has answered; until then the poll goes on,
    // and ends with an answer or, after its retries, an error.
    if (this.buffer.length === 0 && this.failure === undefined && !this.reachable) {
      await this.waitFor(() => this.buffer.length > 0 || this.failure !== undefined || this.reachable, undefined, signal, poke);
    }
    if (this.failure) {
      const err = this.failure;
      this.failure = undefined;
      throw err;
    }
    return this.buffer.splice(0, max).map((d) => ({
      key: d.brokerProperties.lockToken,
      held: { detail: d, producedAt: d.event.time?.getTime() },
      record: this.toRecord(d),
    }));
  }

  /** Acknowledge (or, for poison, reject) by lock token — after the commit (I8). */
  async ack(tokens: EventGridAckToken[]): Promise<void> {
    if (tokens.length === 0) return;
    const client = await this.sdkClient();
    const poison = tokens.filter((t) => t.poison !== undefined).map((t) => t.lockToken);
    const good = tokens.filter((t) => t.poison === undefined).map((t) => t.lockToken);
    for (const t of tokens) this.forget(t.lockToken);
    const run = async (op: "acknowledgeEvents" | "rejectEvents", lockTokens: string[]) => {
      await mapLimit(chunks(lockTokens, 100), 4, async (chunk) => {
        let failed: FailedLockToken[];
        try {
          failed = (await this.reach(op, () => client[op](chunk))).failedLockTokens;
        } catch (err) {
          throw new QueueAckError(this.description, op, this.text(err), { cause: this.cause(err) });
        }
        this.reportFailed(op, failed);
      });
    };
    await run("acknowledgeEvents", good);
    await run("rejectEvents", poison);
  }

  /** Release: the events are delivered again at once. */
  async nack(tokens: EventGridAckToken[]): Promise<void> {
    if (tokens.length === 0) return;
    for (const t of tokens) this.forget(t.lockToken);
    await this.release(tokens.map((t) => t.lockToken));
  }

  /**
   * Stop polling and release every event still held or buffered. The poll in flight is cut off
   * rather than waited for: its long poll lasts 10–120 s, which a stop should not.
   */
  protected async giveBack(): Promise<void> {
    this.pollAbort?.abort();
    await this.poll?.catch(() => undefined);
    const tokens = [...this.held.keys(), ...this.buffer.map((d) => d.brokerProperties.lockToken)];
    this.held.clear();
    this.buffer.length = 0;
    if (tokens.length > 0 && this.client) await this.release(tokens).catch(() => undefined);
  }

  protected keyOf(token: EventGridAckToken): string {
    return token.lockToken;
  }

  private startPoll(): Promise<void> {
    if (this.poll || this.closed) return this.poll ?? Promise.resolve();
    const abort = new AbortController();
    this.pollAbort = abort;
    this.poll = (async () => {
      try {
        const client = await this.sdkClient();
        let body: string | undefined;
        const options = {
          maxEvents: this.o.maxEvents,
          maxWaitTime: this.o.maxWaitTimeSeconds,
          abortSignal: abort.signal,
          onResponse: (response: { bodyAsText?: string | null }) => void (body = response.bodyAsText ?? undefined),
        };
        const result = await this.reach("receive", () => client.receiveEvents<unknown>(options), abort.signal);
        const exact = exactEventData(body);
        const leaseMs = this.o.lockDurationSeconds * 1000;
        for (const d of result.details) {
          const data = exact?.get(d.brokerProperties.lockToken);
          if (data !== undefined) (d.event as { data?: unknown }).data = data;
          this.leases.hold(d.brokerProperties.lockToken, d.brokerProperties.lockToken, leaseMs);
          if (this.closed) await this.release([d.brokerProperties.lockToken]).catch(() => undefined);
          else this.buffer.push(d);
        }
      } catch (err) {
        if (!abort.signal.aborted && !this.closed) this.failure = err instanceof QueueUnreachableError ? err : this.receiveError(err);
      } finally {
        this.poll = undefined;
        this.pollAbort = undefined;
        this.wake();
      }
    })();
    return this.poll;
  }

  private toRecord(d: ReceiveDetails<unknown>): ReceivedRecord<EventGridAckToken> {
    const e = d.event;
    const position = { eventId: e.id, source: e.source };
    const meta: EventGridEventMeta = { id: e.id, source: e.source, type: e.type, deliveryCount: d.brokerProperties.deliveryCount };
    if (e.subject) meta.subject = e.subject;
    if (e.time) meta.time = e.time.toISOString();
    if (e.dataContentType) meta.dataContentType = e.dataContentType;
    const token: EventGridAckToken = { lockToken: d.brokerProperties.lockToken, eventId: e.id };
    if (!this.o.unwrapData) return queueRecord({ value: envelopeOf(e) }, { position, meta, ackToken: token });
    const { decoded, raw } = decodeEventData(e.data);
    if ("error" in decoded) token.poison = decoded.error;
    return queueRecord(decoded, { raw, position, meta, ackToken: token });
  }

  private async release(lockTokens: string[]): Promise<void> {
    const client = await this.sdkClient();
    await mapLimit(chunks(lockTokens, 100), 4, async (chunk) => {
      try {
        this.reportFailed("releaseEvents", (await this.reach("releaseEvents", () => client.releaseEvents(chunk))).failedLockTokens);
      } catch (err) {
        this.warn(`${this.description}: could not release events (they come back when their locks expire): ${this.text(err)}`);
      }
    });
  }

  protected async renew(leases: Array<Lease<string>>): Promise<Array<number | undefined>> {
    const client = await this.sdkClient();
    const tokens = leases.map((l) => l.message);
    const failed = new Set<string>();
    for (const chunk of chunks(tokens, 100)) {
      const out = await this.reach("renewEventLocks", () => client.renewEventLocks(chunk));
      for (const f of out.failedLockTokens) failed.add(f.lockToken);
      this.reportFailed("renewEventLocks", out.failedLockTokens);
    }
    const at = Date.now() + this.o.lockDurationSeconds * 1000;
    return tokens.map((t) => (failed.has(t) ? Number.POSITIVE_INFINITY : at));
  }

  /** Network failures and a service that is busy or down (408, 429, 5xx). */
  protected override unreachable(err: unknown): boolean {
    const status = (err as { statusCode?: number }).statusCode;
    return isNetworkError(err) || (status !== undefined && (status === 408 || status === 429 || status >= 500));
  }

  private reportFailed(op: string, failed: FailedLockToken[]): void {
    if (failed.length === 0) return;
    // The service refuses a lock token only when it is unknown or expired: the event is (or will
    // be) delivered again and a merge target absorbs it.
    const sample = failed.slice(0, 3).map((f) => `${f.error?.code ?? "error"}: ${f.error?.message ?? ""}`.trim());
    this.warn(`${this.description}: ${op} refused ${failed.length} lock tokens (${sample.join("; ")}); those events will be delivered again`);
  }

  private sdkClient(): Promise<EventGridReceiverClient> {
    this.client ??= (async () => {
      const sdk = await requirePeer<EventGridModule>("@azure/eventgrid-namespaces", "The Event Grid connector");
      let credential: ConstructorParameters<EventGridModule["EventGridReceiverClient"]>[1];
      if (this.o.accessKey) {
        credential = new sdk.AzureKeyCredential(this.o.accessKey);
      } else {
        const identity = await requirePeer<IdentityModule>("@azure/identity", "The Event Grid connector without accessKey (DefaultAzureCredential)");
        credential = new identity.DefaultAzureCredential();
      }
      const insecure = this.o.endpoint.startsWith("http://"); // loopback only, checked by the spec
      // Every attempt is the connector's (`reach`), so a failed one is seen at once, not after the SDK's.
      const options = { retryOptions: { maxRetries: 0 }, ...(insecure ? { allowInsecureConnection: true } : {}) };
      return new sdk.EventGridReceiverClient(this.o.endpoint, credential, this.o.topicName, this.o.subscriptionName, options);
    })();
    this.client.catch(() => (this.client = undefined));
    return this.client;
  }

  private receiveError(err: unknown): Error {
    const status = (err as { statusCode?: number }).statusCode;
    const text = this.text(err);
    const cause = this.cause(err);
    if (status === 401 || status === 403) {
      return new QueueReceiveError(
        this.description,
        `not authorized (HTTP ${status}): check accessKey, or give the DefaultAzureCredential identity the "EventGrid Data Receiver" role (${text})`,
        { cause },
      );
    }
    if (status === 404) {
      return new QueueReceiveError(this.description, `not found (HTTP 404): check endpoint, topicName and subscriptionName (${text})`, { cause });
    }
    return new QueueReceiveError(this.description, text, { cause });
  }
}

/**
 * The SDK parses a receive response with JSON.parse, which rounds integers beyond 2^53 in event
 * data. When the response text may hold one, it is parsed again with parseJsonRecord (exact):
 * each event's `data` by lock token. Undefined when there is nothing to correct.
 */
function exactEventData(body: string | undefined): Map<string, unknown> | undefined {
  if (body === undefined || !hasLongDigitRun(body)) return undefined;
  let doc: unknown;
  try {
    doc = parseJsonRecord(body);
  } catch {
    return undefined; // the SDK read it; what it made of it stands
  }
  const value = (doc as { value?: unknown } | null)?.value;
  if (!Array.isArray(value)) return undefined;
  const out = new Map<string, unknown>();
  for (const d of value as Array<{ brokerProperties?: { lockToken?: unknown }; event?: { data?: unknown } }>) {
    const token = d?.brokerProperties?.lockToken;
    if (typeof token === "string" && d.event?.data !== undefined) out.set(token, d.event.data);
  }
  return out;
}

/**
 * A CloudEvent's data as a record. JSON data arrives parsed (an object is the record; other JSON
 * values arrive as `{ data }`); string data — also what the SDK makes of `data_base64` — must be
 * JSON text; anything else is a poison event.
 */
export function decodeEventData(data: unknown): { decoded: DecodedBody; raw?: string | Uint8Array } {
  if (data === undefined || data === null) return { decoded: { error: "event has no data" } };
  if (typeof data === "string") return { decoded: decodeBody(data), raw: data };
  if (data instanceof Uint8Array) return { decoded: decodeBody(data), raw: new Uint8Array(data) };
  return { decoded: { value: wrapJson(data) } };
}

function envelopeOf(e: CloudEvent<unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { specversion: e.specVersion ?? "1.0", id: e.id, source: e.source, type: e.type };
  if (e.subject !== undefined) out.subject = e.subject;
  if (e.time !== undefined) out.time = e.time.toISOString();
  if (e.dataContentType !== undefined) out.datacontenttype = e.dataContentType;
  if (e.dataSchema !== undefined) out.dataschema = e.dataSchema;
  if (e.data !== undefined) out.data = e.data;
  return out;
}
