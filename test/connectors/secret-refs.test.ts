import { createHmac } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { createSource } from "../../src/sources/connectors.js";
import { parseOptions, type ComponentSpec } from "../../src/sources/core/spec.js";
import type { ReceivedRecord } from "../../src/sources/core/types.js";
import type { WebhookAckToken, WebhookSource } from "../../src/sources/webhook/source.js";

const spec: ComponentSpec = {
  type: "demo",
  kind: "cursor",
  summary: "A demo connector.",
  options: {
    url: { type: "string", required: true, description: "Where" },
    brokers: { type: "string[]", description: "Brokers" },
    maxBytes: { type: "integer", min: 1, default: 1024, description: "Fetch size" },
    password: { type: "string", secret: true, description: "Password" },
    headers: { type: "object", secret: true, description: "Headers" },
    retry: { type: "object", description: "Not secret" },
  },
};

const saved = new Map<string, string | undefined>();
function setEnv(name: string, value: string | undefined): void {
  if (!saved.has(name)) saved.set(name, process.env[name]);
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
afterEach(() => {
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  saved.clear();
});

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error("expected an error");
}

describe("secrets by reference in source options", () => {
  it("replaces env:NAME and ${ENV:NAME} with the variable's value", () => {
    setEnv("LL_TEST_PW", "hunter2");
    setEnv("LL_TEST_URL", "https://feed.example.com/s");
    setEnv("LL_TEST_TOKEN", "s3cr3t");
    setEnv("LL_TEST_BROKERS", "a:1,b:2");
    setEnv("LL_TEST_MAX", "2048");
    const o = parseOptions(spec, {
      url: "${ENV:LL_TEST_URL}",
      password: "env:LL_TEST_PW",
      brokers: "env:LL_TEST_BROKERS",
      max_bytes: "env:LL_TEST_MAX",
      headers: { Authorization: "Bearer ${ENV:LL_TEST_TOKEN}", "X-Key": "env:LL_TEST_PW" },
    });
    expect(o).toEqual({
      url: "https://feed.example.com/s",
      password: "hunter2",
      brokers: ["a:1", "b:2"],
      maxBytes: 2048,
      headers: { Authorization: "Bearer s3cr3t", "X-Key": "hunter2" },
    });
  });

  it("leaves the input (what a workflow keeps in its history) holding the reference", () => {
    setEnv("LL_TEST_PW", "hunter2");
    const input = { url: "u", password: "env:LL_TEST_PW", headers: { a: "env:LL_TEST_PW" } };
    parseOptions(spec, input);
    expect(input).toEqual({ url: "u", password: "env:LL_TEST_PW", headers: { a: "env:LL_TEST_PW" } });
  });

  it("names the option and the variable when it is unset or empty, never a value", () => {
    setEnv("LL_TEST_UNSET", undefined);
    setEnv("LL_TEST_EMPTY", "");
    const unset = thrown(() => parseOptions(spec, { url: "u", password: "env:LL_TEST_UNSET" }));
    expect(unset).toBeInstanceOf(ConfigError);
    expect((unset as ConfigError).option).toBe("source demo: password");
    expect((unset as Error).message).toMatch(/LL_TEST_UNSET/);
    expect((unset as Error).message).toMatch(/not set/);
    const empty = thrown(() => parseOptions(spec, { url: "u", headers: { Authorization: "Bearer ${ENV:LL_TEST_EMPTY}" } }));
    expect(empty).toBeInstanceOf(ConfigError);
    expect((empty as Error).message).toMatch(/headers\.Authorization/);
    expect((empty as Error).message).toMatch(/LL_TEST_EMPTY/);
    expect((empty as Error).message).toMatch(/empty/);
  });

  it("keeps showing a resolved secret option as <secret>", () => {
    setEnv("LL_TEST_PW", "hunter2");
    const spec2: ComponentSpec = { ...spec, options: { ...spec.options, password: { type: "string", enum: ["x"], secret: true, description: "p" } } };
    const err = thrown(() => parseOptions(spec2, { url: "u", password: "env:LL_TEST_PW" }));
    expect((err as Error).message).toMatch(/<secret>/);
    expect((err as Error).message).not.toMatch(/hunter2/);
  });

  it("names the variable instead of echoing a value from the environment that does not fit", () => {
    const err = thrown(() => parseOptions(spec, { url: "u", maxBytes: "env:LL_MAX" }, { LL_MAX: "hunter2" }));
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/maxBytes: expected a whole number; got the value of env:LL_MAX/);
    expect((err as Error).message).not.toMatch(/hunter2/);
  });

  it("does not touch object options that are not secret, nor values that only look alike", () => {
    setEnv("LL_TEST_PW", "hunter2");
    const o = parseOptions(spec, { url: "environment:x", retry: { note: "env:LL_TEST_PW" } });
    expect(o.url).toBe("environment:x");
    expect(o.retry).toEqual({ note: "env:LL_TEST_PW" });
  });
});

describe("a webhook's hmacSecret from the environment", () => {
  const opened: WebhookSource[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  it("checks signatures against the variable's value, end to end", async () => {
    setEnv("LL_TEST_HOOK_SECRET", "hook-s3cr3t");
    const source = (await createSource({ type: "webhook", port: 0, path: "/events", hmacSecret: "env:LL_TEST_HOOK_SECRET" })) as WebhookSource;
    opened.push(source);
    await source.start();
    const body = JSON.stringify({ id: "e1", order: 1 });
    const sign = (key: string) => `sha256=${createHmac("sha256", key).update(body).digest("hex")}`;
    const post = (signature: string) =>
      fetch(source.url, { method: "POST", headers: { "content-type": "application/json", "x-signature": signature }, body });
    const wrong = await post(sign("env:LL_TEST_HOOK_SECRET"));
    await wrong.body?.cancel();
    expect(wrong.status).toBe(401);
    const right = post(sign("hook-s3cr3t"));
    const got: Array<ReceivedRecord<WebhookAckToken>> = [];
    while (got.length < 1) got.push(...(await source.receive(1, 5000, new AbortController().signal)));
    expect(got.map((r) => r.value)).toEqual([{ id: "e1", order: 1 }]);
    await source.ack(got.map((r) => r.ackToken));
    const reply = await right;
    await reply.body?.cancel();
    expect(reply.status).toBe(200);
  });

  it("refuses to start when the variable is unset, naming it", async () => {
    setEnv("LL_TEST_HOOK_SECRET", undefined);
    const err = await createSource({ type: "webhook", port: 0, hmacSecret: "env:LL_TEST_HOOK_SECRET" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/hmacSecret/);
    expect((err as Error).message).toMatch(/LL_TEST_HOOK_SECRET/);
  });
});
