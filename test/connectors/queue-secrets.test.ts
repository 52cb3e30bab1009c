/**
 * No secret in what a queue connector or Kafka says: the message, the warnings and the whole cause
 * chain of an error (causes travel on into logs and Temporal's failure history) stay free of URL
 * passwords and query tokens, SAS keys, connection-string keys and SASL passwords.
 */
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { checkUrl } from "../../src/sources/core/common.js";
import { errorText } from "../../src/sources/core/queue.js";
import type { AckSource } from "../../src/sources/core/types.js";
import { EventGridConnector } from "../../src/sources/eventgrid/source.js";
import { KafkaConsumerError } from "../../src/sources/kafka/errors.js";
import { KafkaOffsetSource } from "../../src/sources/kafka/source.js";
import { ServiceBusConnector } from "../../src/sources/servicebus/source.js";
import { SQSConnector } from "../../src/sources/sqs/source.js";
import { FakeServiceBusEntity } from "./servicebus-fake.js";

process.env.AWS_ACCESS_KEY_ID ??= "test";
process.env.AWS_SECRET_ACCESS_KEY ??= "test";

const SECRET = "s3cr3t-value";
const RETRY = { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 1, jitter: 0 };

async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Every text an error carries along its cause chain (and an AggregateError's errors). */
function texts(err: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 10 || err === undefined || err === null) return out;
  if (err instanceof Error) {
    out.push(err.message, String(err.stack));
    for (const [k, v] of Object.entries(err)) if (typeof v === "string") out.push(`${k}=${v}`);
    if (err instanceof AggregateError) for (const e of err.errors) texts(e, out, depth + 1);
    texts((err as { cause?: unknown }).cause, out, depth + 1);
  } else {
    out.push(typeof err === "string" ? err : JSON.stringify(err) ?? "");
  }
  return out;
}

function expectNoSecret(what: unknown, secret = SECRET): void {
  for (const t of texts(what)) expect(t).not.toContain(secret);
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a failure");
}

describe("queue connectors keep secrets out of errors, warnings and causes", () => {
  const cases: Array<{ name: string; make(port: number, warnings: string[]): AckSource & { close(): Promise<void> } }> = [
    {
      name: "sqs",
      make: (port, warnings) =>
        new SQSConnector({
          queueUrl: `http://user:${SECRET}@127.0.0.1:${port}/000000000000/orders?token=${SECRET}`,
          region: "us-east-1",
          retry: RETRY,
          onWarning: (w) => warnings.push(w),
        }),
    },
    {
      name: "servicebus",
      make: (port, warnings) =>
        new ServiceBusConnector({
          connectionString: `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=listen;SharedAccessKey=${SECRET};UseDevelopmentEmulator=true`,
          queueName: "orders",
          retry: RETRY,
          onWarning: (w) => warnings.push(w),
        }),
    },
    {
      name: "eventgrid",
      make: (port, warnings) =>
        new EventGridConnector({
          endpoint: `http://127.0.0.1:${port}/?sig=${SECRET}`,
          topicName: "orders",
          subscriptionName: "lake",
          accessKey: SECRET,
          maxWaitTimeSeconds: 10,
          retry: RETRY,
          onWarning: (w) => warnings.push(w),
        }),
    },
  ];

  for (const c of cases) {
    it(`${c.name}: an unreachable endpoint`, async () => {
      const warnings: string[] = [];
      const source = c.make(await deadPort(), warnings);
      try {
        const err = await failure(source.receive(10, 50, new AbortController().signal));
        expect(err).toBeInstanceOf(Error);
        expectNoSecret(err);
        for (const w of warnings) expect(w).not.toContain(SECRET);
      } finally {
        await source.close();
      }
    }, 60_000);
  }

  /**
   * A server that refuses every request and echoes it (URL, headers, body) in its error: what a
   * proxy or a misbehaving service may do. The error must still carry no secret.
   */
  async function echoServer(): Promise<{ port: number; server: Server }> {
    const server = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const echo = `refused ${req.method ?? ""} ${req.url ?? ""} ${JSON.stringify(req.headers)} ${body}`;
        res.writeHead(400, { "content-type": "application/json", "x-amzn-query-error": "InvalidParameterValue;Sender" });
        res.end(JSON.stringify({ __type: "InvalidParameterValue", message: echo, error: { code: "BadRequest", message: echo } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { port: (server.address() as { port: number }).port, server };
  }

  for (const c of cases.filter((x) => x.name !== "servicebus")) {
    it(`${c.name}: a server whose error echoes the request`, async () => {
      const { port, server } = await echoServer();
      const warnings: string[] = [];
      const source = c.make(port, warnings);
      try {
        const err = await failure(source.receive(10, 50, new AbortController().signal));
        expect(err).toBeInstanceOf(Error);
        expectNoSecret(err);
        for (const w of warnings) expect(w).not.toContain(SECRET);
      } finally {
        await source.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }, 60_000);
  }

  it("servicebus: an SDK error that echoes the connection string", async () => {
    const connectionString = `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=${SECRET}`;
    const receiver = {
      ...new FakeServiceBusEntity().receiver(),
      receiveMessages: () => Promise.reject(new Error(`cannot use ${connectionString}`, { cause: new Error(`key ${SECRET} refused`) })),
    };
    const source = new ServiceBusConnector({ connectionString, queueName: "orders", receiver, retry: RETRY });
    try {
      const err = await failure(source.receive(10, 50, new AbortController().signal));
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toContain("cannot use");
      expectNoSecret(err);
    } finally {
      await source.close();
    }
  });

  it("sqs: an endpoint that is not http(s) is not echoed with its credentials", () => {
    const err = failure(
      Promise.resolve().then(
        () => new SQSConnector({ queueUrl: "http://127.0.0.1:1/000000000000/orders", endpoint: `ftp://user:${SECRET}@127.0.0.1:1/?token=${SECRET}` }),
      ),
    );
    return err.then((e) => {
      expect(e).toBeInstanceOf(Error);
      expectNoSecret(e);
    });
  });

  it("sqs: a queue URL that is not a queue URL is not echoed with its credentials", async () => {
    const e = await failure(Promise.resolve().then(() => new SQSConnector({ queueUrl: `ftp://user:${SECRET}@host/?sig=${SECRET}` })));
    expect(e).toBeInstanceOf(Error);
    expectNoSecret(e);
  });

  it("eventgrid: an endpoint refused by the option checks is not echoed with its SAS signature", async () => {
    for (const endpoint of [`http://example.com/?sig=${SECRET}`, `ftp://user:${SECRET}@example.com/?sig=${SECRET}`]) {
      const e = await failure(
        Promise.resolve().then(() => new EventGridConnector({ endpoint, topicName: "t", subscriptionName: "s", accessKey: SECRET })),
      );
      expect(e).toBeInstanceOf(Error);
      expectNoSecret(e);
    }
  });

  it("errorText removes the connector's secrets and credentials in URLs", () => {
    const err = new Error(`request to http://u:${SECRET}@h/x failed`, { cause: new Error(`key ${SECRET}`) });
    const text = errorText(err, [SECRET]);
    expect(text).not.toContain(SECRET);
    expect(errorText(new Error(`SharedAccessKey=${SECRET}`))).not.toContain(SECRET);
  });

  it("checkUrl does not echo the user-info of an invalid URL", () => {
    let e: unknown;
    try {
      checkUrl(`http://admin:${SECRET}@host:99999/x`, ["http:"], "SSE");
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(Error);
    expectNoSecret(e);
  });
});

describe("kafka keeps SASL secrets out of errors", () => {
  it("a consumer error names neither the SASL password nor a URL's credentials", () => {
    const sasl = { mechanism: "plain" as const, username: "u", password: SECRET };
    const cause = new Error(`SASL PLAIN authentication failed for password ${SECRET} at http://u:${SECRET}@b/`);
    const err = new KafkaConsumerError("kafka orders", cause, sasl);
    expect(err.message).toContain("authentication failed");
    expectNoSecret(err);
  });

  it("env: references inside sasl are resolved from code as well as from JSON", () => {
    class Exposed extends KafkaOffsetSource {
      saslOf(): unknown {
        return this.options.sasl;
      }
    }
    process.env.LL_TEST_KAFKA_PASSWORD = SECRET;
    try {
      const source = new Exposed("orders", {
        brokers: ["b:9092"],
        groupId: "g",
        sasl: { mechanism: "scram-sha-512", username: "u", password: "env:LL_TEST_KAFKA_PASSWORD" },
      });
      expect(source.saslOf()).toEqual({ mechanism: "scram-sha-512", username: "u", password: SECRET });
    } finally {
      delete process.env.LL_TEST_KAFKA_PASSWORD;
    }
  });
});
