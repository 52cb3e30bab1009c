import { describe, expect, it } from "vitest";
import { errorText, redactText, redactUrl, secretsOfHeaders, secretsOfUrl } from "../../src/util/redact.js";
import { redactUrl as redactUrlFromCore } from "../../src/sources/core/errors.js";

describe("redactUrl", () => {
  it("drops user-info and the query string, keeps where it points", () => {
    expect(redactUrl("http://admin:hunter2@example.com:8080/feed?token=s3cr3t#x")).toBe("http://example.com:8080/feed?…");
    expect(redactUrl("not a url")).toBe("<invalid url>");
  });

  it("is still exported from sources/core/errors", () => {
    expect(redactUrlFromCore).toBe(redactUrl);
  });
});

describe("redactText", () => {
  it("removes user-info and query strings of URLs inside free text", () => {
    const text = "Request cannot be constructed from a URL that includes credentials: http://admin:hunter2@127.0.0.1:9/x?token=s3cr3t";
    const out = redactText(text);
    expect(out).not.toMatch(/hunter2|s3cr3t|admin/);
    expect(out).toContain("http://127.0.0.1:9/x?…");
  });

  it("leaves a URL without credentials or query as it is", () => {
    expect(redactText("see https://example.com/docs/page.")).toBe("see https://example.com/docs/page.");
  });

  it("removes token-like key=value pairs, JSON fields, Authorization values and connection-string keys", () => {
    const samples = [
      "bad request: token=s3cr3t&x=1",
      "sig=s3cr3t; se=2030",
      "code=s3cr3t",
      "access_token=s3cr3t",
      "Key=s3cr3t",
      "api_key=s3cr3t",
      '{"error":"denied","token":"s3cr3t"}',
      '{"password": "s3cr3t"}',
      "Authorization: Bearer s3cr3t",
      "authorization=Basic czNjcjN0",
      "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=s3cr3t",
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=s3cr3t;EndpointSuffix=core.windows.net",
      "SharedAccessSignature sr=x&sig=s3cr3t&se=1",
    ];
    for (const s of samples) {
      const out = redactText(s);
      expect(out, s).not.toMatch(/s3cr3t|czNjcjN0/);
      expect(out, s).toContain("<redacted>");
    }
    // What is not a secret stays readable.
    expect(redactText("HTTP 401 Unauthorized — the server closed the connection with code 1006")).toBe(
      "HTTP 401 Unauthorized — the server closed the connection with code 1006",
    );
  });

  it("removes every known secret value, also URL-encoded", () => {
    const out = redactText("server said: hello p@ss/word and p%40ss%2Fword", ["p@ss/word"]);
    expect(out).toBe("server said: hello <redacted> and <redacted>");
  });

  it("does not search for values too short to be secrets", () => {
    expect(redactText("HTTP 401", ["1"])).toBe("HTTP 401");
  });
});

describe("secretsOf…", () => {
  it("takes the password, Basic credentials and token-like query values of a URL", () => {
    const s = secretsOfUrl("http://admin:hunter2@h/p?token=s3cr3t&page=2&x-amz-signature=abcd1234");
    expect(s).toContain("hunter2");
    expect(s).toContain("s3cr3t");
    expect(s).toContain("abcd1234");
    expect(s).toContain(Buffer.from("admin:hunter2").toString("base64"));
    expect(s).not.toContain("2");
    expect(secretsOfUrl("::nonsense")).toEqual([]);
  });

  it("takes the values of credential headers, with and without their scheme", () => {
    const s = secretsOfHeaders({ Authorization: "Bearer t0k3n-value", "X-Api-Key": "k3y-value", accept: "text/event-stream" });
    expect(s).toEqual(expect.arrayContaining(["Bearer t0k3n-value", "t0k3n-value", "k3y-value"]));
    expect(s).not.toContain("text/event-stream");
  });
});

describe("errorText", () => {
  it("joins the message with its cause's and redacts both", () => {
    const err = new TypeError("fetch failed", { cause: new Error("connect to http://u:hunter2@h/ refused") });
    const out = errorText(err, []);
    expect(out).toBe("fetch failed (connect to http://h/ refused)");
    expect(errorText("plain s3cr3t", ["s3cr3t"])).toBe("plain <redacted>");
  });
});
