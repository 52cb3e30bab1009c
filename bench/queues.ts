/**
 * `npm run bench:queues` (`npx tsx bench/queues.ts`) — queue drain throughput, printed as JSON lines.
 *
 * For SQS (ElasticMQ on 127.0.0.1, test/support/sqs.ts) and Pub/Sub (Google's pstest fake on
 * 127.0.0.1, test/support/pubsub.ts) it produces N order events (examples/orders.ts, 5 % breaking a
 * rule), then drains them:
 *
 *  - raw: the SDK alone (SQS: parallel ReceiveMessage + DeleteMessageBatch; Pub/Sub: the client
 *    acking on arrival) — what the server can deliver here;
 *  - source: the connector alone, receive + acknowledge per batch (no validation, no writes) — the
 *    ceiling for anything built on it;
 *  - sink: the connector + StreamSink available_now + DuckDB validation against
 *    examples/orders.yaml + merge on order_id into a DuckDB target + quarantine + SQLite checkpoint,
 *    acknowledging after every commit.
 *
 * The raw lines measure the servers: pstest hands each streaming-pull connection about one
 * message per 10 ms tick (about 100 messages/s per stream; real Pub/Sub sends batches), and
 * ElasticMQ answers a ReceiveMessage of 10 in a few milliseconds. SQS gets an unreported warm-up
 * round first (the JVM's JIT).
 *
 * Flags: --messages N (default 100,000), --batch N (sink batch size, default 1,000),
 * --only sqs|pubsub, --concurrency N (parallel SQS ReceiveMessage calls, default 8),
 * --streams N (Pub/Sub streaming-pull connections, default 32).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { orderEvent } from "../examples/orders.js";
import { PubSubConnector } from "../src/sources/pubsub/source.js";
import { SQSConnector } from "../src/sources/sqs/source.js";
import type { AckSource } from "../src/sources/core/types.js";
import { StreamSink } from "../src/sink/index.js";
import { startPubSub } from "../test/support/pubsub.js";
import { startSqs } from "../test/support/sqs.js";

const { values: flags } = parseArgs({
  options: {
    messages: { type: "string", default: "100000" },
    batch: { type: "string", default: "1000" },
    only: { type: "string" },
    concurrency: { type: "string", default: "8" },
    streams: { type: "string", default: "32" },
  },
});
const N = Number(flags.messages);
const batchSize = Number(flags.batch);
const concurrency = Number(flags.concurrency);
const streams = Number(flags.streams);
const contract = fileURLToPath(new URL("../examples/orders.yaml", import.meta.url));
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;
const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
const print = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
process.env.METADATA_SERVER_DETECTION ??= "none";

function rss(): { peak: () => number; stop: () => void } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 250);
  return { peak: () => mb(Math.max(peak, process.memoryUsage().rss)), stop: () => clearInterval(timer) };
}

/** Receive + ack until a receive comes back empty: the connector's own ceiling. */
async function drainSource(source: AckSource, max: number): Promise<number> {
  const signal = new AbortController().signal;
  let n = 0;
  try {
    while (true) {
      const got = await source.receive(max, 1000, signal);
      if (got.length === 0) break;
      n += got.length;
      await source.ack(got.map((r) => r.ackToken));
    }
  } finally {
    await source.close?.();
  }
  return n;
}

async function drainSink(bench: string, what: string, source: AckSource, dir: string): Promise<void> {
  const mem = rss();
  const started = performance.now();
  const summary = await new StreamSink(contract, source, {
    targetPath: join(dir, "lake"),
    checkpoint: join(dir, "ckpt.sqlite"),
    batchSize,
    maxWaitMs: 1000,
  }).run("available_now");
  const seconds = (performance.now() - started) / 1000;
  mem.stop();
  // The run ends after one empty receive of maxWaitMs: report it, and the rate without it.
  print({
    bench,
    what,
    messages: summary.sourceCount,
    good: summary.goodCount,
    bad: summary.badCount,
    batches: summary.batches,
    batchSize,
    seconds: round(seconds, 2),
    perSecond: round(summary.sourceCount / seconds),
    perSecondExcludingFinalEmptyWait: round(summary.sourceCount / Math.max(0.001, seconds - 1)),
    peakRssMb: mem.peak(),
    lag: summary.lag,
  });
}

async function benchSqs(): Promise<void> {
  const sqs = await startSqs({ heapMb: 512 });
  const dir = mkdtempSync(join(tmpdir(), "ll-bench-sqs-"));
  const produce = async (url: string, n: number) => {
    const inFlight: Array<Promise<unknown>> = [];
    for (let i = 0; i < n; i += 10) {
      const entries = [];
      for (let j = i; j < Math.min(n, i + 10); j++) entries.push({ Id: String(j - i), MessageBody: JSON.stringify(orderEvent(j)) });
      inFlight.push(sqs.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries })));
      if (inFlight.length >= 32) await Promise.all(inFlight.splice(0));
    }
    await Promise.all(inFlight);
  };
  try {
    // ElasticMQ runs on the JVM: a first, unreported round trip of messages warms its JIT.
    const warm = await sqs.createQueue(`bench-warmup-${Date.now()}`);
    await produce(warm, Math.min(N, 20_000));
    await drainRawSqs(sqs.client, warm);
    for (const phase of ["raw", "source", "sink"] as const) {
      const url = await sqs.createQueue(`bench-${phase}-${Date.now()}`);
      let started = performance.now();
      await produce(url, N);
      let seconds = (performance.now() - started) / 1000;
      print({ bench: "sqs-produce", phase, messages: N, seconds: round(seconds, 2), perSecond: round(N / seconds) });

      if (phase === "raw") {
        started = performance.now();
        const n = await drainRawSqs(sqs.client, url);
        seconds = (performance.now() - started) / 1000;
        print({ bench: "sqs-raw", what: `@aws-sdk/client-sqs alone: ${concurrency} parallel ReceiveMessage of 10 + DeleteMessageBatch, no decoding (the server's ceiling)`, messages: n, seconds: round(seconds, 2), perSecond: round(n / seconds) });
        continue;
      }
      const source = new SQSConnector({ queueUrl: url, concurrency, waitTimeSeconds: 1, visibilityTimeout: 120 });
      if (phase === "source") {
        const mem = rss();
        started = performance.now();
        const n = await drainSource(source, 10 * concurrency);
        seconds = (performance.now() - started) / 1000;
        mem.stop();
        print({ bench: "sqs-source-only", what: `SQSConnector receive (${concurrency} parallel ReceiveMessage of 10) + DeleteMessageBatch, no sink`, messages: n, seconds: round(seconds, 2), perSecond: round(n / seconds), peakRssMb: mem.peak() });
      } else {
        await drainSink("sqs-sink", `SQSConnector (${concurrency} parallel receives) + StreamSink available_now + duckdb validation + DuckDB merge, delete after commit`, source, dir);
        const left = await sqs.depth(url);
        if (left.total !== 0) throw new Error(`sqs: ${left.total} messages left after the drain`);
      }
    }
  } finally {
    await sqs.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function drainRawSqs(client: SQSClient, url: string): Promise<number> {
  let n = 0;
  while (true) {
    const got = await Promise.all(
      Array.from({ length: concurrency }, () => client.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }))),
    );
    const messages = got.flatMap((r) => r.Messages ?? []);
    if (messages.length === 0) return n;
    n += messages.length;
    const deletes = [];
    for (let i = 0; i < messages.length; i += 10) {
      const entries = messages.slice(i, i + 10).map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! }));
      deletes.push(client.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: entries })));
    }
    await Promise.all(deletes);
  }
}

async function benchPubSub(): Promise<void> {
  const ps = await startPubSub();
  const dir = mkdtempSync(join(tmpdir(), "ll-bench-pubsub-"));
  try {
    for (const phase of ["raw", "source", "sink"] as const) {
      const { topic, subscription } = await ps.createSubscription(`bench-${phase}-${Date.now()}`, { ackDeadlineSeconds: 60 });
      const t = ps.pubsub.topic(topic, { batching: { maxMessages: 1000, maxMilliseconds: 10 } });
      let started = performance.now();
      for (let i = 0; i < N; i += 5000) {
        const chunk = [];
        for (let j = i; j < Math.min(N, i + 5000); j++) chunk.push(t.publishMessage({ data: Buffer.from(JSON.stringify(orderEvent(j))) }));
        await Promise.all(chunk);
      }
      let seconds = (performance.now() - started) / 1000;
      print({ bench: "pubsub-produce", phase, messages: N, seconds: round(seconds, 2), perSecond: round(N / seconds) });

      if (phase === "raw") {
        const sub = ps.pubsub.subscription(subscription, {
          flowControl: { maxMessages: Math.max(1000, batchSize * 2), allowExcessMessages: false },
          streamingOptions: { maxStreams: streams },
        });
        started = performance.now();
        let n = 0;
        await new Promise<void>((resolve, reject) => {
          sub.on("message", (m: { ack(): void }) => {
            m.ack();
            if (++n === N) resolve();
          });
          sub.on("error", reject);
        });
        seconds = (performance.now() - started) / 1000;
        await sub.close();
        print({ bench: "pubsub-raw", what: `@google-cloud/pubsub alone, ${streams} streams, ack on arrival (the fake's ceiling)`, messages: n, seconds: round(seconds, 2), perSecond: round(n / seconds) });
        continue;
      }
      const source = new PubSubConnector({ projectId: ps.projectId, subscription, maxMessages: Math.max(1000, batchSize * 2), streams });
      if (phase === "source") {
        const mem = rss();
        started = performance.now();
        const n = await drainSource(source, batchSize);
        seconds = (performance.now() - started) / 1000;
        mem.stop();
        print({ bench: "pubsub-source-only", what: `PubSubConnector streaming pull (${streams} streams) + ack, no sink`, messages: n, seconds: round(seconds, 2), perSecond: round(n / seconds), peakRssMb: mem.peak() });
      } else {
        await drainSink("pubsub-sink", `PubSubConnector (${streams} streams) + StreamSink available_now + duckdb validation + DuckDB merge, ack after commit`, source, dir);
      }
    }
  } finally {
    await ps.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

print({ bench: "queues", messages: N, batchSize, sqsConcurrency: concurrency, pubsubStreams: streams, node: process.version, cpus: (await import("node:os")).cpus().length });
if (flags.only !== "pubsub") await benchSqs();
if (flags.only !== "sqs") await benchPubSub();
