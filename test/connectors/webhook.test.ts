import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { MemoryCheckpointStore } from "../../src/checkpoint/memory.js";
import { createSource } from "../../src/sources/connectors.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { WebhookSource, type WebhookAckToken } from "../../src/sources/webhook/source.js";
import type { ReceivedRecord } from "../../src/sources/core/types.js";

const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const sources: WebhookSource[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.close()));
});
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function listen(options: Partial<ConstructorParameters<typeof WebhookSource>[0]> = {}): Promise<WebhookSource> {
  const s = new WebhookSource({ port: 0, path: "/events", ...options });
  sources.push(s);
  await s.start();
  return s;
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One HTTP request with node:http (full control over method, headers and body size). */
function send(
  url: string,
  options: { method?: string; body?: string | Buffer; headers?: Record<string, string>; chunked?: boolean; signal?: AbortSignal } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
    if (body && !options.chunked) headers["content-length"] = String(body.length);
    const req = request(url, { method: options.method ?? "POST", headers, signal: options.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    if (body && options.chunked) {
      // Written in pieces without a length: the server must cut it off by counting.
      for (let i = 0; i < body.length; i += 4096) req.write(body.subarray(i, i + 4096));
      req.end();
    } else {
      req.end(body);
    }
  });
}

const signal = new AbortController().signal;

async function receiveAll(s: WebhookSource, n: number): Promise<Array<ReceivedRecord<WebhookAckToken>>> {
  const out: Array<ReceivedRecord<WebhookAckToken>> = [];
  while (out.length < n) out.push(...(await s.receive(n - out.length, 5000, signal)));
  return out;
}

async function until(cond: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("webhook as an ack source", () => {
  it("answers a delivery 200 only when all of its events are acked", async () => {
    const s = await listen();
    let answered: Reply | undefined;
    const reply = send(s.url, { body: JSON.stringify([{ id: "e1", n: 1 }, { id: "e2", n: 2 }]) }).then((r) => (answered = r));
    const [a, b] = await receiveAll(s, 2);
    expect(a!.value).toEqual({ id: "e1", n: 1 });
    expect(a!.position).toBe("e1");
    expect(b!.raw).toBe('{"id":"e2","n":2}');
    await s.ack([a!.ackToken]);
    expect(s.stats()).toMatchObject({ held: 2, committed: 0 });
    expect(answered).toBeUndefined();
    await s.ack([b!.ackToken]);
    expect((await reply).status).toBe(200);
    expect(s.stats()).toMatchObject({ held: 0, committed: 1, events: 2 });
  });

  it("nack answers 503 with Retry-After so the sender delivers again", async () => {
    const s = await listen({ retryAfterSeconds: 7 });
    const reply = send(s.url, { body: '{"id":"x"}' });
    const [r] = await receiveAll(s, 1);
    await s.nack([r!.ackToken]);
    const res = await reply;
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("7");
  });

  it("keeps non-JSON bodies as { data } and non-UTF-8 bodies as raw bytes with a decode error", async () => {
    const s = await listen();
    void send(s.url, { body: "plain words", headers: { "content-type": "text/plain" } });
    void send(s.url, { body: Buffer.from([0xff, 0xfe, 0x01]), headers: { "content-type": "application/octet-stream" } });
    const got = await receiveAll(s, 2);
    const text = got.find((r) => r.decodeError === undefined)!;
    const bin = got.find((r) => r.decodeError !== undefined)!;
    expect(text.value).toEqual({ data: "plain words" });
    expect(bin.decodeError).toBe("webhook body is not valid UTF-8");
    expect([...(bin.raw as Uint8Array)]).toEqual([0xff, 0xfe, 0x01]);
    await s.ack(got.map((r) => r.ackToken));
  });

  it("rejects a body over maxBodyBytes with 413, declared or streamed", async () => {
    const s = await listen({ maxBodyBytes: 1024 });
    const big = JSON.stringify({ pad: "x".repeat(200_000) });
    expect((await send(s.url, { body: big })).status).toBe(413);
    expect((await send(s.url, { body: big, chunked: true })).status).toBe(413);
    expect(s.stats()).toMatchObject({ rejectedTooLarge: 2, held: 0 });
    // The endpoint still works afterwards.
    const ok = send(s.url, { body: '{"small":true}' });
    const [r] = await receiveAll(s, 1);
    await s.ack([r!.ackToken]);
    expect((await ok).status).toBe(200);
  });

  it("is bounded: a full queue answers 429 + Retry-After at once; a delivery that can never fit gets 413", async () => {
    const s = await listen({ maxQueued: 5, retryAfterSeconds: 3 });
    const two = (k: number) => JSON.stringify([{ id: `${k}a` }, { id: `${k}b` }]);
    const first = send(s.url, { body: two(1) });
    const second = send(s.url, { body: two(2) });
    await until(() => s.stats().held === 4, "two deliveries to be held");
    const full = await send(s.url, { body: two(3) });
    expect(full.status).toBe(429);
    expect(full.headers["retry-after"]).toBe("3");
    const huge = await send(s.url, { body: JSON.stringify(Array.from({ length: 6 }, (_, i) => ({ id: i }))) });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatch(/can never fit the queue \(maxQueued 5\)/);
    // Leased events still count until they are committed.
    const leased = await receiveAll(s, 4);
    expect((await send(s.url, { body: two(4) })).status).toBe(429);
    await s.ack(leased.map((r) => r.ackToken));
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(s.stats()).toMatchObject({ held: 0, rejectedFull: 2 });
  });

  it("checks the HMAC signature when a secret is set", async () => {
    const s = await listen({ hmacSecret: "s3cret" });
    const body = JSON.stringify({ id: "signed" });
    const sig = createHmac("sha256", "s3cret").update(body).digest("hex");
    expect((await send(s.url, { body })).status).toBe(401);
    expect((await send(s.url, { body, headers: { "x-signature": `sha256=${"0".repeat(64)}` } })).status).toBe(401);
    expect((await send(s.url, { body: `${body} `, headers: { "x-signature": `sha256=${sig}` } })).status).toBe(401);
    expect((await send(s.url, { body, headers: { "x-signature": "sha256=abc" } })).status).toBe(401);
    const ok = send(s.url, { body, headers: { "x-signature": `sha256=${sig}` } });
    const [r] = await receiveAll(s, 1);
    expect(r!.value).toEqual({ id: "signed" });
    await s.ack([r!.ackToken]);
    expect((await ok).status).toBe(200);
    expect(s.stats().rejectedSignature).toBe(4);
  });

  it("accepts a custom signature header with a bare hex digest", async () => {
    const s = await listen({ hmacSecret: "k", signatureHeader: "X-Hub-Signature-256" });
    const body = '{"id":1}';
    const ok = send(s.url, { body, headers: { "x-hub-signature-256": createHmac("sha256", "k").update(body).digest("hex") } });
    const [r] = await receiveAll(s, 1);
    await s.ack([r!.ackToken]);
    expect((await ok).status).toBe(200);
  });

  it("performs the Event Grid subscription validation handshake", async () => {
    const s = await listen();
    const res = await send(s.url, {
      headers: { "aeg-event-type": "SubscriptionValidation" },
      body: JSON.stringify([
        {
          id: "2d1781af-3a4c-4d7c-bd0c-e34b19da4e66",
          topic: "/subscriptions/xxx/resourceGroups/rg/providers/Microsoft.EventGrid/topics/t",
          subject: "",
          data: { validationCode: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6", validationUrl: "https://example.invalid/validate" },
          eventType: "Microsoft.EventGrid.SubscriptionValidationEvent",
          eventTime: "2026-01-01T00:00:00Z",
          metadataVersion: "1",
          dataVersion: "1",
        },
      ]),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ validationResponse: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6" });
    expect(s.stats()).toMatchObject({ validations: 1, held: 0, queued: 0 });
  });

  it("performs the CloudEvents 1.0 webhook validation handshake (OPTIONS)", async () => {
    const s = await listen({ allowedRate: 120 });
    const res = await send(s.url, { method: "OPTIONS", headers: { "webhook-request-origin": "eventgrid.azure.net" } });
    expect(res.status).toBe(200);
    expect(res.headers["webhook-allowed-origin"]).toBe("eventgrid.azure.net");
    expect(res.headers["webhook-allowed-rate"]).toBe("120");
    const strict = await listen({ allowedOrigins: ["eventgrid.azure.net"] });
    expect((await send(strict.url, { method: "OPTIONS", headers: { "webhook-request-origin": "evil.example" } })).status).toBe(403);
  });

  it("turns Event Grid and CloudEvents deliveries into one record per event, unwrapping data when asked", async () => {
    const s = await listen({ unwrapData: true });
    const eg = [
      { id: "g1", eventType: "Orders.Created", subject: "o/1", eventTime: "2026-01-01T00:00:00Z", dataVersion: "1", data: { order_id: 1 } },
      { id: "g2", eventType: "Orders.Created", subject: "o/2", eventTime: "2026-01-01T00:00:01Z", dataVersion: "1", data: { order_id: 2 } },
    ];
    const ce = [{ specversion: "1.0", id: "c1", source: "/orders", type: "Orders.Created", data: { order_id: 3 } }];
    void send(s.url, { body: JSON.stringify(eg), headers: { "aeg-event-type": "Notification" } });
    void send(s.url, { body: JSON.stringify(ce), headers: { "content-type": "application/cloudevents-batch+json" } });
    void send(s.url, {
      body: JSON.stringify({ order_id: 4 }),
      headers: { "ce-specversion": "1.0", "ce-id": "b1", "ce-source": "/orders", "ce-type": "Orders.Created" },
    });
    const got = await receiveAll(s, 4);
    expect(got.map((r) => [r.position, r.value]).sort()).toEqual([
      ["b1", { order_id: 4 }],
      ["c1", { order_id: 3 }],
      ["g1", { order_id: 1 }],
      ["g2", { order_id: 2 }],
    ]);
    await s.ack(got.map((r) => r.ackToken));
  });

  it("answers wrong paths 404 and wrong methods 405", async () => {
    const s = await listen();
    expect((await send(s.url.replace("/events", "/other"), { body: "{}" })).status).toBe(404);
    expect((await send(s.url, { method: "GET" })).status).toBe(405);
  });

  it("drops the queued events of a sender that gave up, and answers 503 to pending ones on close", async () => {
    const s = await listen();
    const abort = new AbortController();
    const gone = send(s.url, { body: '[{"id":1},{"id":2}]', signal: abort.signal }).catch(() => "aborted");
    await until(() => s.stats().queued === 2, "the delivery to be queued");
    abort.abort();
    expect(await gone).toBe("aborted");
    await until(() => s.stats().held === 0, "the abandoned delivery to be released");
    expect(s.stats().queued).toBe(0);

    const pending = send(s.url, { body: '{"id":3}' });
    await until(() => s.stats().queued === 1, "the next delivery");
    await s.close();
    const res = await pending;
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("5");
  });

  it("iterator API: an event is acknowledged when the next one is asked for; leaving the loop gives it back", async () => {
    const s = await listen();
    const r1 = send(s.url, { body: '{"id":"a"}' });
    const r2 = send(s.url, { body: '{"id":"b"}' });
    const it = s.stream()[Symbol.asyncIterator]();
    const first = await it.next();
    expect(s.stats().committed).toBe(0);
    const second = await it.next();
    expect([first.value, second.value].map((v) => (v as { id: string }).id).sort()).toEqual(["a", "b"]);
    const firstReply = (first.value as { id: string }).id === "a" ? r1 : r2;
    const secondReply = firstReply === r1 ? r2 : r1;
    expect((await firstReply).status).toBe(200);
    await it.return?.(undefined);
    expect((await secondReply).status).toBe(503);
  });

  it("rejects bad options with the option's name", () => {
    expect(() => new WebhookSource({ port: -1 })).toThrow(/port: expected a port number/);
    expect(() => new WebhookSource({ port: 0, path: "events" })).toThrow(/path: expected a path starting with "\/"/);
  });
});

describe("webhook through StreamSink into a merge target", () => {
  it("answers 200 only after the batch holding the delivery is committed; no loss, no duplicates", async () => {
    const N = 300;
    // A queue smaller than what 8 concurrent senders push: some deliveries meet 429.
    const source = await listen({ maxQueued: 20 });
    const store = new MemoryCheckpointStore();
    const lake = mkdtempSync(join(tmpdir(), "lakelogic-webhook-"));
    dirs.push(lake);
    const log: Array<{ kind: "commit"; total: number } | { kind: "reply"; events: number; status: number }> = [];
    const stop = new AbortController();

    // Deliveries of 1–7 orders, some repeated (senders retry), one garbage body; posted with
    // bounded concurrency and retried on 429 like Event Grid would.
    const deliveries: unknown[][] = [];
    for (let i = 0; i < N; ) {
      const size = 1 + (deliveries.length % 7);
      deliveries.push(Array.from({ length: Math.min(size, N - i) }, (_, k) => orderEvent(i + k)));
      i += size;
    }
    deliveries.push(deliveries[3]!, deliveries[10]!);
    let answeredEvents = 0;
    const postAll = async () => {
      let next = 0;
      const worker = async () => {
        while (next < deliveries.length) {
          const d = deliveries[next++]!;
          for (;;) {
            const res = await send(source.url, { body: JSON.stringify(d.length === 1 ? d[0] : d) });
            if (res.status === 429) {
              await new Promise((r) => setTimeout(r, 10));
              continue;
            }
            answeredEvents += d.length;
            log.push({ kind: "reply", events: answeredEvents, status: res.status });
            break;
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      const garbage = await send(source.url, { body: "not json", headers: { "content-type": "text/plain" } });
      log.push({ kind: "reply", events: ++answeredEvents, status: garbage.status });
      stop.abort();
    };

    const run = new StreamSink(contractPath, source, {
      targetPath: lake,
      checkpoint: store,
      batchSize: 40,
      maxWaitMs: 100,
      signal: stop.signal,
      handleSignals: false,
      onBatch: (b) => void log.push({ kind: "commit", total: b.totals.sourceCount }),
    }).run("continuous");
    const [summary] = await Promise.all([run, postAll()]);

    expect(log.filter((e) => e.kind === "reply").every((e) => e.kind === "reply" && e.status === 200)).toBe(true);
    // At every reply, the batches committed (seen by onBatch) already hold at least every event answered so far.
    let committed = 0;
    for (const e of log) {
      if (e.kind === "commit") committed = e.total;
      else expect(committed).toBeGreaterThanOrEqual(e.events);
    }
    const totalEvents = deliveries.reduce((n, d) => n + d.length, 0) + 1;
    expect(summary.sourceCount).toBe(totalEvents);
    expect(source.stats().rejectedFull).toBeGreaterThan(0);

    const contract = await loadContract(contractPath);
    const ids = (await readTable(contract, { targetPath: lake })).map((r) => Number(r.order_id));
    const good = [...Array(N).keys()].filter((i) => !isBadOrder(i));
    expect(ids.length).toBe(good.length);
    expect(new Set(ids)).toEqual(new Set(good));
    const q = await readQuarantine(contract, { targetPath: lake });
    const badIds = q.flatMap((r) => {
      const id = (r.record as { order_id?: unknown } | undefined)?.order_id;
      return typeof id === "number" ? [id] : [];
    });
    expect(badIds.sort((a, b) => a - b)).toEqual([...Array(N).keys()].filter((i) => isBadOrder(i)));
    expect(q.filter((r) => (r.record as { data?: unknown } | undefined)?.data === "not json")).toHaveLength(1);
  });

  it("builds from JSON config (webhook and eventgrid-push) and runs continuously", async () => {
    const source = (await createSource({ type: "eventgrid-push", port: 0, path: "/eg", unwrap_data: true, max_queued: 50 })) as WebhookSource;
    sources.push(source);
    expect(source).toBeInstanceOf(WebhookSource);
    await source.start();
    const lake = mkdtempSync(join(tmpdir(), "lakelogic-webhook-"));
    dirs.push(lake);
    const events = Array.from({ length: 12 }, (_, i) => ({ id: `e${i}`, eventType: "Orders.Created", subject: `o/${i}`, data: orderEvent(i) }));
    const replies = [send(source.url, { body: JSON.stringify(events.slice(0, 5)) }), send(source.url, { body: JSON.stringify(events.slice(5)) })];
    const sink = new StreamSink(contractPath, source, { targetPath: lake, checkpoint: "memory", batchSize: 5, maxWaitMs: 300, handleSignals: false });
    const summary = await sink.run("continuous", { maxBatches: 3 });
    expect(summary.sourceCount).toBe(12);
    expect((await Promise.all(replies)).map((r) => r.status)).toEqual([200, 200]);
    expect(await createSource({ type: "webhook", port: 0 })).toBeInstanceOf(WebhookSource);
    await expect(createSource({ type: "webhook", port: 0, max_body_bytes: 0 })).rejects.toThrow(/source webhook: maxBodyBytes: expected a number >= 1/);
  });
});
