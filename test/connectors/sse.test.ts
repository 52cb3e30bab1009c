import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { createSource } from "../../src/sources/connectors.js";
import { backoffDelay, parseRetryAfter, resolveRetry, type RetryInfo } from "../../src/sources/core/backoff.js";
import { ConnectorGaveUpError, ConnectorHttpError } from "../../src/sources/core/errors.js";
import { SSEConnector, type SSEMessage } from "../../src/sources/sse/client.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import { SSEOffsetSource } from "../../src/sources/sse/source.js";
import type { SourceRecord } from "../../src/sources/core/types.js";
import { ScriptedSSEServer, type ConnectionPlan, type LogEvent } from "./sse-server.js";

const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const FAST = { initialDelayMs: 5, maxDelayMs: 20, jitter: 0 };
const servers: ScriptedSSEServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function serve(log: LogEvent[], plan?: (n: number) => ConnectionPlan): Promise<ScriptedSSEServer> {
  const s = await new ScriptedSSEServer(log, plan).start();
  servers.push(s);
  return s;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "lakelogic-sse-"));
  dirs.push(d);
  return d;
}

async function until(cond: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function take<T>(it: AsyncIterable<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  if (n === 0) return out;
  for await (const x of it) {
    out.push(x);
    if (out.length >= n) break;
  }
  return out;
}

async function drain(src: SSEOffsetSource, mode: "available_now" | "continuous" = "available_now"): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  for await (const r of src.read({ mode, signal: new AbortController().signal })) out.push(r);
  return out;
}

const orderLog = (n: number, from = 0): LogEvent[] =>
  Array.from({ length: n }, (_, k) => ({ id: String(from + k + 1), data: JSON.stringify(orderEvent(from + k)) }));

/**
 * Order events 0..n-1 mixed with what real feeds send: events without an id, non-JSON data,
 * data that is not UTF-8, pings of another event type, unknown fields. Returns what must land where.
 */
function chaoticLog(n: number) {
  const log: LogEvent[] = [];
  const garbagePositions: string[] = [];
  for (let i = 0; i < n; i++) {
    // Every 7th order has no id of its own: it inherits the previous one and does not move the cursor.
    log.push(i % 7 === 3 ? { data: JSON.stringify(orderEvent(i)) } : { id: `o${i}`, data: JSON.stringify(orderEvent(i)) });
    if (i % 23 === 5) {
      log.push({ id: `text${i}`, data: `plain text, not JSON ${i}` });
      garbagePositions.push(`text${i}`);
    }
    if (i % 31 === 9) {
      log.push({ id: `bin${i}`, dataBytes: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]) });
      garbagePositions.push(`bin${i}`);
    }
    if (i % 11 === 0) log.push({ event: "ping", data: "{}" });
  }
  const good = new Set<number>();
  const bad = new Set<number>();
  for (let i = 0; i < n; i++) (isBadOrder(i) ? bad : good).add(i);
  return { log, good, bad, garbagePositions };
}

async function expectLake(lake: string, expected: { good: Set<number>; bad: Set<number>; garbage: string[] }) {
  const contract = await loadContract(contractPath);
  const rows = await readTable(contract, { targetPath: lake });
  const ids = rows.map((r) => Number(r.order_id));
  // Every good order exactly once: no loss, no duplicates.
  expect(ids.length).toBe(expected.good.size);
  expect(new Set(ids)).toEqual(expected.good);
  const q = await readQuarantine(contract, { targetPath: lake });
  const badOrders = q.filter((r) => typeof (r.record as { order_id?: unknown } | undefined)?.order_id === "number");
  const badIds = badOrders.map((r) => (r.record as { order_id: number }).order_id);
  expect(badIds.length).toBe(expected.bad.size);
  expect(new Set(badIds)).toEqual(expected.bad);
  // Garbage is quarantined, never dropped, exactly once each.
  const garbage = q.filter((r) => !badOrders.includes(r)).map((r) => String(r.position));
  expect(garbage.sort()).toEqual([...expected.garbage].sort());
  return q;
}

describe("SSE iterator API", () => {
  it("yields JSON objects, wraps other data as { data }, skips comments and filters event types", async () => {
    const server = await serve(
      [
        { id: "1", data: '{"a":1}' },
        { id: "2", event: "ping", data: "{}" },
        { id: "3", data: "hello\nworld" },
        { id: "4", data: "[1,2]" },
        { data: "no id" },
      ],
      () => ({ keepAlives: true }),
    );
    const all = new SSEConnector(server.url);
    expect(await take(all.stream(), 5)).toEqual([{ a: 1 }, {}, { data: "hello\nworld" }, { data: [1, 2] }, { data: "no id" }]);
    await all.close();

    const filtered = new SSEConnector(server.url, { eventTypes: ["message"] });
    const events = await take(filtered.events(), 4);
    expect(events.map((e: SSEMessage) => [e.id, e.hasId, e.type])).toEqual([
      ["1", true, "message"],
      ["3", true, "message"],
      ["4", true, "message"],
      ["4", false, "message"],
    ]);
    expect(filtered.stats().filtered).toBe(1);
    await filtered.close();
  });

  it("sends Last-Event-ID on the first connection and on every reconnect", async () => {
    const server = await serve(orderLog(10), (n) => (n === 1 ? { dropAfter: 3 } : {}));
    const c = new SSEConnector(server.url, { lastEventId: "2", retry: FAST, onRetry: () => {} });
    const got = await take(c.events(), 8);
    await c.close();
    expect(got.map((e) => e.id)).toEqual(["3", "4", "5", "6", "7", "8", "9", "10"]);
    expect(server.seen.map((s) => s.lastEventId)).toEqual(["2", "5"]);
    expect(server.seen[0]!.headers.accept).toBe("text/event-stream");
  });

  it("ends when the server answers 204 (the spec's 'do not reconnect')", async () => {
    const server = await serve([], () => ({ status: 204 }));
    expect(await take(new SSEConnector(server.url).stream(), 10)).toEqual([]);
  });
});

describe("SSE reconnects", () => {
  it("honours the server's retry: field as the reconnect delay", async () => {
    const server = await serve(orderLog(4), (n) => (n === 1 ? { retryField: 37, dropAfter: 2 } : {}));
    const retries: RetryInfo[] = [];
    const c = new SSEConnector(server.url, { retry: { jitter: 0 }, onRetry: (r) => retries.push(r) });
    expect((await take(c.events(), 4)).map((e) => e.id)).toEqual(["1", "2", "3", "4"]);
    await c.close();
    expect(retries.map((r) => r.delayMs)).toEqual([37]);
  });

  it("backs off exponentially on 5xx and 429, up to the cap, then resumes", async () => {
    const plans: ConnectionPlan[] = [
      { status: 503, body: "maintenance" },
      { status: 500 },
      { status: 429, headers: { "retry-after": "0" } },
      { status: 502 },
    ];
    const server = await serve(orderLog(3), (n) => plans[n - 1] ?? {});
    const retries: RetryInfo[] = [];
    const c = new SSEConnector(server.url, { retry: { initialDelayMs: 5, maxDelayMs: 25, jitter: 0 }, onRetry: (r) => retries.push(r) });
    expect((await take(c.events(), 3)).map((e) => e.id)).toEqual(["1", "2", "3"]);
    await c.close();
    expect(retries.map((r) => r.delayMs)).toEqual([5, 10, 20, 25]);
    expect(retries.map((r) => (r.error as ConnectorHttpError).status)).toEqual([503, 500, 429, 502]);
    expect(retries[0]!.error.message).toMatch(/HTTP 503 Service Unavailable — server error; retrying with backoff \(server said: "maintenance"\)/);
    expect(c.stats().httpErrors).toBe(4);
  });

  it("detects a stalled connection (no bytes for stallTimeoutMs) and reconnects after the last id", async () => {
    const server = await serve(orderLog(6), (n) => (n === 1 ? { stallAfter: 2 } : {}));
    const c = new SSEConnector(server.url, { stallTimeoutMs: 200, retry: FAST, onRetry: () => {} });
    expect((await take(c.events(), 6)).map((e) => e.id)).toEqual(["1", "2", "3", "4", "5", "6"]);
    await c.close();
    expect(c.stats().stalls).toBe(1);
    expect(server.seen.map((s) => s.lastEventId)).toEqual([undefined, "2"]);
  });

  it("reports 401 clearly and gives up after maxClientErrorAttempts", async () => {
    const server = await serve([], () => ({ status: 401, body: "token expired" }));
    const c = new SSEConnector(`${server.url}?access_token=SECRET`, { retry: FAST, onRetry: () => {} });
    const err = await take(c.stream(), 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorHttpError);
    expect((err as ConnectorHttpError).status).toBe(401);
    expect((err as Error).message).toMatch(/^SSE http:\/\/127\.0\.0\.1:\d+\/stream\?…: HTTP 401 Unauthorized — the server wants credentials; check the `headers` option/);
    expect((err as Error).message).toContain('"token expired"');
    expect((err as Error).message).not.toContain("SECRET");
    expect(server.seen).toHaveLength(3);
  });

  it("does not retry a 404 forever, and says so at once when asked", async () => {
    const server = await serve([], () => ({ status: 404 }));
    const c = new SSEConnector(server.url, { retry: { ...FAST, maxClientErrorAttempts: 1 } });
    const err = await take(c.stream(), 1).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/HTTP 404 Not Found — nothing at this URL; check the `url` option/);
    expect(server.seen).toHaveLength(1);
  });

  it("refuses a 200 that is not an event stream", async () => {
    const server = await serve([], () => ({ status: 200, contentType: "text/html", body: "<html>login</html>" }));
    const c = new SSEConnector(server.url, { retry: { ...FAST, maxClientErrorAttempts: 2 }, onRetry: () => {} });
    const err = await take(c.stream(), 1).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/expected Content-Type text\/event-stream, got \\"text\/html\\"/);
    expect(server.seen).toHaveLength(2);
  });

  it("stops on a feed that breaks the protocol on every connection (a line that never ends)", async () => {
    const server = await serve([{ id: "1", data: "x".repeat(5000) }]);
    const c = new SSEConnector(server.url, { maxEventBytes: 1024, retry: FAST, onRetry: () => {} });
    const err = await take(c.stream(), 1).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/exceeded 1024 bytes/);
    expect(server.seen).toHaveLength(3);
  });

  it("gives up on a server that stays down after maxAttempts", async () => {
    const server = await serve([], () => ({ status: 503 }));
    const c = new SSEConnector(server.url, { retry: { ...FAST, maxAttempts: 3 }, onRetry: () => {} });
    const err = await take(c.stream(), 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorGaveUpError);
    expect((err as Error).message).toMatch(/gave up after 3 failed connection attempts: .*HTTP 503/);
    expect(server.seen).toHaveLength(3);
  });
});

describe("backoff", () => {
  it("grows, caps, jitters downwards only, and never goes below Retry-After", () => {
    const p = resolveRetry({ initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2, jitter: 0.5 });
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(p, n, { random: () => 0 }))).toEqual([100, 200, 400, 800, 1000]);
    expect(backoffDelay(p, 3, { random: () => 1 })).toBe(200);
    expect(backoffDelay(p, 1, { random: () => 0, floorMs: 5000 })).toBe(5000);
    // The server's retry: replaces the base, and may exceed the cap.
    expect(backoffDelay(p, 1, { random: () => 0, baseMs: 3000 })).toBe(3000);
    expect(parseRetryAfter("7")).toBe(7000);
    expect(parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(50_000);
    expect(parseRetryAfter("soon")).toBeUndefined();
    expect(() => resolveRetry({ jitter: 2 })).toThrow(/retry.jitter: expected a number from 0 to 1/);
    expect(() => resolveRetry({ maxDelay: 5 } as never)).toThrow(/retry.maxDelay: unknown option/);
  });
});

describe("SSEOffsetSource", () => {
  it("cursor = last event id yielded; events without an id do not move it", async () => {
    const server = await serve([
      { id: "a", data: "{}" },
      { data: '{"x":1}' },
      { id: "b", data: "{}" },
    ]);
    const src = new SSEOffsetSource(server.url, { drainIdleMs: 300 });
    await src.seek(undefined);
    const cursors: unknown[] = [];
    for await (const r of src.read({ mode: "available_now", signal: new AbortController().signal })) {
      cursors.push([r.position, src.currentCursor()]);
    }
    expect(cursors).toEqual([
      ["a", "a"],
      ["a+1", "a"],
      ["b", "b"],
    ]);
  });

  it("available_now ends once caught up (idle for drainIdleMs), keep-alives notwithstanding", async () => {
    const server = await serve(orderLog(5), () => ({ keepAlives: true }));
    const src = new SSEOffsetSource(server.url, { drainIdleMs: 300 });
    await src.seek("2");
    const got = await drain(src);
    expect(got.map((r) => r.position)).toEqual(["3", "4", "5"]);
    expect(src.currentCursor()).toBe("5");
    expect(server.seen[0]!.lastEventId).toBe("2");
  });

  it("skips exact replays but keeps an id reused for different data", async () => {
    const server = await serve(
      [
        { id: "1", data: '{"n":1}' },
        { id: "2", data: '{"n":2}' },
        { data: '{"n":"2+1"}' },
        { id: "3", data: '{"n":3}' },
      ],
      (n) => (n === 1 ? { dropAfter: 3 } : n === 2 ? { repeat: 2 } : {}),
    );
    const src = new SSEOffsetSource(server.url, { drainIdleMs: 300, retry: FAST, onRetry: () => {} });
    await src.seek(undefined);
    const got = await drain(src);
    expect(got.map((r) => r.value)).toEqual([{ n: 1 }, { n: 2 }, { n: "2+1" }, { n: 3 }]);
    // The reconnect sent "2" and the server resumed two early: 1, 2 and the event after 2 come again.
    expect(server.seen.map((s) => s.lastEventId)).toEqual([undefined, "2"]);
    expect(src.stats().duplicates).toBe(3);
    server.log.push({ id: "3", data: '{"n":"3 again, new data"}' });
    // A new run starts with an empty window; the reused id with new data is delivered.
    await src.seek("2");
    expect((await drain(src)).map((r) => r.value)).toEqual([{ n: "2+1" }, { n: 3 }, { n: "3 again, new data" }]);
  });

  it("remembers only dedupeWindow events: a replay reaching further back is delivered again", async () => {
    const log: LogEvent[] = [
      { id: "1", data: '{"n":1}' },
      { id: "2", data: '{"n":2}' },
      { data: '{"n":"2+1"}' },
      { id: "3", data: '{"n":3}' },
    ];
    const server = await serve(log, (n) => (n === 1 ? { dropAfter: 3 } : n === 2 ? { repeat: 2 } : {}));
    // Two remembered (2 and 2+1): the replayed 1 is new, and remembering it forgets 2, and so on.
    const src = new SSEOffsetSource(server.url, { drainIdleMs: 300, dedupeWindow: 2, retry: FAST, onRetry: () => {} });
    await src.seek(undefined);
    expect((await drain(src)).map((r) => r.value)).toEqual([{ n: 1 }, { n: 2 }, { n: "2+1" }, { n: 1 }, { n: 2 }, { n: "2+1" }, { n: 3 }]);
    expect(src.stats().duplicates).toBe(0);
  });

  it("quarantines data that is not UTF-8 with its bytes instead of dropping it", async () => {
    const server = await serve([{ id: "1", dataBytes: new Uint8Array([0xc3, 0x28]) }]);
    const src = new SSEOffsetSource(server.url, { drainIdleMs: 300 });
    await src.seek(undefined);
    const [r] = await drain(src);
    expect(r?.decodeError).toBe("event data is not valid UTF-8");
    expect([...(r?.raw as Uint8Array)]).toEqual([0xc3, 0x28]);
  });

  it("close() ends a read parked on a quiet connection and drops the connection", async () => {
    const server = await serve([]);
    const src = new SSEOffsetSource(server.url);
    await src.seek(undefined);
    const parked = src.read({ mode: "continuous", signal: new AbortController().signal })[Symbol.asyncIterator]().next();
    await until(() => server.active === 1, "the connection");
    await src.close();
    expect(await parked).toEqual({ done: true, value: undefined });
    await until(() => server.active === 0, "the connection to close");
    expect(server.seen).toHaveLength(1);
  });

  it("refuses a cursor written by another kind of source", async () => {
    const src = new SSEOffsetSource("http://127.0.0.1:9/x");
    await expect(src.seek({ offset: 3, exhausted: false })).rejects.toThrow(/not an SSE event id/);
  });
});

describe("SSE through StreamSink into a merge target", () => {
  it("loses nothing and duplicates nothing across drops, repeats, garbage, 5xx, 429 and a stall", async () => {
    const { log, good, bad, garbagePositions } = chaoticLog(300);
    const plans: ConnectionPlan[] = [
      { dropAfter: 40, keepAlives: true },
      { repeat: 5, dropAfter: 30 },
      { status: 503 },
      { status: 429, headers: { "retry-after": "0" } },
      { repeat: 3, stallAfter: 50 },
      { repeat: 1, dropAfter: 60 },
    ];
    const server = await serve(log, (n) => plans[n - 1] ?? { keepAlives: true });
    const lake = tempDir();
    const source = new SSEOffsetSource(server.url, {
      eventTypes: ["message"],
      retry: FAST,
      stallTimeoutMs: 300,
      drainIdleMs: 500,
      onRetry: () => {},
    });
    const summary = await new StreamSink(contractPath, source, {
      targetPath: lake,
      checkpoint: join(lake, "ckpt.sqlite"),
      batchSize: 25,
      maxWaitMs: 200,
    }).run("available_now");

    expect(summary.stoppedBy).toBe("end");
    expect(summary.cursor).toBe("o299");
    // The planned stall, and perhaps one at the end (the caught-up server sends no keep-alives).
    expect(source.stats().stalls).toBeGreaterThanOrEqual(1);
    expect(source.stats().duplicates).toBeGreaterThan(0);
    // Each reconnect resumed after the last id the client had parsed.
    for (const s of server.seen.slice(1)) expect(s.lastEventId).toMatch(/^(o|text|bin)\d+$/);
    const q = await expectLake(lake, { good, bad, garbage: garbagePositions });
    const binary = q.find((r) => String(r.position).startsWith("bin"));
    expect(binary?.rawEncoding).toBe("base64");
    expect(binary?.ruleIds).toEqual(["decode"]);
    const text = q.find((r) => String(r.position).startsWith("text"));
    expect(text?.record).toEqual({ data: expect.stringMatching(/^plain text, not JSON/) });
  });

  it("resumes a stopped run from the committed event id (JSON config), with events added meanwhile", async () => {
    const { log, good, bad, garbagePositions } = chaoticLog(120);
    const server = await serve(log.slice(0, 100));
    const lake = tempDir();
    const ckpt = join(lake, "ckpt.sqlite");
    const config = {
      type: "sse",
      url: server.url,
      event_types: "message",
      drain_idle_ms: 400,
      retry: { initial_delay_ms: 5, jitter: 0 },
    };
    const batches: BatchReport[] = [];
    const first = await new StreamSink(contractPath, await createSource(config), {
      targetPath: lake,
      checkpoint: ckpt,
      batchSize: 20,
      maxWaitMs: 200,
      onBatch: (b) => void batches.push(b),
    }).run("available_now", { maxBatches: 2 });
    expect(first.stoppedBy).toBe("max-batches");
    // The run closed its connection although a read was still parked on it.
    await until(() => server.active === 0, "the first run's connection to close");
    const committed = first.cursor;
    expect(typeof committed).toBe("string");

    server.append(log.slice(100));
    const second = await new StreamSink(contractPath, await createSource(config), {
      targetPath: lake,
      checkpoint: ckpt,
      batchSize: 20,
      maxWaitMs: 200,
    }).run("available_now");
    expect(second.resumedFrom).toBe(committed);
    expect(server.seen.at(-1)!.lastEventId).toBe(committed);
    expect(second.cursor).toBe("o119");
    await expectLake(lake, { good, bad, garbage: garbagePositions });

    const store = new SQLiteCheckpointStore(ckpt);
    expect((await store.load("stream::orders"))?.cursor).toBe("o119");
    await store.close();
  });

  it("fails the run with the HTTP error when the stream needs credentials", async () => {
    const server = await serve([], () => ({ status: 403 }));
    const lake = tempDir();
    const run = new StreamSink(contractPath, new SSEOffsetSource(server.url, { retry: { ...FAST, maxClientErrorAttempts: 1 } }), {
      targetPath: lake,
      checkpoint: "memory",
    }).run("available_now");
    await expect(run).rejects.toThrow(/HTTP 403 Forbidden — the credentials were refused; check the `headers` option/);
  });
});
