import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { createSource } from "../../src/sources/connectors.js";
import type { RetryInfo } from "../../src/sources/core/backoff.js";
import { BufferOverflowError, ConnectorHttpError } from "../../src/sources/core/errors.js";
import { WS_IDLE, WebSocketConnector, type WebSocketMessage } from "../../src/sources/websocket/client.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { WebSocketSource } from "../../src/sources/websocket/source.js";

const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const FAST = { initialDelayMs: 5, maxDelayMs: 40, jitter: 0 };
const cleanups: Array<() => Promise<void>> = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface Conn {
  ws: WebSocket;
  headers: IncomingHttpHeaders;
  subscriptions: unknown[];
}

/**
 * A real WebSocket server on loopback. `onSubscribe` runs for every subscribe message, per
 * connection, and decides what the "feed" sends.
 */
async function feedServer(options: {
  onSubscribe?: (conn: Conn, n: number, msg: unknown) => void;
  autoPong?: boolean;
}): Promise<{ url: string; conns: Conn[]; wss: WebSocketServer }> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", autoPong: options.autoPong ?? true });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const conns: Conn[] = [];
  wss.on("connection", (ws, req) => {
    const conn: Conn = { ws, headers: req.headers, subscriptions: [] };
    conns.push(conn);
    const n = conns.length;
    ws.on("message", (data) => {
      // One Buffer per message: the server keeps ws's default binaryType.
      const msg: unknown = JSON.parse((data as Buffer).toString());
      conn.subscriptions.push(msg);
      options.onSubscribe?.(conn, n, msg);
    });
  });
  cleanups.push(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/feed`, conns, wss };
}

/** An HTTP server that refuses the WebSocket upgrade with a status, per attempt. */
async function refusingServer(status: (n: number) => number | "upgrade"): Promise<{ url: string; attempts: () => number }> {
  const wss = new WebSocketServer({ noServer: true });
  const server: Server = createServer();
  const sockets = new Set<Socket>();
  let n = 0;
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("upgrade", (req, socket, head) => {
    const s = status(++n);
    if (s === "upgrade") {
      wss.handleUpgrade(req, socket, head, (ws) => ws.on("message", () => ws.send(JSON.stringify({ order: n }))));
      return;
    }
    socket.end(`HTTP/1.1 ${s} ${s === 401 ? "Unauthorized" : s === 503 ? "Service Unavailable" : "Error"}\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    for (const c of wss.clients) c.terminate();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, attempts: () => n };
}

async function take<T>(it: AsyncIterable<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) {
    out.push(x);
    if (out.length >= n) break;
  }
  return out;
}

/** Wait for a condition driven by I/O (never a fixed sleep); fails loudly if it never holds. */
async function until(cond: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("WebSocket iterator API", () => {
  it("subscribes with headers, decodes JSON, wraps other messages, keeps garbage", async () => {
    const server = await feedServer({
      onSubscribe: (c) => {
        c.ws.send(JSON.stringify({ a: 1 }));
        c.ws.send("not json");
        c.ws.send("[1,2]");
        c.ws.send(Buffer.from([0xff, 0x00, 0xfe]), { binary: true });
        c.ws.send(Buffer.from('{"b":2}'), { binary: true });
      },
    });
    const c = new WebSocketConnector(server.url, {
      subscribeMessage: { type: "subscribe", channels: ["orders"] },
      headers: { authorization: "Bearer t0ken" },
    });
    const got = await take(c.stream(), 5);
    expect(got.slice(0, 3)).toEqual([{ a: 1 }, { data: "not json" }, { data: [1, 2] }]);
    expect([...((got[3] as { data: Uint8Array }).data)]).toEqual([0xff, 0x00, 0xfe]);
    expect(got[4]).toEqual({ b: 2 });
    expect(server.conns[0]!.headers.authorization).toBe("Bearer t0ken");
    expect(server.conns[0]!.subscriptions).toEqual([{ type: "subscribe", channels: ["orders"] }]);
  });

  it("re-subscribes after the server drops the connection, backing off exponentially", async () => {
    const server = await feedServer({
      onSubscribe: (c, n, msg) => {
        if ((msg as { op?: string }).op !== "subscribe") return;
        for (let i = 0; i < 3; i++) c.ws.send(JSON.stringify({ conn: n, i }));
        // The first three connections die right after their messages, before any pong.
        if (n <= 3) setImmediate(() => c.ws.terminate());
      },
    });
    const retries: RetryInfo[] = [];
    const c = new WebSocketConnector(server.url, {
      subscribeMessages: [{ op: "auth" }, { op: "subscribe" }],
      retry: FAST,
      onRetry: (r) => retries.push(r),
    });
    const got = (await take(c.stream(), 12)) as Array<{ conn: number; i: number }>;
    expect(got.map((m) => m.conn)).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    expect(server.conns.map((k) => k.subscriptions)).toEqual(Array(4).fill([{ op: "auth" }, { op: "subscribe" }]));
    // Messages arrived on each connection, so each drop starts the backoff over.
    expect(retries.map((r) => r.delayMs)).toEqual([5, 5, 5]);
    expect(retries[0]!.error.message).toMatch(/server closed the connection with code 1006; reconnecting/);
    expect(c.stats()).toMatchObject({ connects: 4, reconnects: 3 });
  });

  it("backs off exponentially while the handshake fails with 503, then connects", async () => {
    const server = await refusingServer((n) => (n <= 3 ? 503 : "upgrade"));
    const retries: RetryInfo[] = [];
    const c = new WebSocketConnector(server.url, { subscribeMessage: "hi", retry: FAST, onRetry: (r) => retries.push(r) });
    expect(await take(c.stream(), 1)).toEqual([{ order: 4 }]);
    expect(retries.map((r) => r.delayMs)).toEqual([5, 10, 20]);
    expect(retries.map((r) => (r.error as ConnectorHttpError).status)).toEqual([503, 503, 503]);
  });

  it("reports a 401 handshake clearly and stops after maxClientErrorAttempts", async () => {
    const server = await refusingServer(() => 401);
    const c = new WebSocketConnector(`${server.url}?key=SECRET`, { retry: { ...FAST, maxClientErrorAttempts: 2 }, onRetry: () => {} });
    const err = await take(c.stream(), 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorHttpError);
    expect((err as Error).message).toMatch(/^WebSocket ws:\/\/127\.0\.0\.1:\d+\/\?…: HTTP 401 Unauthorized — the server wants credentials/);
    expect((err as Error).message).not.toContain("SECRET");
    expect(server.attempts()).toBe(2);
  });

  it("pings, and reconnects when pongs stop coming", async () => {
    const server = await feedServer({
      autoPong: false,
      onSubscribe: (c, n) => c.ws.send(JSON.stringify({ conn: n })),
    });
    const c = new WebSocketConnector(server.url, { subscribeMessage: {}, pingIntervalMs: 100, retry: FAST, onRetry: () => {} });
    const got = await take(c.stream(), 2);
    expect(got).toEqual([{ conn: 1 }, { conn: 2 }]);
    expect(c.stats().stalls).toBeGreaterThanOrEqual(1);
    expect(c.stats().lastError).toMatch(/no pong or message within 100 ms; reconnecting/);
  });

  it("keeps a quiet but healthy link (pongs answered) open", async () => {
    const server = await feedServer({ onSubscribe: () => {} });
    const c = new WebSocketConnector(server.url, { subscribeMessage: {}, pingIntervalMs: 30 });
    expect(await c.take(400)).toBe(WS_IDLE);
    expect(c.stats()).toMatchObject({ connects: 1, stalls: 0 });
    await c.close();
  });
});

describe("WebSocket bounded buffer (I5)", () => {
  const TOTAL = 5000;
  const flood = (c: Conn) => {
    for (let i = 0; i < TOTAL; i++) c.ws.send(JSON.stringify({ i, pad: "x".repeat(50) }));
  };

  it("block: pauses reading when full, loses nothing, resumes as the consumer catches up", async () => {
    const server = await feedServer({ onSubscribe: flood });
    const c = new WebSocketConnector(server.url, { subscribeMessage: {}, maxBuffered: 100, overflow: "block" });
    const first = await c.take();
    expect(first).not.toBe(WS_IDLE);
    await until(() => c.stats().paused, "the reader to pause");
    // Bounded: the buffer, plus at most what one socket read had already decoded.
    const s = c.stats();
    expect(s.buffered).toBeLessThan(TOTAL / 4);
    expect(s.received).toBeLessThan(TOTAL);
    const seen = [(first as WebSocketMessage).data];
    while (seen.length < TOTAL) {
      const m = await c.take(10_000);
      if (typeof m !== "object") throw new Error(`stream ended early after ${seen.length}`);
      seen.push(m.data);
    }
    expect(seen.map((d) => (JSON.parse(d as string) as { i: number }).i)).toEqual([...Array(TOTAL).keys()]);
    expect(c.stats()).toMatchObject({ dropped: 0, paused: false });
    expect(c.stats().pauses).toBeGreaterThanOrEqual(1);
    await c.close();
  });

  it("drop-oldest: keeps the newest maxBuffered messages and counts the rest", async () => {
    const server = await feedServer({ onSubscribe: flood });
    const c = new WebSocketConnector(server.url, { subscribeMessage: {}, maxBuffered: 50, overflow: "drop-oldest" });
    expect(await c.take(0)).toBe(WS_IDLE);
    await until(() => c.stats().received === TOTAL, "every message to arrive");
    expect(c.stats()).toMatchObject({ buffered: 50, dropped: TOTAL - 50, paused: false });
    const kept: number[] = [];
    for (let m = await c.take(0); typeof m === "object"; m = await c.take(0)) kept.push((JSON.parse(m.data as string) as { i: number }).i);
    expect(kept).toEqual([...Array(50).keys()].map((k) => TOTAL - 50 + k));
    await c.close();
  });

  it("fail: hands over what was buffered, then ends with BufferOverflowError", async () => {
    const server = await feedServer({ onSubscribe: flood });
    const c = new WebSocketConnector(server.url, { subscribeMessage: {}, maxBuffered: 20, overflow: "fail" });
    const got: unknown[] = [];
    const err = await (async () => {
      await c.take(0);
      await until(() => c.stats().lastError !== undefined, "the overflow");
      for await (const m of c.stream()) got.push(m);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BufferOverflowError);
    expect((err as Error).message).toMatch(/receive buffer is full \(20 messages/);
    expect(got).toHaveLength(20);
  });

  it("rejects an unknown overflow policy, naming the choices", () => {
    expect(() => new WebSocketConnector("ws://127.0.0.1:1/", { overflow: "spill" as never })).toThrow(
      /overflow: expected one of block, drop-oldest, fail; got "spill"/,
    );
  });
});

describe("WebSocket through StreamSink into a merge target", () => {
  it("a feed that drops mid-stream, repeats and sends garbage ends with every order exactly once", async () => {
    const N = 400;
    // A snapshot-style feed: each subscription replays the orders from the start, then the
    // connection is dropped partway (except the last), some orders are sent twice, and
    // garbage is mixed in.
    const dropAt = [120, 260, 330];
    let sent = 0;
    let finished = false;
    const server = await feedServer({
      onSubscribe: (c, n) => {
        const stopAt = dropAt[n - 1] ?? N;
        for (let i = 0; i < stopAt; i++) {
          c.ws.send(JSON.stringify(orderEvent(i)));
          sent++;
          if (i % 50 === 7) {
            c.ws.send(JSON.stringify(orderEvent(i)));
            sent++;
          }
        }
        if (n === 1) {
          c.ws.send("garbage, not JSON");
          c.ws.send(Buffer.from([0xc3, 0x28]), { binary: true });
          sent += 2;
        }
        if (stopAt < N) setImmediate(() => c.ws.terminate());
        else finished = true;
      },
    });
    const lake = mkdtempSync(join(tmpdir(), "lakelogic-ws-"));
    dirs.push(lake);
    const source = new WebSocketSource(server.url, { subscribeMessage: { op: "subscribe" }, maxBuffered: 64, retry: FAST, onRetry: () => {} });
    const stop = new AbortController();
    const summary = await new StreamSink(contractPath, source, {
      targetPath: lake,
      checkpoint: join(lake, "ckpt.sqlite"),
      batchSize: 50,
      maxWaitMs: 100,
      signal: stop.signal,
      handleSignals: false,
      // Stop once everything the feed sent has been received and committed.
      onBatch: () => {
        const s = source.stats();
        if (finished && s.received === sent && s.buffered === 0) stop.abort();
      },
    }).run("continuous");
    expect(summary.stoppedBy).toBe("signal");
    expect(summary.cursor).toBeNull();
    expect(summary.sourceCount).toBe(sent);
    expect(server.conns).toHaveLength(4);

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
    expect(new Set(badIds)).toEqual(new Set([...Array(N).keys()].filter((i) => isBadOrder(i))));
    // Garbage is quarantined, not dropped: the text with its record, the bytes with a decode error.
    expect(q.filter((r) => (r.record as { data?: unknown } | undefined)?.data === "garbage, not JSON")).toHaveLength(1);
    expect(q.filter((r) => r.ruleIds.includes("decode") && r.rawEncoding === "base64")).toHaveLength(1);
  });

  it("builds from a JSON source config and drains with available_now (discouraged: STREAM-004)", async () => {
    const server = await feedServer({
      onSubscribe: (c, _n, msg) => {
        for (let i = 0; i < 30; i++) c.ws.send(JSON.stringify({ ...orderEvent(i), echo: undefined }));
        expect(msg).toEqual({ type: "subscribe", product_ids: ["BTC-USD"] });
      },
    });
    const lake = mkdtempSync(join(tmpdir(), "lakelogic-ws-"));
    dirs.push(lake);
    const source = await createSource({
      type: "websocket",
      url: server.url,
      subscribe_message: { type: "subscribe", product_ids: ["BTC-USD"] },
      overflow: "block",
      drain_idle_ms: 500,
    });
    expect(source).toBeInstanceOf(WebSocketSource);
    const summary = await new StreamSink(contractPath, source, { targetPath: lake, checkpoint: "memory", batchSize: 10 }).run("available_now");
    expect(summary.sourceCount).toBe(30);
    await expect(createSource({ type: "websocket", url: server.url, overflow: "spill" })).rejects.toThrow(
      /source websocket: overflow: expected one of block, drop-oldest, fail/,
    );
  });
});
