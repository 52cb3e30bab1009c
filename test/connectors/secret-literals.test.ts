import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { assertNoLiteralSecrets, createSource, sourceSpecs } from "../../src/sources/connectors.js";
import { isCredentialName, literalSecrets } from "../../src/sources/core/secret-literal.js";
import { parseOptions, renderSpecMarkdown, type ComponentSpec } from "../../src/sources/core/spec.js";
import { StreamClient } from "../../src/temporal/client.js";

const spec: ComponentSpec = {
  type: "servicebus",
  kind: "ack",
  summary: "A demo connector.",
  options: {
    connectionString: { type: "string", secret: true, description: "Connection string" },
    queueName: { type: "string", description: "Queue" },
    headers: { type: "object", secret: true, description: "Headers" },
    sasl: { type: "object", secret: true, description: "SASL" },
    retry: { type: "object", description: "Not secret" },
  },
};

const ENV = { SB_CS: "Endpoint=sb://x/;SharedAccessKeyName=l;SharedAccessKey=hunter2", TOKEN: "s3cr3t" };
const CONFIG = { origin: "config" } as const;

function thrown(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("a literal secret in a JSON config", () => {
  it("is refused, naming the option and showing the env: form, never the value", () => {
    const err = thrown(() => parseOptions(spec, { connection_string: "Endpoint=sb://x/;SharedAccessKey=hunter2", queueName: "q" }, ENV, CONFIG));
    expect(err.option).toBe("source servicebus: connectionString");
    expect(err.message).toBe(
      'source servicebus: connectionString: a secret must not be written into a config; use "env:SERVICEBUS_CONNECTION_STRING" (or ${ENV:NAME} inside a string)',
    );
    expect(err.retriable).toBe(false);
    expect(JSON.stringify(err)).not.toMatch(/hunter2/);
  });

  it("accepts env:NAME and ${ENV:NAME} inside a string, and resolves them", () => {
    expect(parseOptions(spec, { connectionString: "env:SB_CS" }, ENV, CONFIG).connectionString).toBe(ENV.SB_CS);
    const o = parseOptions(spec, { connectionString: "Endpoint=sb://x/;SharedAccessKey=${ENV:TOKEN}" }, ENV, CONFIG);
    expect(o.connectionString).toBe("Endpoint=sb://x/;SharedAccessKey=s3cr3t");
  });

  it("is allowed from code, where the program reads its own secrets", () => {
    expect(parseOptions(spec, { connectionString: "Endpoint=sb://x/;SharedAccessKey=hunter2" }, ENV).connectionString).toMatch(/hunter2/);
    expect(parseOptions(spec, { headers: { Authorization: "Bearer hunter2" } }, ENV, { origin: "code" }).headers).toEqual({
      Authorization: "Bearer hunter2",
    });
  });

  it("checks only the credential fields of a secret object, keeping an auth scheme in the hint", () => {
    const err = thrown(() => parseOptions(spec, { headers: { accept: "text/event-stream", Authorization: "Bearer hunter2" } }, ENV, CONFIG));
    expect(err.option).toBe("source servicebus: headers.Authorization");
    expect(err.message).toMatch(/a secret must not be written into a config; use "Bearer \$\{ENV:SERVICEBUS_HEADERS_AUTHORIZATION\}"/);
    expect(err.message).not.toMatch(/hunter2/);
    const ok = parseOptions(spec, { headers: { accept: "text/event-stream", "User-Agent": "x", Authorization: "Bearer ${ENV:TOKEN}" } }, ENV, CONFIG);
    expect(ok.headers).toEqual({ accept: "text/event-stream", "User-Agent": "x", Authorization: "Bearer s3cr3t" });
    for (const name of ["x-api-key", "Cookie", "Proxy-Authorization", "Ocp-Apim-Subscription-Key", "X-Auth-Token"]) {
      expect(thrown(() => parseOptions(spec, { headers: { [name]: "hunter2" } }, ENV, CONFIG)).option).toBe(`source servicebus: headers.${name}`);
    }
  });

  it("refuses sasl.password and secretAccessKey but not the user name or the mechanism", () => {
    const plain = { mechanism: "plain", username: "svc", password: "hunter2" };
    expect(thrown(() => parseOptions(spec, { sasl: plain }, ENV, CONFIG)).message).toMatch(
      /^source servicebus: sasl\.password: a secret must not be written into a config; use "env:SERVICEBUS_SASL_PASSWORD"/,
    );
    expect(parseOptions(spec, { sasl: { ...plain, password: "env:TOKEN" } }, ENV, CONFIG).sasl).toEqual({ ...plain, password: "s3cr3t" });
    const aws = { mechanism: "aws", authorizationIdentity: "AIDA", accessKeyId: "AKIA", secretAccessKey: "hunter2" };
    expect(thrown(() => parseOptions(spec, { sasl: aws }, ENV, CONFIG)).option).toBe("source servicebus: sasl.secretAccessKey");
    expect(thrown(() => parseOptions(spec, { sasl: { ...plain, password: 1234 } }, ENV, CONFIG)).option).toBe("source servicebus: sasl.password");
  });

  it("reaches into a nested block whose keys are declared options (the `type: stream` options:)", () => {
    const nested: ComponentSpec = {
      type: "stream",
      kind: "cursor",
      summary: "Nested.",
      options: {
        options: { type: "object", description: "Nested options", fields: { saslPassword: { type: "string", secret: true, description: "p" } } },
        saslPassword: { type: "string", secret: true, description: "p" },
      },
    };
    const found = literalSecrets(nested, { options: { kind: "kafka", sasl_password: "hunter2" } });
    expect(found).toEqual([
      { path: ["options", "sasl_password"], option: "options.saslPassword", message: expect.stringContaining('use "env:STREAM_SASL_PASSWORD"') as string },
    ]);
    expect(literalSecrets(nested, { options: { sasl_password: "env:KAFKA_PASSWORD" } })).toEqual([]);
  });

  it("leaves non-secret options alone", () => {
    expect(parseOptions(spec, { queueName: "password", retry: { token: "x" } }, ENV, CONFIG)).toEqual({ queueName: "password", retry: { token: "x" } });
  });

  it("lists every literal with its path for lint, without resolving anything", () => {
    const found = literalSecrets(spec, {
      connection_string: "Endpoint=sb://x",
      headers: { Authorization: "Basic abc", accept: "json" },
      sasl: { password: "env:UNSET_VARIABLE" },
    });
    expect(found.map((f) => f.path)).toEqual([["connection_string"], ["headers", "Authorization"]]);
    expect(found[0]!.option).toBe("connectionString");
    expect(found[0]!.message).toMatch(/use "env:SERVICEBUS_CONNECTION_STRING"/);
  });
});

describe("createSource (contract source blocks, --source, Temporal inputs)", () => {
  const literal = "hunter2-literal";
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["servicebus", { type: "servicebus", connectionString: `Endpoint=sb://ns/;SharedAccessKeyName=l;SharedAccessKey=${literal}`, queueName: "q" }, "connectionString"],
    ["eventgrid", { type: "eventgrid", endpoint: "https://ns.westeurope-1.eventgrid.azure.net", topicName: "t", subscriptionName: "s", access_key: literal }, "accessKey"],
    ["webhook", { type: "webhook", port: 0, hmacSecret: literal }, "hmacSecret"],
    ["eventgrid-push", { type: "eventgrid-push", port: 0, hmac_secret: literal }, "hmacSecret"],
    ["kafka", { type: "kafka", brokers: "b:9092", topic: "t", groupId: "g", sasl: { mechanism: "plain", username: "u", password: literal } }, "sasl.password"],
    ["sse", { type: "sse", url: "https://example.com/s", headers: { Authorization: `Bearer ${literal}` } }, "headers.Authorization"],
    ["websocket", { type: "websocket", url: "wss://example.com/s", headers: { "x-api-key": literal } }, "headers.x-api-key"],
  ];
  it.each(cases)("%s refuses a literal secret", async (type, config, option) => {
    const err = await createSource(config).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).option).toBe(`source ${type}: ${option}`);
    expect((err as Error).message).toMatch(/a secret must not be written into a config; use "/);
    expect((err as Error).message).not.toContain(literal);
  });
});

describe("assertNoLiteralSecrets (a client about to store a config in a workflow input)", () => {
  it("refuses a literal like createSource, without resolving or opening anything", () => {
    const err = thrown(() => assertNoLiteralSecrets({ type: "eventgrid", endpoint: "https://x", accessKey: "hunter2" }));
    expect(err.option).toBe("source eventgrid: accessKey");
    expect(err.message).not.toContain("hunter2");
  });

  it("passes references whose variables only the worker has, and leaves other problems to createSource", () => {
    expect(() => assertNoLiteralSecrets({ type: "eventgrid", endpoint: "https://x", accessKey: "env:ONLY_ON_THE_WORKER" })).not.toThrow();
    expect(() => assertNoLiteralSecrets({ type: "no-such-type", password: "x" })).not.toThrow();
    expect(() => assertNoLiteralSecrets("not an object")).not.toThrow();
  });
});

describe("a Temporal client (the input is kept in the workflow's history)", () => {
  const input = {
    contract: "contracts/bronze_orders.yaml",
    source: { type: "servicebus", connectionString: "Endpoint=sb://ns/;SharedAccessKey=hunter2", queueName: "q" },
    mode: "continuous" as const,
  };
  /** A client whose Temporal calls are recorded, never made. */
  function recording(): { self: unknown; calls: string[] } {
    const calls: string[] = [];
    const record = (name: string) => () => {
      calls.push(name);
      return Promise.resolve({ workflowId: "w", firstExecutionRunId: "r" });
    };
    const self = { taskQueue: "q", client: { workflow: { start: record("workflow.start") }, schedule: { create: record("schedule.create") } } };
    return { self, calls };
  }

  it("refuses to start or schedule a stream whose source holds a literal secret, before calling Temporal", async () => {
    const { self, calls } = recording();
    const started = await StreamClient.prototype.start.call(self as StreamClient, input).catch((e: unknown) => e);
    expect(started).toBeInstanceOf(ConfigError);
    expect((started as Error).message).toMatch(/^source servicebus: connectionString: a secret must not be written into a config/);
    const scheduled = await StreamClient.prototype.createSchedule.call(self as StreamClient, "s", input, 60_000).catch((e: unknown) => e);
    expect(scheduled).toBeInstanceOf(ConfigError);
    expect(calls).toEqual([]);
  });
});

describe("secret declarations in the built-in specs", () => {
  it("flags every option whose name says it holds a credential", () => {
    const unflagged = sourceSpecs().flatMap((s) =>
      Object.entries(s.options)
        .filter(([name, o]) => isCredentialName(name) && !o.secret)
        .map(([name]) => `${s.type}.${name}`),
    );
    expect(unflagged).toEqual([]);
  });

  it("declares the known secret options", () => {
    const declared = Object.fromEntries(
      sourceSpecs().map((s) => [s.type, Object.keys(s.options).filter((k) => s.options[k]!.secret === true)]),
    );
    const expected: Record<string, string[]> = {
      kafka: ["sasl"],
      servicebus: ["connectionString"],
      eventgrid: ["accessKey"],
      webhook: ["hmacSecret"],
      "eventgrid-push": ["hmacSecret"],
      sse: ["headers"],
      websocket: ["headers"],
    };
    for (const [type, options] of Object.entries(expected)) expect([type, declared[type]]).toEqual([type, expect.arrayContaining(options)]);
  });

  it("says in the generated option tables which options must be references", () => {
    const table = renderSpecMarkdown(spec);
    expect(table).toMatch(/\| `connectionString` \|[^\n]*\*\*Secret:\*\* in a JSON config, an `env:NAME` reference\./);
    expect(table).toMatch(/\| `headers` \|[^\n]*\*\*Secret:\*\* in a JSON config its credential fields are `env:NAME` references\./);
    expect(table).not.toMatch(/\| `queueName` \|[^\n]*Secret/);
  });

  it("tells credential names from ordinary ones", () => {
    for (const n of ["password", "sasl_password", "connectionString", "connection_string", "accessKey", "hmacSecret", "secretAccessKey", "sessionToken", "apiKey", "sasToken", "clientSecret", "privateKey", "Authorization", "x-api-key", "cookie"]) {
      expect([n, isCredentialName(n)]).toEqual([n, true]);
    }
    for (const n of ["username", "mechanism", "authorizationIdentity", "accessKeyId", "queueName", "user-agent", "accept", "tokenizer", "maxTokens", "subscriptionName"]) {
      expect([n, isCredentialName(n)]).toEqual([n, false]);
    }
  });
});
