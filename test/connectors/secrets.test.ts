import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WebSocketServer } from "ws";
import { ConfigError } from "../../src/errors.js";
import { createSource } from "../../src/sources/connectors.js";
import type { RetryInfo } from "../../src/sources/core/backoff.js";
import { ConnectorHttpError } from "../../src/sources/core/errors.js";
import type { CursorSource, Source } from "../../src/sources/core/types.js";
import { SSEConnector } from "../../src/sources/sse/client.js";
import { WebSocketConnector } from "../../src/sources/websocket/client.js";

const SECRETS = /hunter2|s3cr3t|YWRtaW46aHVudGVyMg/;
const FAST = { initialDelayMs: 1, maxDelayMs: 2, jitter: 0 };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A port nothing listens on: bound once by us, then released. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

async function httpServer(handler: RequestListener): Promise<number> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

/** Everything an error can show: message, stack, and its causes'. */
function everything(err: unknown, depth = 0): string {
  if (depth > 5 || err === undefined || err === null) return "";
  if (!(err instanceof Error)) return JSON.stringify(err) ?? "";
  return `${err.message}\n${err.stack ?? ""}\n${JSON.stringify(err)}\n${everything((err as { cause?: unknown }).cause, depth + 1)}`;
}

/** Runs `body` with stderr captured (the default retry warnings go there). */
async function withStderr(body: () => Promise<void>): Promise<string> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    await body();
  } finally {
    spy.mockRestore();
  }
  return written.join("");
}

async function readAll(source: Source): Promise<void> {
  for await (const _ of (source as CursorSource).read({ mode: "available_now", signal: new AbortController().signal })) {
    // Nothing arrives from a closed port.
  }
}

describe("SSE never shows credentials", () => {
  it("refuses a URL with user-info at once, as a ConfigError on `url` that does not echo it", async () => {
    const port = await closedPort();
    const url = `http://admin:hunter2@127.0.0.1:${port}/stream?token=s3cr3t`;
    let error: unknown;
    let description = "";
    const stderr = await withStderr(async () => {
      try {
        const source = await createSource({ type: "sse", url, retry: { ...FAST, maxAttempts: 2 } });
        description = source.description;
        await readAll(source);
      } catch (err) {
        error = err;
      }
    });
    expect(everything(error)).not.toMatch(SECRETS);
    expect(stderr).not.toMatch(SECRETS);
    expect(description).not.toMatch(SECRETS);
    expect(error).toBeInstanceOf(ConfigError);
    // A JSON config is refused for carrying the credential at all; code is refused for user-info.
    expect((error as ConfigError).option).toMatch(/url$/);
    expect((error as ConfigError).message).toMatch(/a URL with a credential/);
    expect(() => new SSEConnector(url)).toThrow(/headers/);
  });

  it("shows neither query tokens nor header credentials while reconnecting to a closed port", async () => {
    const port = await closedPort();
    const retries: RetryInfo[] = [];
    const c = new SSEConnector(`http://127.0.0.1:${port}/stream?token=s3cr3t&sig=s3cr3t`, {
      headers: { Authorization: "Bearer hunter2" },
      retry: { ...FAST, maxAttempts: 3 },
      onRetry: (info) => retries.push(info),
    });
    const error = await (async () => {
      for await (const _ of c.events()) {
        // none
      }
    })().catch((err: unknown) => err);
    expect(retries.length).toBe(2);
    for (const r of retries) expect(everything(r.error)).not.toMatch(SECRETS);
    expect(everything(error)).not.toMatch(SECRETS);
    expect(c.stats().lastError).not.toMatch(SECRETS);
    expect(String(c.stats().lastError)).toMatch(/cannot connect/);
  });

  it("does not repeat a server's error body that echoes the token or the Authorization header", async () => {
    const port = await httpServer((req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: `token ${new URL(req.url ?? "/", "http://x").searchParams.get("token")} refused`, got: req.headers.authorization }));
    });
    const c = new SSEConnector(`http://127.0.0.1:${port}/stream?token=s3cr3t`, {
      headers: { authorization: "Bearer hunter2" },
      retry: { ...FAST, maxClientErrorAttempts: 1 },
    });
    const error = await (async () => {
      for await (const _ of c.events()) {
        // none
      }
    })().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConnectorHttpError);
    expect(everything(error)).not.toMatch(SECRETS);
    expect((error as Error).message).toMatch(/HTTP 401/);
    expect((error as Error).message).toMatch(/refused/);
  });
});

describe("WebSocket never shows credentials", () => {
  it("keeps basic auth from the URL's user-info working, and never prints it", async () => {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
    cleanups.push(async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    });
    const seen: Array<string | undefined> = [];
    wss.on("connection", (ws, req) => {
      seen.push(req.headers.authorization);
      ws.send(JSON.stringify({ hello: 1 }));
    });
    const port = (wss.address() as AddressInfo).port;
    // In a JSON config the secret parts are references, resolved where the source opens.
    process.env.LL_TEST_WS_PASSWORD = "hunter2";
    process.env.LL_TEST_WS_TOKEN = "s3cr3t";
    cleanups.push(async () => {
      delete process.env.LL_TEST_WS_PASSWORD;
      delete process.env.LL_TEST_WS_TOKEN;
    });
    const source = await createSource({ type: "websocket", url: `ws://admin:\${ENV:LL_TEST_WS_PASSWORD}@127.0.0.1:${port}/feed?token=\${ENV:LL_TEST_WS_TOKEN}` });
    cleanups.push(async () => {
      await source.close?.();
    });
    expect(source.description).not.toMatch(SECRETS);
    const got = [];
    for await (const r of (source as CursorSource).read({ mode: "continuous", signal: new AbortController().signal })) {
      got.push(r.value);
      break;
    }
    expect(got).toEqual([{ hello: 1 }]);
    expect(seen).toEqual([`Basic ${Buffer.from("admin:hunter2").toString("base64")}`]);
  });

  it("shows no credentials while reconnecting to a closed port", async () => {
    const port = await closedPort();
    const retries: RetryInfo[] = [];
    const c = new WebSocketConnector(`ws://admin:hunter2@127.0.0.1:${port}/feed?token=s3cr3t`, {
      retry: { ...FAST, maxAttempts: 3 },
      onRetry: (info) => retries.push(info),
    });
    const error = await c.take().catch((err: unknown) => err);
    expect(retries.length).toBe(2);
    for (const r of retries) expect(everything(r.error)).not.toMatch(SECRETS);
    expect(everything(error)).not.toMatch(SECRETS);
    expect(c.stats().lastError).not.toMatch(SECRETS);
    await c.close();
  });

  it("does not repeat a close reason that echoes the token", async () => {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
    cleanups.push(async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    });
    wss.on("connection", (ws, req) => {
      ws.close(4001, `bad token=${new URL(req.url ?? "/", "http://x").searchParams.get("token")}`);
    });
    const port = (wss.address() as AddressInfo).port;
    const retries: RetryInfo[] = [];
    const c = new WebSocketConnector(`ws://127.0.0.1:${port}/feed?token=s3cr3t`, {
      headers: { authorization: "Bearer hunter2" },
      retry: { ...FAST, maxAttempts: 2 },
      onRetry: (info) => retries.push(info),
    });
    const error = await c.take().catch((err: unknown) => err);
    expect(retries.length).toBe(1);
    expect(retries[0]!.error.message).toMatch(/code 4001/);
    for (const r of retries) expect(everything(r.error)).not.toMatch(SECRETS);
    expect(everything(error)).not.toMatch(SECRETS);
    await c.close();
  });
});

describe("WebSocket URLs ws refuses", () => {
  it("a fragment is a ConfigError at once, not a read that never ends", () => {
    expect(() => new WebSocketConnector("ws://127.0.0.1:1/feed#part")).toThrow(ConfigError);
  });

  it("an invalid sub-protocol fails the read instead of leaving it waiting", async () => {
    const c = new WebSocketConnector("ws://127.0.0.1:1/feed", { protocols: ["bad protocol"] });
    const error = await c.take().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    await c.close();
  });
});
