/**
 * `npm run bench:kafka` (`npx tsx bench/kafka.ts`) — Kafka read throughput, printed as JSON lines.
 *
 * Starts a throwaway broker (test/support/kafka.ts: KRaft single node on 127.0.0.1, provisioned
 * from Maven Central by scripts/provision-kafka.sh), produces N order events across 3 partitions,
 * then drains them twice with fresh consumer groups:
 *
 *  - raw: kafkajs itself, `eachBatch` counting messages — the ceiling for anything built on it;
 *  - sink: KafkaOffsetSource + StreamSink (available_now) + DuckDB merge on order_id, with
 *    validation against examples/orders.yaml, quarantine and a checkpoint per batch.
 *
 * and prints both rates and their ratio (target: sink / raw >= 0.5).
 *
 * A third line, for reference, drains with the source alone (no validation, no writes).
 *
 * Flags: --messages N (default 1,000,000), --batch N (sink batch size, default 10,000),
 * --engine duckdb|polars, --only raw|source|sink.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { orderEvent } from "../examples/orders.js";
import { KafkaOffsetSource } from "../src/sources/kafka/connector.js";
import type { EngineName } from "../src/engine/types.js";
import { StreamSink } from "../src/sink/index.js";
import { startKafka } from "../test/support/kafka.js";

const { values: flags } = parseArgs({
  options: {
    messages: { type: "string", default: "1000000" },
    batch: { type: "string", default: "10000" },
    engine: { type: "string", default: "duckdb" },
    only: { type: "string" },
  },
});
const N = Number(flags.messages);
const batchSize = Number(flags.batch);
const engine = flags.engine as EngineName;
const PARTITIONS = 3;
const TOPIC = "bench-orders";
const contract = fileURLToPath(new URL("../examples/orders.yaml", import.meta.url));
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;
const print = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);

function rss(): { peak: () => number; stop: () => void } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 250);
  return { peak: () => mb(Math.max(peak, process.memoryUsage().rss)), stop: () => clearInterval(timer) };
}

const broker = await startKafka({ heapMb: 768 });
const dir = mkdtempSync(join(tmpdir(), "ll-bench-kafka-"));
try {
  const { Kafka, logLevel } = kafkajs;
  const kafka = new Kafka({ brokers: broker.brokers, clientId: "lakelogic-bench", logLevel: logLevel.ERROR });
  await broker.createTopic(TOPIC, PARTITIONS);

  // Produce: pre-serialised values, large sends, several in flight.
  const produceStarted = process.hrtime.bigint();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  let bytes = 0;
  const CHUNK = 5_000;
  const inflight = new Set<Promise<unknown>>();
  for (let start = 0; start < N; start += CHUNK) {
    const messages = [];
    for (let i = start; i < Math.min(N, start + CHUNK); i++) {
      const value = JSON.stringify(orderEvent(i));
      bytes += value.length;
      messages.push({ partition: i % PARTITIONS, key: String(i), value });
    }
    const p = producer.send({ topic: TOPIC, messages, acks: 1 });
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    if (inflight.size >= 4) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  await producer.disconnect();
  const produceSeconds = Number(process.hrtime.bigint() - produceStarted) / 1e9;
  print({ bench: "kafka-produce", messages: N, partitions: PARTITIONS, valueBytes: bytes, seconds: round(produceSeconds, 2), perSecond: round(N / produceSeconds) });

  let rawRate: number | undefined;
  if (!flags.only || flags.only === "raw") {
    const mem = rss();
    const consumer = kafka.consumer({ groupId: "bench-raw", maxWaitTimeInMs: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    const started = process.hrtime.bigint();
    let seen = 0;
    await new Promise<void>((resolve) => {
      void consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          seen += batch.messages.length;
          if (seen >= N) resolve();
        },
      });
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    mem.stop();
    await consumer.disconnect();
    rawRate = N / seconds;
    print({ bench: "kafka-raw-consume", what: "kafkajs eachBatch, counting", messages: seen, seconds: round(seconds, 2), perSecond: round(rawRate), peakRssMb: mem.peak() });
  }

  // For reference: the source alone (decode, cursor per record, no validation or writes).
  if (!flags.only || flags.only === "source") {
    const mem = rss();
    const source = new KafkaOffsetSource(TOPIC, { brokers: broker.brokers, groupId: "bench-source" });
    await source.seek(undefined);
    await source.endCursor();
    const started = process.hrtime.bigint();
    let seen = 0;
    let bad = 0;
    for await (const r of source.read({ mode: "available_now", signal: new AbortController().signal })) {
      seen++;
      if (r.decodeError !== undefined) bad++;
      source.currentCursor(); // as the sink does after every record
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    mem.stop();
    await source.close();
    print({ bench: "kafka-source-only", what: "KafkaOffsetSource.read(): JSON decode + cursor per record, no sink", messages: seen, decodeErrors: bad, seconds: round(seconds, 2), perSecond: round(seen / seconds), peakRssMb: mem.peak() });
  }

  let sinkRate: number | undefined;
  if (!flags.only || flags.only === "sink") {
    const mem = rss();
    const started = process.hrtime.bigint();
    const source = new KafkaOffsetSource(TOPIC, { brokers: broker.brokers, groupId: "bench-sink" });
    const summary = await new StreamSink(contract, source, {
      engine,
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "checkpoints.sqlite"),
      batchSize,
      maxWaitMs: 5_000,
      handleSignals: false,
    }).run("available_now");
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    mem.stop();
    sinkRate = summary.sourceCount / seconds;
    print({
      bench: "kafka-sink",
      what: `KafkaOffsetSource + StreamSink available_now + ${engine} validation + DuckDB merge`,
      messages: summary.sourceCount,
      good: summary.goodCount,
      bad: summary.badCount,
      batches: summary.batches,
      batchSize,
      seconds: round(seconds, 2),
      perSecond: round(sinkRate),
      peakRssMb: mem.peak(),
    });
    if (summary.sourceCount !== N) throw new Error(`the sink read ${summary.sourceCount} of ${N} messages`);
  }

  if (rawRate !== undefined && sinkRate !== undefined) {
    print({ bench: "kafka-ratio", sinkOverRaw: round(sinkRate / rawRate, 3), target: 0.5, met: sinkRate / rawRate >= 0.5 });
  }
} finally {
  await broker.stop();
  rmSync(dir, { recursive: true, force: true });
}
