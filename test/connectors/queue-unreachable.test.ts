/**
 * A queue that cannot be reached is an error, never an empty queue: each queue connector against a
 * loopback port with nothing listening, in available_now, must fail the run (after its own bounded
 * retries) with an error that names the endpoint and no secret — not report 0 records. SQS,
 * Pub/Sub, Service Bus and Event Grid run their real SDKs here; only the server is missing.
 */
import { connect, createServer, type Server } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { StreamSink, StreamRunError } from "../../src/sink/index.js";
import { QueueUnreachableError } from "../../src/sources/core/queue.js";
import type { AckSource } from "../../src/sources/core/types.js";
import { EventGridConnector } from "../../src/sources/eventgrid/source.js";
import { PubSubConnector } from "../../src/sources/pubsub/source.js";
import { ServiceBusConnector } from "../../src/sources/servicebus/source.js";
import { SQSConnector } from "../../src/sources/sqs/source.js";
import { startPubSub } from "../support/pubsub.js";
import { requireService } from "../support/services.js";
import { EventGridFakeServer } from "./eventgrid-server.js";
import { ordersContract, tempDirs } from "./queue-lake.js";

// The SDKs' default credential chains must not go looking for a cloud.
process.env.AWS_ACCESS_KEY_ID ??= "test";
process.env.AWS_SECRET_ACCESS_KEY ??= "test";
process.env.METADATA_SERVER_DETECTION ??= "none";
delete process.env.PUBSUB_EMULATOR_HOST;

const dirs = tempDirs("ll-unreachable");
afterAll(() => dirs.cleanup());

const SECRET = "s3cr3t-value";
/** Quick, bounded retries: three attempts, no waiting worth the name. */
const RETRY = { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, maxAttempts: 3 };

/** A loopback port that refuses connections: bound once to pick it, then closed. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Case {
  name: string;
  make(port: number, warnings: string[]): AckSource & { close(): Promise<void> };
}

const cases: Case[] = [
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
    name: "pubsub",
    make: (port, warnings) =>
      new PubSubConnector({ projectId: "lakelogic-test", subscription: "orders", apiEndpoint: `127.0.0.1:${port}`, retry: RETRY, onWarning: (w) => warnings.push(w) }),
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
        retry: RETRY,
        onWarning: (w) => warnings.push(w),
      }),
  },
];

describe("a queue connector whose endpoint is unreachable, in available_now", () => {
  for (const c of cases) {
    it(`${c.name}: the run fails with an error naming the endpoint, after its retries — not 0 records`, async () => {
      const port = await deadPort();
      const warnings: string[] = [];
      const lake = dirs.make(c.name);
      const sink = new StreamSink(ordersContract, c.make(port, warnings), { targetPath: lake, checkpoint: "memory", batchSize: 10, maxWaitMs: 200 });
      const outcome = await sink.run("available_now").then(
        (summary) => ({ summary }),
        (error: unknown) => ({ error }),
      );
      expect(outcome).not.toHaveProperty("summary");
      const error = (outcome as { error: unknown }).error;
      expect(error).toBeInstanceOf(StreamRunError);
      const cause = (error as StreamRunError).cause;
      expect(cause).toBeInstanceOf(QueueUnreachableError);
      expect(cause).toMatchObject({ retriable: true, attempts: RETRY.maxAttempts, endpoint: expect.stringContaining(`127.0.0.1:${port}`) });
      expect((error as Error).message).toContain(`127.0.0.1:${port}`);
      expect((error as Error).message).not.toContain(SECRET);
      // Each failed attempt but the last was retried, and said so.
      const retried = warnings.filter((w) => /cannot reach .*; retrying/.test(w));
      expect(retried).toHaveLength(RETRY.maxAttempts - 1);
      for (const w of warnings) expect(w).not.toContain(SECRET);
    });
  }

  it("eventgrid: a subscription that answered \"nothing\" is still the end of the drain", async () => {
    const server = await new EventGridFakeServer({ key: SECRET, topic: "orders", subscription: "lake" }).start();
    try {
      const source = new EventGridConnector({ endpoint: server.endpoint, topicName: "orders", subscriptionName: "lake", accessKey: SECRET, retry: RETRY });
      const summary = await new StreamSink(ordersContract, source, { targetPath: dirs.make("eg-empty"), checkpoint: "memory", batchSize: 10, maxWaitMs: 200 }).run("available_now");
      expect(summary.sourceCount).toBe(0);
      expect(server.stats.receives).toBeGreaterThanOrEqual(1);
    } finally {
      await server.stop();
    }
  });

  it("eventgrid: a blip (the first connection reset) is retried and the drain completes", async () => {
    const server = await new EventGridFakeServer({ key: SECRET, topic: "orders", subscription: "lake" }).start();
    server.publish(...Array.from({ length: 5 }, (_, i) => ({ id: `e${i}`, source: "/shop", type: "order", data: { order_id: i } })));
    const upstream = Number(new URL(server.endpoint).port);
    // In front of the service: the first connection is cut at once, later ones pass through.
    let cut = false;
    const proxy: Server = createServer((socket) => {
      if (!cut) {
        cut = true;
        socket.destroy();
        return;
      }
      const up = connect(upstream, "127.0.0.1");
      socket.pipe(up).pipe(socket);
      socket.on("error", () => up.destroy());
      up.on("error", () => socket.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = proxy.address() as { port: number };
      const warnings: string[] = [];
      const source = new EventGridConnector({
        endpoint: `http://127.0.0.1:${port}`,
        topicName: "orders",
        subscriptionName: "lake",
        accessKey: SECRET,
        retry: RETRY,
        onWarning: (w) => warnings.push(w),
      });
      const summary = await new StreamSink(ordersContract, source, { targetPath: dirs.make("eg-blip"), checkpoint: "memory", batchSize: 10, maxWaitMs: 200 }).run("available_now");
      expect(summary.sourceCount).toBe(5);
      expect(warnings.filter((w) => /cannot reach .*; retrying/.test(w))).toHaveLength(1);
    } finally {
      proxy.close();
      await server.stop();
    }
  });

  it("pubsub: a subscription the service says is empty is still the end of the drain", async () => {
    const ps = await requireService("connectors/pubsub (pstest fake)", () => startPubSub());
    if (!ps) return;
    try {
      const { subscription } = await ps.createSubscription(`empty-${Date.now()}`);
      const source = new PubSubConnector({ projectId: ps.projectId, subscription, apiEndpoint: ps.host, retry: RETRY });
      const summary = await new StreamSink(ordersContract, source, { targetPath: dirs.make("ps-empty"), checkpoint: "memory", batchSize: 10, maxWaitMs: 200 }).run("available_now");
      expect(summary.sourceCount).toBe(0);
    } finally {
      await ps.stop();
    }
  });

  it("lakelogic run exits 1 and names the endpoint when the queue cannot be reached", async () => {
    const port = await deadPort();
    let stdout = "";
    let stderr = "";
    // A JSON config names the key's variable (a literal one is refused).
    process.env.LL_TEST_EVENTGRID_ACCESS_KEY = SECRET;
    const source = { type: "eventgrid", endpoint: `http://127.0.0.1:${port}`, topicName: "orders", subscriptionName: "lake", accessKey: "env:LL_TEST_EVENTGRID_ACCESS_KEY", retry: RETRY };
    const code = await main(
      ["run", ordersContract, "--source", JSON.stringify(source), "--checkpoint", "memory", "--target-path", dirs.make("cli"), "--max-wait-ms", "200", "--json"],
      { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) },
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`could not reach http://127\\.0\\.0\\.1:${port}`));
    expect(stderr).not.toContain(SECRET);
    expect(JSON.parse(stdout)).toMatchObject({ sourceCount: 0, batches: 0 });
  });
});
