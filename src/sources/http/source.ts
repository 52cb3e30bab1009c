import type { Cursor } from "../../checkpoint/types.js";
import { parseProcessingTime } from "../../contract/normalise/trigger.js";
import { LakeLogicError, NonRetriableError } from "../../errors.js";
import { redactText, secretsOfHeaders, secretsOfUrl } from "../../util/redact.js";
import { sleep } from "../../util/wait.js";
import { backoffDelay, parseRetryAfter, resolveRetry, warnRetry, type ResolvedRetryPolicy } from "../core/backoff.js";
import { checkUrl } from "../core/common.js";
import { jsonText, parseJsonRecord } from "../../util/exact-json.js";
import { ConnectorGaveUpError, ConnectorHttpError, ConnectorNetworkError, CursorMismatchError, redactUrl } from "../core/errors.js";
import type { CursorSource, ReadOptions, SourceRecord } from "../core/types.js";
import { optionNames, refuseUnknownOptions } from "../core/unknown-options.js";
import { compareMarks, recordsOf, type PolledRecord, type Watermark } from "./records.js";
import { HTTP_DEFAULTS, type HttpClock, type HttpPollOptions } from "./spec.js";

/** The committed position of an HTTP poll: validators of the last response handled, and the watermark. */
export interface HttpCursor {
  etag?: string;
  lastModified?: string;
  watermark?: Watermark;
}

/** The response could not be used: not JSON, too large, or without records where `recordsPath` says. */
export class HttpResponseError extends NonRetriableError {
  constructor(message: string) {
    // The same request gives the same answer: retrying at once cannot help.
    super("HTTP_RESPONSE", message);
  }
}

const HTTP_POLL_OPTIONS = optionNames<HttpPollOptions>()(["headers", "interval", "intervalMs", "recordsPath", "fields", "watermark", "timeoutMs", "maxResponseBytes", "retry", "onRetry", "fetch", "clock", "random"]);

const REAL_CLOCK: HttpClock = { now: () => Date.now(), sleep: (ms, signal) => sleep(ms, signal) };

type Poll = { kind: "not-modified" } | { kind: "records"; records: PolledRecord[]; etag?: string; lastModified?: string };

/**
 * A JSON document polled over HTTP as a StreamSink source. Each poll is a conditional GET: the
 * ETag / Last-Modified of the last response handled go out as If-None-Match / If-Modified-Since,
 * and a 304 (or the same ETag again) means nothing new. With `watermark`, the records of a
 * response are handed over in watermark order and those at or below the committed watermark are
 * skipped, so neither a re-poll nor a restart writes them twice; without it, a restart mid-response
 * reads that response again (merge on a key makes that harmless).
 *
 * The cursor moves only over what was handed over: the validators after the last record of a
 * response, the watermark after the last record that carries it (never inside a run of records
 * sharing one watermark value, which a crash would otherwise cut in two).
 */
export class HttpPollSource implements CursorSource {
  readonly kind = "cursor" as const;
  readonly description: string;
  private readonly url: string;
  private readonly intervalMs: number;
  private readonly policy: ResolvedRetryPolicy;
  private readonly clock: HttpClock;
  private readonly closer = new AbortController();
  /** What the sink may commit: covers exactly the records yielded so far. */
  private cursor: HttpCursor = {};

  constructor(
    url: string | URL,
    private readonly options: HttpPollOptions = {},
  ) {
    refuseUnknownOptions("HttpPollSource", options, HTTP_POLL_OPTIONS);
    this.url = checkUrl(url, ["http:", "https:"], "source http");
    this.description = `http ${redactUrl(this.url)}`;
    const interval = options.interval === undefined ? undefined : parseProcessingTime(options.interval);
    this.intervalMs = options.intervalMs ?? interval ?? HTTP_DEFAULTS.intervalMs;
    this.policy = resolveRetry({ ...HTTP_DEFAULTS.retry, ...options.retry });
    this.clock = options.clock ?? REAL_CLOCK;
  }

  async seek(cursor: Cursor | undefined): Promise<void> {
    if (cursor === undefined || cursor === null) {
      this.cursor = {};
      return;
    }
    const c = cursor as Record<string, unknown>;
    const ok =
      typeof cursor === "object" &&
      !Array.isArray(cursor) &&
      Object.keys(c).every((k) => k === "etag" || k === "lastModified" || k === "watermark") &&
      (c["etag"] === undefined || typeof c["etag"] === "string") &&
      (c["lastModified"] === undefined || typeof c["lastModified"] === "string") &&
      (c["watermark"] === undefined || typeof c["watermark"] === "string" || typeof c["watermark"] === "number" || typeof c["watermark"] === "bigint");
    if (!ok) {
      throw new CursorMismatchError(
        `${this.description}: the stored cursor ${jsonText(cursor)} is not an HTTP poll position; this checkpoint key belongs to another kind of source.`,
      );
    }
    this.cursor = { ...(c as HttpCursor) };
  }

  currentCursor(): Cursor | undefined {
    return { ...this.cursor };
  }

  async *read(options: ReadOptions): AsyncIterable<SourceRecord> {
    const signal = AbortSignal.any([options.signal, this.closer.signal]);
    while (!signal.aborted) {
      const started = this.clock.now();
      const poll = await this.poll(signal);
      if (poll === undefined) return;
      if (poll.kind === "records") yield* this.handOver(poll);
      if (options.mode === "available_now") return;
      const wait = Math.max(0, started + this.intervalMs - this.clock.now());
      if (!(await this.clock.sleep(wait, signal))) return;
    }
  }

  /** The new records of one response, each yielded with the cursor that covers it. */
  private *handOver(poll: Extract<Poll, { kind: "records" }>): Generator<SourceRecord> {
    const before = this.cursor.watermark;
    const fresh = before === undefined ? poll.records : poll.records.filter((r) => r.mark === undefined || compareMarks(r.mark, before) > 0);
    const validators = { etag: poll.etag, lastModified: poll.lastModified };
    let watermark = before;
    for (let i = 0; i < fresh.length; i++) {
      const r = fresh[i]!;
      const next = fresh[i + 1];
      // The watermark passes r only once every record sharing its value has been handed over.
      if (r.mark !== undefined && (next?.mark === undefined || compareMarks(next.mark, r.mark) > 0)) watermark = r.mark;
      this.cursor = compact(next === undefined ? { ...validators, watermark } : { ...this.cursor, watermark });
      const position = { index: r.index, ...(poll.etag !== undefined ? { etag: poll.etag } : {}) };
      yield r.decodeError === undefined
        ? { value: r.value, raw: r.raw, position, bytes: r.raw.length }
        : { value: undefined, raw: r.raw, decodeError: r.decodeError, position, bytes: r.raw.length };
    }
    // Nothing new in it: the response is handled all the same.
    if (fresh.length === 0) this.cursor = compact({ ...validators, watermark });
  }

  /** One poll, retried on failures worth retrying; undefined when stopped meanwhile. */
  private async poll(signal: AbortSignal): Promise<Poll | undefined> {
    for (let failures = 1; ; failures++) {
      try {
        return await this.request(signal);
      } catch (err) {
        if (signal.aborted) return undefined;
        if (!(err instanceof LakeLogicError) || !err.retriable) throw err;
        if (failures >= this.policy.maxAttempts) throw new ConnectorGaveUpError("source http", this.url, failures, err.message, err);
        const floorMs = err instanceof ConnectorHttpError ? err.retryAfterMs : undefined;
        const delayMs = backoffDelay(this.policy, failures, { floorMs, random: this.options.random });
        (this.options.onRetry ?? warnRetry)({ connector: this.description, attempt: failures, delayMs, error: err });
        if (!(await this.clock.sleep(delayMs, signal))) return undefined;
      }
    }
  }

  private async request(signal: AbortSignal): Promise<Poll> {
    const headers: Record<string, string> = { accept: "application/json", ...this.options.headers };
    if (this.cursor.etag !== undefined) headers["if-none-match"] = this.cursor.etag;
    if (this.cursor.lastModified !== undefined) headers["if-modified-since"] = this.cursor.lastModified;
    const timeoutMs = this.options.timeoutMs ?? HTTP_DEFAULTS.timeoutMs;
    const secrets = [...secretsOfUrl(this.url), ...secretsOfHeaders(this.options.headers)];
    let res: Response;
    try {
      res = await (this.options.fetch ?? fetch)(this.url, { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
    } catch (err) {
      const why = (err as Error).name === "TimeoutError" ? `no answer within timeoutMs (${timeoutMs} ms)` : causeText(err);
      throw new ConnectorNetworkError(`${this.description}: ${redactText(why, secrets)}`);
    }
    if (res.status === 304) {
      await res.body?.cancel();
      return { kind: "not-modified" };
    }
    if (!res.ok) {
      const body = await readBody(res, 4096).then((b) => (b.over ? undefined : b.text), () => undefined);
      throw new ConnectorHttpError("source http", this.url, res.status, res.statusText, {
        body,
        retryAfterMs: parseRetryAfter(res.headers.get("retry-after"), this.clock.now()),
        secrets,
      });
    }
    const etag = res.headers.get("etag") ?? undefined;
    // A server that ignores If-None-Match but sends the same ETag has nothing new either.
    if (etag !== undefined && etag === this.cursor.etag) {
      await res.body?.cancel();
      return { kind: "not-modified" };
    }
    const limit = this.options.maxResponseBytes ?? HTTP_DEFAULTS.maxResponseBytes;
    const body = await readBody(res, limit).catch((err: unknown) => {
      throw new ConnectorNetworkError(`${this.description}: the response broke off: ${redactText(causeText(err), secrets)}`);
    });
    if (body.over) throw new HttpResponseError(`${this.description}: the response is larger than maxResponseBytes (${limit} bytes); raise maxResponseBytes or narrow the request`);
    let doc: unknown;
    try {
      doc = parseJsonRecord(body.text);
    } catch {
      const type = res.headers.get("content-type") ?? "no content type";
      throw new HttpResponseError(`${this.description}: the response is not JSON (${type}, starts ${JSON.stringify(redactText(body.text.slice(0, 60), secrets))})`);
    }
    const records = recordsOf(doc, this.options);
    if ("problem" in records) throw new HttpResponseError(`${this.description}: ${records.problem}; check the recordsPath option`);
    return { kind: "records", records, etag, lastModified: res.headers.get("last-modified") ?? undefined };
  }

  async close(): Promise<void> {
    this.closer.abort();
  }
}

function compact(c: HttpCursor): HttpCursor {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
}

function causeText(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

/** The body as text, or `over` as soon as it passes `limit` bytes (the rest is never read). */
async function readBody(res: Response, limit: number): Promise<{ text: string; over: boolean }> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > limit) {
    await res.body?.cancel();
    return { text: "", over: true };
  }
  if (!res.body) return { text: "", over: false };
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return { text: "", over: true };
    }
    chunks.push(value);
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks)), over: false };
}
