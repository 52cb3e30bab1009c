/**
 * The contracts of examples/public/, each run with `lakelogic run` against its recorded sample
 * (examples/public/samples/, written from the providers' documented message formats) replayed by
 * a loopback server that speaks the real protocol: SSE with event ids and Last-Event-ID resume,
 * WebSocket with a subscribe message or a `cursor` query, HTTP with ETag / 304 and Retry-After.
 * Only the source URL is overridden (`--source`); nothing reaches the internet.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { runStream } from "../../src/cli/commands/run.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { streamRunSettings } from "../../src/sources/index.js";
import { ScriptedSSEServer, type LogEvent } from "../connectors/sse-server.js";
import { conditionalJson, PollServer, type Answer, type SeenRequest } from "../sources/http-server.js";

const DIR = resolve("examples/public");
const SAMPLES = join(DIR, "samples");
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-public-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

type Summary = { sourceCount: number; goodCount: number; badCount: number; supersededCount: number };

/** `lakelogic run examples/public/<name>.yaml --source <its source, url replaced>` into `lake`. */
async function run(name: string, lake: string, source: Record<string, unknown>, extra: string[] = []): Promise<Summary> {
  const contract = await loadContract(join(DIR, `${name}.yaml`));
  const declared = streamRunSettings(contract).source!;
  let out = "";
  let err = "";
  const code = await runStream([join(DIR, `${name}.yaml`), "--source", JSON.stringify({ ...declared, ...source }), "--target-path", lake, "--mode", "available_now", "--json", ...extra], {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
  });
  expect(code, err).toBe(0);
  return JSON.parse(out.trim().split("\n").pop()!) as Summary;
}

async function lakeOf(name: string, lake: string): Promise<{ rows: Array<Record<string, unknown>>; bad: number }> {
  const contract = await loadContract(join(DIR, `${name}.yaml`));
  return { rows: await readTable(contract, { targetPath: lake }), bad: (await readQuarantine(contract, { targetPath: lake })).length };
}

const lines = (file: string) => readFileSync(join(SAMPLES, file), "utf8").split("\n").filter((l) => l.trim() !== "");
const keysOf = (rows: Array<Record<string, unknown>>, ...key: string[]) => rows.map((r) => key.map((k) => String(r[k])).join("/"));
const fast = { retry: { initialDelayMs: 20, maxDelayMs: 50 }, drain_idle_ms: 400 };

/** The recorded SSE stream as the events it holds. */
function sseEvents(file: string): LogEvent[] {
  return readFileSync(join(SAMPLES, file), "utf8")
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((block) => {
      const e: LogEvent = {};
      for (const line of block.split("\n")) {
        const [field, ...rest] = line.split(": ");
        const value = rest.join(": ");
        if (field === "id") e.id = value;
        else if (field === "event") e.event = value;
        else if (field === "data") e.data = value;
      }
      return e;
    });
}

/** A WebSocket server on loopback; `onConnection` plays one connection's part. */
async function wsServer(onConnection: (ws: WebSocket, req: IncomingMessage, n: number) => void): Promise<{ url: string; connections: IncomingMessage[] }> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((ok) => wss.once("listening", () => ok()));
  const connections: IncomingMessage[] = [];
  wss.on("connection", (ws, req) => {
    connections.push(req);
    onConnection(ws, req, connections.length - 1);
  });
  stops.push(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((ok) => wss.close(() => ok()));
  });
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, connections };
}

/** Send `messages`; with `dropAfter`, cut the connection (no close frame) after that many. */
function play(ws: WebSocket, messages: string[], dropAfter?: number): void {
  const n = dropAfter === undefined ? messages.length : Math.min(dropAfter, messages.length);
  for (const m of messages.slice(0, n)) ws.send(m);
  if (dropAfter !== undefined) setImmediate(() => ws.terminate());
}

async function pollServer(handler: (req: SeenRequest, n: number) => Answer): Promise<PollServer> {
  const s = await new PollServer(handler).start();
  stops.push(() => s.stop());
  return s;
}

describe("examples/public over SSE", () => {
  it("wikimedia_recentchange: resumes by Last-Event-ID after a drop and after a stop, without duplicates", async () => {
    const log = sseEvents("wikimedia_recentchange.sse");
    expect(log).toHaveLength(30);
    // The second connection (the second run's first; the plan counts from 1) breaks off halfway through its 9th event.
    const server = new ScriptedSSEServer(log, (n) => (n === 2 ? { dropAfter: 8 } : {}));
    await server.start();
    stops.push(() => server.stop());
    const lake = join(tmp, "wikimedia");
    const source = { url: server.url, ...fast };

    const first = await run("wikimedia_recentchange", lake, source, ["--batch-size", "10", "--max-batches", "1"]);
    expect(first.sourceCount).toBe(10);
    const second = await run("wikimedia_recentchange", lake, source);
    expect(server.seen[1]!.lastEventId).toBe(log[9]!.id);
    expect(server.seen[2]!.lastEventId).toBe(log[17]!.id);
    expect(second.sourceCount).toBe(20);

    server.append(sseEvents("wikimedia_recentchange.sse").slice(0, 3).map((e, i) => ({ ...e, id: `${e.id}-next${i}`, data: e.data!.replace(/"id":(\d+),"type"/, (_m, id: string) => `"id":${Number(id) + 1000},"type"`) })));
    const third = await run("wikimedia_recentchange", lake, source);
    expect(server.seen.at(-1)!.lastEventId).toBe(log[29]!.id);
    expect(third.sourceCount).toBe(3);

    const { rows, bad } = await lakeOf("wikimedia_recentchange", lake);
    expect(rows).toHaveLength(31);
    expect(new Set(keysOf(rows, "id")).size).toBe(31);
    expect(bad).toBe(2);
  });
});

describe("examples/public over WebSocket", () => {
  it("coinbase_ticker: subscribes on every connection; a drop loses nothing the server still sends", async () => {
    const tickers = lines("coinbase_ticker.ndjson");
    const [confirmation, ...feed] = tickers;
    const subscribes: unknown[] = [];
    const server = await wsServer((ws, _req, n) => {
      ws.on("message", (m: Buffer) => {
        subscribes.push(JSON.parse(m.toString("utf8")));
        // No replay: the second connection gets only what follows the drop.
        play(ws, [confirmation!, ...(n === 0 ? feed.slice(0, 12) : feed.slice(12))], n === 0 ? 13 : undefined);
      });
    });
    const lake = join(tmp, "coinbase");
    const summary = await run("coinbase_ticker", lake, { url: server.url, ...fast });
    expect(subscribes).toEqual([
      { type: "subscribe", product_ids: ["BTC-USD", "ETH-USD"], channels: ["ticker"] },
      { type: "subscribe", product_ids: ["BTC-USD", "ETH-USD"], channels: ["ticker"] },
    ]);
    // 24 tickers (one with price "n/a") and the confirmation once per connection.
    expect(summary).toMatchObject({ sourceCount: 26, goodCount: 23, badCount: 3 });
    const { rows } = await lakeOf("coinbase_ticker", lake);
    expect(new Set(keysOf(rows, "product_id", "sequence")).size).toBe(23);
    expect(rows.every((r) => /^\d+\.\d{8}$/.test(String(r["price"])))).toBe(true);
  });

  it("binance_trades: reads one-letter keys through aliases; a trade sent twice merges onto itself", async () => {
    const trades = lines("binance_trades.ndjson");
    const server = await wsServer((ws, _req, n) => play(ws, n === 0 ? trades.slice(0, 10) : trades.slice(8), n === 0 ? 10 : undefined));
    const lake = join(tmp, "binance");
    const summary = await run("binance_trades", lake, { url: server.url, ...fast });
    expect(server.connections).toHaveLength(2);
    expect(summary.sourceCount).toBe(27);
    expect(summary.badCount).toBe(2);
    const { rows, bad } = await lakeOf("binance_trades", lake);
    expect(rows).toHaveLength(23);
    expect(new Set(keysOf(rows, "symbol", "trade_id")).size).toBe(23);
    expect(Object.keys(rows[0]!)).toEqual(expect.arrayContaining(["trade_id", "trade_time_ms", "event_time_ms", "event_type"]));
    expect(bad).toBe(2);
  });

  it("bluesky_jetstream: the server replays from the URL's cursor; replays merge, a later cursor reads only new events", async () => {
    const events = lines("bluesky_jetstream.ndjson");
    const timeOf = (line: string) => (JSON.parse(line) as { time_us: unknown }).time_us;
    const server = await wsServer((ws, req, n) => {
      const cursor = Number(new URL(req.url!, "ws://x").searchParams.get("cursor") ?? 0);
      // Jetstream plays back from the first event at or after the cursor.
      const from = events.findIndex((e) => typeof timeOf(e) === "number" && (timeOf(e) as number) >= cursor);
      play(ws, from < 0 ? [] : events.slice(from), n === 0 ? 12 : undefined);
    });
    const lake = join(tmp, "jetstream");
    const url = (cursor: number) => `${server.url}/subscribe?wantedCollections=app.bsky.feed.post&cursor=${cursor}`;
    const first = await run("bluesky_jetstream", lake, { url: url(0), ...fast });
    expect(server.connections.map((r) => new URL(r.url!, "ws://x").searchParams.get("cursor"))).toEqual(["0", "0"]);
    expect(first.sourceCount).toBe(36);
    let { rows, bad } = await lakeOf("bluesky_jetstream", lake);
    expect(rows).toHaveLength(22);
    expect(new Set(keysOf(rows, "did", "time_us")).size).toBe(22);

    const last = Math.max(...rows.map((r) => Number(r["time_us"])));
    const more = [1, 2, 3].map((k) => JSON.stringify({ ...(JSON.parse(events[0]!) as object), did: `did:plc:new${k}`, time_us: last + k * 1000 }));
    events.push(...more);
    const second = await run("bluesky_jetstream", lake, { url: url(last), ...fast });
    expect(second.sourceCount).toBe(4);
    ({ rows, bad } = await lakeOf("bluesky_jetstream", lake));
    expect(rows).toHaveLength(25);
    expect(bad).toBeGreaterThanOrEqual(2);
  });
});

describe("examples/public over HTTP polling", () => {
  it("usgs_earthquakes: 429 then data; a re-poll is a 304; a revised quake and a new one are all a later poll writes", async () => {
    const doc = JSON.parse(readFileSync(join(SAMPLES, "usgs_all_hour.geojson"), "utf8")) as { features: Array<{ id: string | null; properties: { updated: number; mag: unknown } }> };
    const feed = conditionalJson(() => doc);
    const server = await pollServer((req, n) => (n === 0 ? { status: 429, headers: { "retry-after": "0" } } : feed(req)));
    const lake = join(tmp, "usgs");
    const source = { url: server.url("/earthquakes/feed/v1.0/summary/all_hour.geojson"), retry: { initialDelayMs: 20, maxDelayMs: 50 } };

    expect(await run("usgs_earthquakes", lake, source)).toMatchObject({ sourceCount: 22, goodCount: 20, badCount: 2 });
    expect(server.seen).toHaveLength(2);
    expect(await run("usgs_earthquakes", lake, source)).toMatchObject({ sourceCount: 0 });
    expect(server.seen[2]!.headers["if-none-match"]).toBeDefined();

    const revised = doc.features[3]!;
    const newest = Math.max(...doc.features.map((f) => f.properties.updated));
    revised.properties.updated = newest + 1000;
    revised.properties.mag = 4.4;
    doc.features.push({ ...structuredClone(doc.features[0]!), id: "nc75009999", properties: { ...doc.features[0]!.properties, updated: revised.properties.updated + 1 } });
    expect(await run("usgs_earthquakes", lake, source)).toMatchObject({ sourceCount: 2, goodCount: 2 });

    const { rows, bad } = await lakeOf("usgs_earthquakes", lake);
    expect(rows).toHaveLength(21);
    expect((rows.find((r) => r["id"] === revised.id)!["properties"] as { mag: number }).mag).toBe(4.4);
    expect(bad).toBe(2);
  });

  it("opensky_states: names array rows with fields; every re-poll merges onto each aircraft", async () => {
    const doc = JSON.parse(readFileSync(join(SAMPLES, "opensky_states_all.json"), "utf8")) as { time: number; states: unknown[] };
    const server = await pollServer((_req, n) => (n === 0 ? { status: 503, headers: { "retry-after": new Date(0).toUTCString() } } : { body: JSON.stringify(doc) }));
    const lake = join(tmp, "opensky");
    const source = { url: server.url("/api/states/all?lamin=45.8&lomin=5.9&lamax=47.8&lomax=10.5"), retry: { initialDelayMs: 20, maxDelayMs: 50 } };
    expect(await run("opensky_states", lake, source)).toMatchObject({ sourceCount: 22, goodCount: 20, badCount: 2 });
    for (const row of doc.states) if (Array.isArray(row)) row[4] = (row[4] as number) + 60;
    expect(await run("opensky_states", lake, source)).toMatchObject({ sourceCount: 22, goodCount: 20 });
    const { rows } = await lakeOf("opensky_states", lake);
    expect(rows).toHaveLength(20);
    expect(rows.every((r) => Number(r["last_contact"]) >= 1733306395 + 60)).toBe(true);
    expect(typeof rows[0]!["on_ground"]).toBe("boolean");
  });

  it("github_events: ETag re-polls are 304s; a later poll writes only the events after the watermark", async () => {
    const events = JSON.parse(readFileSync(join(SAMPLES, "github_events.json"), "utf8")) as Array<Record<string, unknown>>;
    const feed = conditionalJson(() => events);
    const server = await pollServer((req) => feed(req));
    const lake = join(tmp, "github");
    const source = { url: server.url("/events?per_page=100") };
    expect(await run("github_events", lake, source)).toMatchObject({ sourceCount: 21, goodCount: 19, badCount: 2 });
    expect(server.seen[0]!.headers["user-agent"]).toBe("lakelogic-example");
    expect(await run("github_events", lake, source)).toMatchObject({ sourceCount: 0 });
    events.unshift({ ...events[0]!, id: "44500000100", created_at: "2024-12-04T11:00:00Z" }, { ...events[0]!, id: "44500000101", created_at: "2024-12-04T11:00:01Z" });
    // The two new events, and the one whose created_at is no time (never past the watermark, quarantined again).
    expect(await run("github_events", lake, source)).toMatchObject({ sourceCount: 3, goodCount: 2, badCount: 1 });
    const { rows } = await lakeOf("github_events", lake);
    expect(rows).toHaveLength(21);
    expect(new Set(keysOf(rows, "id")).size).toBe(21);
  });
});
