/**
 * The HTTP polling source against a real loopback server: conditional requests, Retry-After,
 * records paths, array rows, the watermark cursor across a restart, the response limits, and the
 * JSON config's secret rules. Waits go through a fake clock, so nothing depends on timing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ConnectorGaveUpError, ConnectorHttpError, createSource, HttpPollSource, HttpResponseError } from "../../src/sources/connectors.js";
import type { HttpPollOptions } from "../../src/sources/http/spec.js";
import type { SourceRecord } from "../../src/sources/core/types.js";
import { ConfigError } from "../../src/errors.js";
import { conditionalJson, FakeClock, PollServer, type Answer, type SeenRequest } from "./http-server.js";

const servers: PollServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

async function serve(handler: (req: SeenRequest, n: number) => Answer): Promise<PollServer> {
  const s = await new PollServer(handler).start();
  servers.push(s);
  return s;
}

async function drain(source: HttpPollSource, mode: "available_now" | "continuous" = "available_now", signal = new AbortController().signal): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  for await (const r of source.read({ mode, signal })) out.push(r);
  return out;
}

const quiet: Pick<HttpPollOptions, "onRetry" | "random"> = { onRetry: () => {}, random: () => 0 };

const quake = (id: string, updated: number) => ({ type: "Feature", id, properties: { mag: 1.2, updated, time: updated - 1000 } });

describe("http source: polling", () => {
  it("reads the records at recordsPath and keeps the response's validators as the cursor", async () => {
    const s = await serve(conditionalJson(() => ({ type: "FeatureCollection", features: [quake("a", 10), quake("b", 20)] })));
    const source = new HttpPollSource(s.url(), { recordsPath: "features", clock: new FakeClock() });
    const records = await drain(source);
    expect(records.map((r) => (r.value as { id: string }).id)).toEqual(["a", "b"]);
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]!.headers["if-none-match"]).toBeUndefined();
    const cursor = source.currentCursor() as { etag: string; lastModified: string };
    expect(cursor.etag).toMatch(/^"[0-9a-f]+"$/);
    expect(cursor.lastModified).toBe("Wed, 02 Dec 2026 10:00:00 GMT");
  });

  it("sends If-None-Match / If-Modified-Since from the stored cursor; a 304 is nothing new", async () => {
    const s = await serve(conditionalJson(() => ({ features: [quake("a", 10)] })));
    const first = new HttpPollSource(s.url(), { recordsPath: "features", clock: new FakeClock() });
    await drain(first);
    const restarted = new HttpPollSource(s.url(), { recordsPath: "features", clock: new FakeClock() });
    await restarted.seek(first.currentCursor());
    expect(await drain(restarted)).toEqual([]);
    expect(s.seen[1]!.headers["if-none-match"]).toBe((first.currentCursor() as { etag: string }).etag);
    expect(s.seen[1]!.headers["if-modified-since"]).toBe("Wed, 02 Dec 2026 10:00:00 GMT");
  });

  it("treats a 200 carrying the ETag it already has as nothing new (a server that ignores If-None-Match)", async () => {
    const s = await serve(() => ({ headers: { etag: '"v1"' }, body: JSON.stringify([{ id: 1 }]) }));
    const source = new HttpPollSource(s.url(), { clock: new FakeClock() });
    await source.seek({ etag: '"v1"' });
    expect(await drain(source)).toEqual([]);
  });

  it("continuous: polls every interval, measured from the start of each poll, until stopped", async () => {
    // Polls 1 and 2 see the same document (the second gets a 304), poll 3 a new one.
    const s = await serve(conditionalJson(() => ({ features: [s.seen.length >= 3 ? quake("q2", 2) : quake("q1", 1)] })));
    const clock = new FakeClock();
    const source = new HttpPollSource(s.url(), { recordsPath: "features", interval: "60 seconds", clock });
    const stop = new AbortController();
    const ids: string[] = [];
    for await (const r of source.read({ mode: "continuous", signal: stop.signal })) {
      ids.push((r.value as { id: string }).id);
      clock.nowMs += 5000; // the batch took 5 s
      if (ids.length === 2) stop.abort();
    }
    expect(ids).toEqual(["q1", "q2"]);
    expect(s.seen.map((r) => r.headers["if-none-match"] !== undefined)).toEqual([false, true, true]);
    expect(clock.sleeps[0]).toBe(55_000);
    expect(clock.sleeps[1]).toBe(60_000);
  });

  it("accepts interval as text and intervalMs, and refuses both or a bad one naming the option", async () => {
    await expect(createSource({ type: "http", url: "http://127.0.0.1:1/x", interval: "soon" })).rejects.toThrow(/interval.*"60 seconds"/);
    await expect(createSource({ type: "http", url: "http://127.0.0.1:1/x", interval: "5s", interval_ms: 5000 })).rejects.toThrow(ConfigError);
    await expect(createSource({ type: "http", url: "http://127.0.0.1:1/x", interval: "5s" })).resolves.toBeInstanceOf(HttpPollSource);
  });
});

describe("http source: failures", () => {
  it("waits out Retry-After (seconds) on 429 and an HTTP date on 503, then reads", async () => {
    const clock = new FakeClock();
    const retryAt = new Date(clock.nowMs + 42_000).toUTCString();
    const s = await serve((_req, n) =>
      n === 0 ? { status: 429, headers: { "retry-after": "7" } } : n === 1 ? { status: 503, headers: { "retry-after": retryAt } } : { body: "[{\"id\":1}]" },
    );
    const source = new HttpPollSource(s.url(), { clock, ...quiet, retry: { initialDelayMs: 10, maxDelayMs: 20 } });
    expect(await drain(source)).toHaveLength(1);
    expect(clock.sleeps[0]).toBe(7000);
    // The date is 42 s after the first answer; 7 s of it have passed.
    expect(clock.sleeps[1]).toBe(35_000);
  });

  it("gives up after retry.maxAttempts on a server that keeps failing", async () => {
    const s = await serve(() => ({ status: 500, body: "boom" }));
    const clock = new FakeClock();
    const source = new HttpPollSource(s.url(), { clock, ...quiet, retry: { maxAttempts: 3 } });
    await expect(drain(source)).rejects.toBeInstanceOf(ConnectorGaveUpError);
    expect(s.seen).toHaveLength(3);
    expect(clock.sleeps).toEqual([1000, 2000]);
  });

  it("an unreachable server is an error, not an empty poll", async () => {
    const s = await serve(() => ({}));
    const url = s.url();
    await s.stop();
    servers.length = 0;
    const source = new HttpPollSource(url, { clock: new FakeClock(), ...quiet, retry: { maxAttempts: 2 } });
    await expect(drain(source)).rejects.toThrow(/gave up after 2 failed/);
  });

  it("fails at once on a 404 (no retry)", async () => {
    const s = await serve(() => ({ status: 404, body: "no such feed" }));
    const source = new HttpPollSource(s.url(), { clock: new FakeClock(), ...quiet });
    const err = await drain(source).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorHttpError);
    expect(s.seen).toHaveLength(1);
  });

  it("a body that is not JSON fails the poll, naming the URL without its query secrets", async () => {
    const s = await serve(() => ({ headers: { "content-type": "text/html" }, body: "<html>maintenance</html>" }));
    const source = new HttpPollSource(s.url("/feed?token=s3cr3t-value"), { clock: new FakeClock() });
    const err = (await drain(source).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(HttpResponseError);
    expect(err.message).toMatch(/not JSON \(text\/html/);
    expect(err.message).toContain("127.0.0.1");
    expect(err.message).not.toContain("s3cr3t-value");
  });

  it("refuses a response over maxResponseBytes, naming the option", async () => {
    const big = JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ id: i, pad: "x".repeat(20) })));
    const s = await serve(() => ({ body: big }));
    const source = new HttpPollSource(s.url(), { clock: new FakeClock(), maxResponseBytes: 1024 });
    await expect(drain(source)).rejects.toThrow(/larger than maxResponseBytes \(1024 bytes\)/);
  });

  it("a recordsPath the response lacks fails the poll; null there is no records", async () => {
    const s = await serve((_r, n) => ({ body: JSON.stringify(n === 0 ? { time: 1 } : { time: 1, states: null }) }));
    const source = new HttpPollSource(s.url(), { recordsPath: "states", clock: new FakeClock() });
    await expect(drain(source)).rejects.toThrow(/nothing at recordsPath "states"/);
    expect(await drain(source)).toEqual([]);
  });
});

describe("http source: records", () => {
  it("names array rows with fields; a row that is not an array is quarantined", async () => {
    const body = { time: 1, states: [["3c6444", "DLH9LF  ", "Germany", 1, 2], "junk"] };
    const s = await serve(() => ({ body: JSON.stringify(body) }));
    const source = new HttpPollSource(s.url(), { recordsPath: "states", fields: ["icao24", "callsign", "origin_country"], clock: new FakeClock() });
    const [good, bad] = await drain(source);
    expect(good!.value).toEqual({ icao24: "3c6444", callsign: "DLH9LF  ", origin_country: "Germany" });
    expect(bad!.decodeError).toMatch(/not a JSON array/);
    expect(bad!.raw).toBe('"junk"');
  });

  it("quarantines a row that is not an object when no fields are given", async () => {
    const s = await serve(() => ({ body: JSON.stringify([{ id: 1 }, 7, [1, 2]]) }));
    const records = await drain(new HttpPollSource(s.url(), { clock: new FakeClock() }));
    expect(records.map((r) => r.decodeError ?? "ok")).toEqual(["ok", expect.stringMatching(/not a JSON object/), expect.stringMatching(/name its positions with `fields`/)]);
  });

  it("watermark: hands records over in order and a restart skips those at or below the committed one", async () => {
    let features = [quake("c", 30), quake("a", 10), quake("b", 20)];
    const s = await serve(() => ({ body: JSON.stringify({ features }) }));
    const opts = { recordsPath: "features", watermark: "properties.updated", clock: new FakeClock() };
    const first = new HttpPollSource(s.url(), opts);
    const seen: string[] = [];
    const cursors: unknown[] = [];
    for await (const r of first.read({ mode: "available_now", signal: new AbortController().signal })) {
      seen.push((r.value as { id: string }).id);
      cursors.push(first.currentCursor());
    }
    expect(seen).toEqual(["a", "b", "c"]);
    expect(cursors).toEqual([{ watermark: 10 }, { watermark: 20 }, { watermark: 30 }]);
    // The feed moves on: "b" was updated again, "d" is new; "a" and "c" are unchanged.
    features = [quake("d", 40), quake("b", 35), quake("c", 30), quake("a", 10)];
    const restarted = new HttpPollSource(s.url(), opts);
    await restarted.seek(first.currentCursor());
    expect((await drain(restarted)).map((r) => (r.value as { id: string }).id)).toEqual(["b", "d"]);
    expect(restarted.currentCursor()).toEqual({ watermark: 40 });
  });

  it("watermark: the cursor does not pass a value until every record holding it was handed over", async () => {
    const s = await serve(() => ({ body: JSON.stringify([{ id: 1, t: 5 }, { id: 2, t: 7 }, { id: 3, t: 7 }, { id: 4 }]) }));
    const source = new HttpPollSource(s.url(), { watermark: "t", clock: new FakeClock() });
    const trail: Array<[unknown, unknown]> = [];
    for await (const r of source.read({ mode: "available_now", signal: new AbortController().signal })) trail.push([(r.value as { id: number }).id, source.currentCursor()]);
    // Records without a watermark first; then 5; the first 7 leaves the cursor at 5.
    expect(trail).toEqual([[4, {}], [1, { watermark: 5 }], [2, { watermark: 5 }], [3, { watermark: 7 }]]);
  });

  it("watermark: 64-bit ids (beyond 2^53) order exactly, and the records keep every digit", async () => {
    // Three snowflake-like ids one apart: JSON.parse would make the first two one value.
    const body = '[{"id":9007199254740994,"n":3},{"id":9007199254740992,"n":1},{"id":9007199254740993,"n":2}]';
    const s = await serve(() => ({ body }));
    const source = new HttpPollSource(s.url(), { watermark: "id", clock: new FakeClock() });
    const got = await drain(source);
    expect(got.map((r) => (r.value as { id: unknown }).id)).toEqual([9007199254740992n, 9007199254740993n, 9007199254740994n]);
    expect(got.map((r) => r.raw)).toEqual(['{"id":9007199254740992,"n":1}', '{"id":9007199254740993,"n":2}', '{"id":9007199254740994,"n":3}']);
    expect(source.currentCursor()).toEqual({ watermark: 9007199254740994n });
    // A restart from that cursor has nothing new, however the feed re-sends the same ids.
    const restarted = new HttpPollSource(s.url(), { watermark: "id", clock: new FakeClock() });
    await restarted.seek(source.currentCursor());
    expect(await drain(restarted)).toEqual([]);
  });

  it("watermark: a value that is neither a number nor a time does not move the cursor", async () => {
    const s = await serve(() => ({ body: JSON.stringify([{ id: 1, at: "2026-12-04T10:00:00Z" }, { id: 2, at: "yesterday" }]) }));
    const source = new HttpPollSource(s.url(), { watermark: "at", clock: new FakeClock() });
    expect((await drain(source)).map((r) => (r.value as { id: number }).id)).toEqual([2, 1]);
    expect(source.currentCursor()).toEqual({ watermark: "2026-12-04T10:00:00Z" });
  });

  it("refuses a stored cursor of another kind of source", async () => {
    const source = new HttpPollSource("http://127.0.0.1:1/x");
    await expect(source.seek("42")).rejects.toThrow(/not an HTTP poll position/);
    await expect(source.seek({ partitions: [] })).rejects.toThrow(/not an HTTP poll position/);
  });
});

describe("http source: JSON config", () => {
  it("refuses a literal credential header and sends an env: one", async () => {
    await expect(createSource({ type: "http", url: "http://127.0.0.1:1/x", headers: { Authorization: "Bearer abcdef123" } })).rejects.toThrow(
      /Bearer \$\{ENV:HTTP_HEADERS_AUTHORIZATION\}/,
    );
    const s = await serve(() => ({ body: "[]" }));
    process.env["LAKELOGIC_TEST_HTTP_TOKEN"] = "tok-123456";
    try {
      const source = (await createSource({ type: "http", url: s.url(), headers: { Authorization: "Bearer ${ENV:LAKELOGIC_TEST_HTTP_TOKEN}", "User-Agent": "lakelogic-test" } })) as HttpPollSource;
      expect(await drain(source)).toEqual([]);
    } finally {
      delete process.env["LAKELOGIC_TEST_HTTP_TOKEN"];
    }
    expect(s.seen[0]!.headers["authorization"]).toBe("Bearer tok-123456");
    expect(s.seen[0]!.headers["user-agent"]).toBe("lakelogic-test");
  });

  it("takes records_path and fields in snake_case", async () => {
    const s = await serve(() => ({ body: JSON.stringify({ data: { rows: [[1, "x"]] } }) }));
    const source = (await createSource({ type: "http", url: s.url(), records_path: "data.rows", fields: "n,name" })) as HttpPollSource;
    expect((await drain(source)).map((r) => r.value)).toEqual([{ n: 1, name: "x" }]);
  });
});
