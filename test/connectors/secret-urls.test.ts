/**
 * Credentials hidden inside other options of a JSON config: a URL with a password or a token
 * parameter, and the private key of Kafka's TLS options. Refused before anything opens (and so
 * before a Temporal input is stored), naming the option, never echoing the value.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { assertNoLiteralSecrets } from "../../src/sources/connectors.js";
import { urlCredential } from "../../src/sources/core/secret-literal.js";

function refusal(config: Record<string, unknown>): ConfigError {
  try {
    assertNoLiteralSecrets(config);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("a URL with a credential in a JSON config", () => {
  it.each([
    ["user-info password", "https://admin:hunter2@feed.example.com/stream", "the password in its user-info"],
    ["token parameter", "https://feed.example.com/stream?topic=a&token=hunter2", 'its "token" parameter'],
    ["SAS signature", "https://acct.blob.core.windows.net/c/b?sv=2024&sig=hunter2", 'its "sig" parameter'],
  ])("is refused: %s", (_what, url, what) => {
    const err = refusal({ type: "sse", url });
    expect(err.message).toContain("url: a URL with a credential");
    expect(err.message).toContain(what);
    expect(err.message).toContain("${ENV:NAME}");
    expect(err.message).not.toContain("hunter2");
  });

  it("passes when the secret part is a reference, or there is none", () => {
    expect(() => assertNoLiteralSecrets({ type: "sse", url: "https://admin:${ENV:FEED_PASSWORD}@feed.example.com/stream" })).not.toThrow();
    expect(() => assertNoLiteralSecrets({ type: "sse", url: "https://feed.example.com/stream?token=${ENV:FEED_TOKEN}" })).not.toThrow();
    expect(() => assertNoLiteralSecrets({ type: "sse", url: "https://user@feed.example.com/stream?page=2" })).not.toThrow();
    expect(urlCredential("not a url: token=x")).toBeUndefined();
  });
});

describe("Kafka TLS options", () => {
  it("refuse a private key or passphrase written inline, and accept references and certificates", () => {
    const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----";
    const err = refusal({ type: "kafka", brokers: ["b:9093"], topic: "t", ssl: { ca: "-----BEGIN CERTIFICATE-----", key: pem } });
    expect(err.message).toContain("ssl.key");
    expect(err.message).not.toContain("MIIEvQ");
    expect(refusal({ type: "kafka", brokers: ["b:9093"], topic: "t", ssl: { passphrase: "hunter2" } }).message).toContain("ssl.passphrase");
    expect(() => assertNoLiteralSecrets({ type: "kafka", brokers: ["b:9093"], topic: "t", ssl: { ca: "-----BEGIN CERTIFICATE-----", key: "env:KAFKA_TLS_KEY" } })).not.toThrow();
    expect(() => assertNoLiteralSecrets({ type: "kafka", brokers: ["b:9093"], topic: "t", ssl: true })).not.toThrow();
  });
});
