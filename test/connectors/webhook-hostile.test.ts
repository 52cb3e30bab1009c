import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request, type IncomingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { MemoryCheckpointStore } from "../../src/checkpoint/memory.js";
import { loadContract } from "../../src/contract/index.js";
import { readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { DedupeWindow } from "../../src/sources/webhook/dedupe.js";
import { WebhookSource, type WebhookAckToken } from "../../src/sources/webhook/source.js";
import type { ReceivedRecord } from "../../src/sources/core/types.js";

/**
 * The webhook endpoint facing hostile or broken senders: a handshake mixed with events, bodies
 * that stall or trickle, more connections than it should hold, bodies still being read, and
 * deliveries retried after they were committed.
 */
const sources: WebhookSource[] = [];
const sockets: Socket[] = [];
const dirs: string[] = [];
afterEach(async () => {
  sockets.splice(0).forEach((s) => s.destroy());
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

function send(url: string, options: { body: string; headers?: Record<string, string>; signal?: AbortSignal }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = Buffer.from(options.body);
    const headers = { "content-type": "application/json", "content-length": String(body.length), ...options.headers };
    const req = request(url, { method: "POST", headers, signal: options.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

interface RawClient {
  socket: Socket;
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<string>;
}

/** A TCP client that sends exactly `text` and then nothing more (a stalled or half-sent request). */
function raw(url: string, text: string): RawClient {
  const { port } = new URL(url);
  const socket = connect(Number(port), "127.0.0.1");
  sockets.push(socket);
  socket.on("error", () => undefined);
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  const closed = new Promise<string>((resolve) => socket.once("close", () => resolve(Buffer.concat(chunks).toString())));
  socket.write(text);
  return { socket, closed };
}

const head = (length: number | "chunked") =>
  "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
  (length === "chunked" ? "Transfer-Encoding: chunked\r\n" : `Content-Length: ${length}\r\n`) +
  "\r\n";

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

/** Whether a delivery is answered at once or queued as new events (which would store it again). */
async function answeredOrQueued(s: WebhookSource, reply: Promise<Reply>): Promise<Reply | "queued again"> {
  let answered: Reply | undefined;
  void reply.then((r) => (answered = r));
  await until(() => answered !== undefined || s.stats().queued > 0, "an answer or a queued event");
  return answered ?? "queued again";
}

const validationEvent = {
  id: "2d1781af-3a4c-4d7c-bd0c-e34b19da4e66",
  topic: "/subscriptions/xxx/resourceGroups/rg/providers/Microsoft.EventGrid/topics/t",
  subject: "",
  data: { validationCode: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6", validationUrl: "https://example.invalid/validate" },
  eventType: "Microsoft.EventGrid.SubscriptionValidationEvent",
  eventTime: "2026-01-01T00:00:00Z",
  metadataVersion: "1",
  dataVersion: "1",
};

describe("webhook: a validation handshake mixed with events", () => {
  it("refuses [event, SubscriptionValidationEvent, event] with 400 naming why, instead of answering the handshake and dropping the events", async () => {
    const s = await listen({ hmacSecret: "k" });
    const events = [
      { id: "g1", eventType: "Orders.Created", subject: "o/1", data: { order_id: 1 } },
      { id: "g2", eventType: "Orders.Created", subject: "o/2", data: { order_id: 2 } },
    ];
    const body = JSON.stringify([events[0], validationEvent, events[1]]);
    const sig = createHmac("sha256", "k").update(body).digest("hex");
    const res = await send(s.url, { body, headers: { "x-signature": `sha256=${sig}`, "aeg-event-type": "Notification" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/SubscriptionValidationEvent/);
    expect(res.body).toMatch(/2 other events/);
    expect(res.body).not.toMatch(/512d38b6/);
    expect(s.stats()).toMatchObject({ validations: 0, held: 0, rejectedHandshake: 1 });

    // Sent apart, the handshake is answered and the events are queued.
    const alone = JSON.stringify([validationEvent]);
    const ok = await send(s.url, { body: alone, headers: { "x-signature": `sha256=${createHmac("sha256", "k").update(alone).digest("hex")}` } });
    expect(JSON.parse(ok.body)).toEqual({ validationResponse: validationEvent.data.validationCode });
    const rest = JSON.stringify(events);
    const pending = send(s.url, { body: rest, headers: { "x-signature": `sha256=${createHmac("sha256", "k").update(rest).digest("hex")}` } });
    const got = await receiveAll(s, 2);
    expect(got.map((r) => r.position)).toEqual(["g1", "g2"]);
    await s.ack(got.map((r) => r.ackToken));
    expect((await pending).status).toBe(200);
  });
});

describe("webhook: bodies that stall or trickle", () => {
  it("cuts a body that stalls after the headers with 408 and closes the connection", async () => {
    const s = await listen({ bodyTimeoutMs: 50 });
    const client = raw(s.url, `${head(100)}{"id":`);
    const answer = await client.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer.toLowerCase()).toContain("connection: close");
    expect(answer).toMatch(/bodyTimeoutMs \(50\)/);
    expect(s.stats()).toMatchObject({ rejectedTimeout: 1, held: 0, reading: 0 });
  });

  it("cuts a body that trickles forever: the deadline covers the whole body, not the gap between bytes", async () => {
    const s = await listen({ bodyTimeoutMs: 100 });
    const client = raw(s.url, `${head("chunked")}1\r\n[\r\n`);
    const drip = setInterval(() => client.socket.write("1\r\n \r\n"), 10);
    try {
      const answer = await client.closed;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(drip);
    }
    expect(s.stats()).toMatchObject({ rejectedTimeout: 1, queued: 0 });
  });

  it("rejects a bodyTimeoutMs below 1", () => {
    expect(() => new WebhookSource({ port: 0, bodyTimeoutMs: 0 })).toThrow(/bodyTimeoutMs: expected a whole number >= 1/);
  });
});

describe("webhook: open connections are capped", () => {
  it("keeps at most maxConnections open: half-sent bodies beyond the cap are closed at once", async () => {
    const s = await listen({ maxConnections: 20 });
    const clients = Array.from({ length: 60 }, () => raw(s.url, `${head(100)}{"id":`));
    let refused = 0;
    for (const c of clients) void c.closed.then(() => refused++);
    await until(() => refused === 40, "40 connections to be refused");
    await until(() => s.stats().requests === 20, "the 20 accepted requests to be read");
    expect(s.stats()).toMatchObject({ connections: 20, rejectedConnections: 40 });
    expect(refused).toBe(40);
  });

  it("serves no request beyond the cap, and serves again once a connection closed", async () => {
    const s = await listen({ maxConnections: 3 });
    const stalled = [0, 1, 2].map(() => raw(s.url, `${head(100)}{"id":`));
    await until(() => s.stats().requests === 3, "three stalled requests");
    const extra = raw(s.url, `${head(8)}{"id":1}`);
    let closed: string | undefined;
    void extra.closed.then((d) => (closed = d));
    await until(() => closed !== undefined || s.stats().queued > 0, "the fourth connection to be closed or served");
    expect(s.stats().queued).toBe(0);
    expect(closed).toBe("");

    stalled[0]!.socket.destroy();
    await until(() => s.stats().connections === 2, "the server to see a connection close");
    const reply = send(s.url, { body: '{"id":2}' });
    const [r] = await receiveAll(s, 1);
    await s.ack([r!.ackToken]);
    expect((await reply).status).toBe(200);
  });
});

describe("webhook: bodies still being read count against maxQueuedBytes", () => {
  it("refuses a delivery with 429 when bytes being read and bytes held together reach the bound", async () => {
    const s = await listen({ maxQueuedBytes: 1000, maxBodyBytes: 900 });
    const partial = raw(s.url, `${head(900)}[${'"x",'.repeat(175)}`);
    await until(() => s.stats().reading === 701, "the partial body to be read");
    const full = await send(s.url, { body: JSON.stringify({ pad: "y".repeat(480) }) });
    expect(full.status).toBe(429);
    expect(full.headers["retry-after"]).toBe("5");
    expect(s.stats()).toMatchObject({ rejectedFull: 1, held: 0 });

    partial.socket.destroy();
    await until(() => s.stats().reading === 0, "the abandoned body to be released");
    const reply = send(s.url, { body: JSON.stringify({ pad: "y".repeat(480) }) });
    const [r] = await receiveAll(s, 1);
    await s.ack([r!.ackToken]);
    expect((await reply).status).toBe(200);
  });
});

describe("webhook: replay protection (dedupeWindow)", () => {
  it("answers a retried delivery of a committed event 200 without queueing it again; the window is bounded", async () => {
    const s = await listen({ dedupeWindow: 2 });
    const deliver = async (id: string) => {
      const reply = send(s.url, { body: JSON.stringify({ id, n: 1 }) });
      const [r] = await receiveAll(s, 1);
      await s.ack([r!.ackToken]);
      expect((await reply).status).toBe(200);
    };
    await deliver("e1");
    const retry = await answeredOrQueued(s, send(s.url, { body: JSON.stringify({ id: "e1", n: 1 }) }));
    expect(retry).not.toBe("queued again");
    expect(retry).toMatchObject({ status: 200 });
    expect(s.stats()).toMatchObject({ duplicates: 1, queued: 0, held: 0 });

    // Two more ids push e1 out of a window of 2: it is stored again.
    await deliver("e2");
    await deliver("e3");
    await deliver("e1");
    expect(s.stats()).toMatchObject({ duplicates: 1, committed: 4, events: 4 });
  });

  it("remembers an event committed after its sender gave up, and asks a retry to wait while the first copy is in flight", async () => {
    const s = await listen({ dedupeWindow: 100, retryAfterSeconds: 2 });
    const abort = new AbortController();
    const gone = send(s.url, { body: '{"id":"x1"}', signal: abort.signal }).catch(() => "aborted");
    const [r] = await receiveAll(s, 1);
    abort.abort();
    expect(await gone).toBe("aborted");
    await until(() => s.stats().held === 0, "the delivery to be released");

    // Its batch is still being committed: a retry now would store it twice.
    const early = await send(s.url, { body: '{"id":"x1"}' });
    expect(early.status).toBe(503);
    expect(early.headers["retry-after"]).toBe("2");
    expect(s.stats().queued).toBe(0);

    await s.ack([r!.ackToken]);
    const late = await answeredOrQueued(s, send(s.url, { body: '{"id":"x1"}' }));
    expect(late).toMatchObject({ status: 200 });
  });

  it("keeps only the new events of a delivery that repeats some, and keys events on dedupeHeader when set", async () => {
    const s = await listen({ dedupeWindow: 10, dedupeHeader: "X-GitHub-Delivery" });
    const first = send(s.url, { body: '{"action":"opened"}', headers: { "x-github-delivery": "d-1" } });
    const [a] = await receiveAll(s, 1);
    await s.ack([a!.ackToken]);
    expect((await first).status).toBe(200);
    const again = await answeredOrQueued(s, send(s.url, { body: '{"action":"opened"}', headers: { "x-github-delivery": "d-1" } }));
    expect(again).toMatchObject({ status: 200 });

    const byId = await listen({ dedupeWindow: 10 });
    const one = send(byId.url, { body: '[{"id":"a"},{"id":"b"}]' });
    const got = await receiveAll(byId, 2);
    await byId.ack(got.map((r) => r.ackToken));
    expect((await one).status).toBe(200);
    const mixed = send(byId.url, { body: '[{"id":"b"},{"id":"c"},{"id":"a"}]' });
    const fresh = await receiveAll(byId, 1);
    expect(fresh.map((r) => r.position)).toEqual(["c"]);
    await byId.ack(fresh.map((r) => r.ackToken));
    expect((await mixed).status).toBe(200);
    expect(byId.stats()).toMatchObject({ duplicates: 2, queued: 0, held: 0 });
  });

  it("remembers at most dedupeWindow ids, the most recent ones; an id in flight is forgotten once settled", () => {
    const w = new DedupeWindow(100);
    for (let i = 0; i < 10_000; i++) w.remember(`id:${i}`);
    expect(w.remembered).toBe(100);
    expect(w.isCommitted("id:9999")).toBe(true);
    expect(w.isCommitted("id:9900")).toBe(true);
    expect(w.isCommitted("id:9899")).toBe(false);
    w.hold("k");
    w.hold("k");
    w.settle("k");
    expect(w.isInFlight("k")).toBe(true);
    w.settle("k");
    expect(w.isInFlight("k")).toBe(false);
    const off = new DedupeWindow(0);
    off.remember("x");
    expect(off.isCommitted("x")).toBe(false);
  });

  it("is off by default: the same id is queued again", async () => {
    const s = await listen();
    const first = send(s.url, { body: '{"id":"same"}' });
    const [a] = await receiveAll(s, 1);
    await s.ack([a!.ackToken]);
    expect((await first).status).toBe(200);
    expect(await answeredOrQueued(s, send(s.url, { body: '{"id":"same"}' }))).toBe("queued again");
  });

  it("through StreamSink into an append target: deliveries retried after their 200 are stored once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lakelogic-webhook-dedupe-"));
    dirs.push(dir);
    const contractPath = join(dir, "orders-append.yaml");
    const orders = readFileSync(fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url)), "utf8");
    writeFileSync(contractPath, orders.replace("strategy: merge", "strategy: append"));
    const source = await listen({ dedupeWindow: 1000, unwrapData: true });
    const stop = new AbortController();
    const run = new StreamSink(contractPath, source, {
      targetPath: join(dir, "lake"),
      checkpoint: new MemoryCheckpointStore(),
      batchSize: 10,
      maxWaitMs: 50,
      signal: stop.signal,
      handleSignals: false,
    }).run("continuous");
    const good = [...Array(40).keys()].filter((i) => !isBadOrder(i)).slice(0, 12).map((i) => orderEvent(i));
    const deliveries = [good.slice(0, 4), good.slice(4, 8), good.slice(8)].map((d) => d.map((o) => ({ id: `order-${o.order_id}`, data: o })));
    const post = async () => {
      const statuses = [];
      for (const d of deliveries) statuses.push((await send(source.url, { body: JSON.stringify(d) })).status);
      return statuses;
    };
    expect(await post()).toEqual([200, 200, 200]);
    // The sender did not see the answers (a timeout on its side) and delivers everything again.
    expect(await post()).toEqual([200, 200, 200]);
    stop.abort();
    await run;
    const contract = await loadContract(contractPath);
    const rows = await readTable(contract, { targetPath: join(dir, "lake") });
    expect(rows.map((r) => Number(r.order_id)).sort((a, b) => a - b)).toEqual(good.map((o) => o.order_id));
    expect(source.stats().duplicates).toBe(12);
  });
});
