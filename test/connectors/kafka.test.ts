/**
 * The Kafka connector against a real Apache Kafka broker (KRaft, single node on 127.0.0.1,
 * provisioned from Maven Central by scripts/provision-kafka.sh). Every case ends by counting
 * the rows of a DuckDB merge target and its quarantine: no loss, no duplicates.
 *
 * Records are produced deterministically: order event i goes to partition i % 3 and, produced
 * in order into a fresh topic, lands at offset floor(i / 3). So a (partition, offset) tells the
 * test exactly which event it is, and which events an end snapshot covers.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DuckDBInstance } from "../../src/util/duckdb.js";
import kafkajs from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { KafkaConnector, KafkaOffsetSource, kafkaSpec } from "../../src/sources/kafka/connector.js";
import { createSource } from "../../src/sources/registry.js";
import { renderSpecMarkdown } from "../../src/sources/core/spec.js";
import { loadContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { DUCKDB_FILE, resolveLakeConfig } from "../../src/lake/index.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import { startKafka } from "../support/kafka.js";
import { requireService } from "../support/services.js";

const { Kafka, logLevel } = kafkajs;
const PARTITIONS = 3;
const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const childScript = fileURLToPath(new URL("./kafka-child.ts", import.meta.url));

const kafka = await requireService("connectors/kafka (Apache Kafka broker)", () => startKafka());
const dirs: string[] = [];
let producer: kafkajs.Producer | undefined;
afterAll(async () => {
  await producer?.disconnect().catch(() => undefined);
  await kafka?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(name: string): string {
  const d = mkdtempSync(join(tmpdir(), `ll-kafka-${name}-`));
  dirs.push(d);
  return d;
}

function client() {
  return new Kafka({ brokers: kafka!.brokers, clientId: "lakelogic-test", logLevel: logLevel.NOTHING });
}

/** Produce order events [from, from + count) in order; `poison(i)` replaces a value. */
async function produce(topic: string, from: number, count: number, poison?: (i: number) => Buffer | null | undefined): Promise<void> {
  if (!producer) {
    producer = client().producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
  }
  for (let start = from; start < from + count; start += 1000) {
    const end = Math.min(from + count, start + 1000);
    const messages = [];
    for (let i = start; i < end; i++) {
      const bad = poison?.(i);
      messages.push({ partition: i % PARTITIONS, key: String(i), value: bad !== undefined ? bad : JSON.stringify(orderEvent(i)) });
    }
    await producer.send({ topic, messages });
  }
}

const positionOf = (i: number) => ({ partition: i % PARTITIONS, offset: Math.floor(i / PARTITIONS) });

interface LakeContents {
  ids: number[];
  quarantine: Array<{ raw: string | null; rawEncoding: string | null; position: { topic: string; partition: number; offset: number }; ruleIds: string[]; reasons: string[] }>;
}

/** Read the merge target and its quarantine straight from the DuckDB file (read-only). */
async function readLake(lakeDir: string): Promise<LakeContents> {
  const contract = await loadContract(contractPath);
  const config = resolveLakeConfig(contract, { targetPath: lakeDir });
  const instance = await DuckDBInstance.create(join(lakeDir, DUCKDB_FILE), { access_mode: "READ_ONLY" });
  try {
    const conn = await instance.connect();
    try {
      const good = await conn.runAndReadAll(`SELECT order_id::BIGINT AS id FROM "${config.table}"`);
      const bad = await conn.runAndReadAll(
        `SELECT raw, raw_encoding, position::VARCHAR AS position, rule_ids, reasons FROM "${config.quarantine.target}"`,
      );
      return {
        ids: good.getRowObjectsJS().map((r) => Number(r.id)),
        quarantine: bad.getRowObjectsJS().map((r) => ({
          raw: (r.raw as string | null) ?? null,
          rawEncoding: (r.raw_encoding as string | null) ?? null,
          position: JSON.parse(r.position as string) as LakeContents["quarantine"][number]["position"],
          ruleIds: (r.rule_ids as string[] | null) ?? [],
          reasons: (r.reasons as string[] | null) ?? [],
        })),
      };
    } finally {
      conn.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/** Exactly these events in the target (good ones) and in quarantine (bad ones), once each. */
async function expectExactlyOnce(lakeDir: string, topic: string, events: Iterable<number>, isBad: (i: number) => boolean = (i) => isBadOrder(i)) {
  const lake = await readLake(lakeDir);
  const good: number[] = [];
  const bad = new Set<string>();
  let total = 0;
  for (const i of events) {
    total++;
    if (isBad(i)) bad.add(JSON.stringify({ topic, ...positionOf(i) }));
    else good.push(i);
  }
  expect(lake.ids.length, "target rows").toBe(good.length);
  expect(new Set(lake.ids).size, "distinct target rows").toBe(lake.ids.length);
  expect(new Set(lake.ids)).toEqual(new Set(good));
  const positions = lake.quarantine.map((q) => JSON.stringify({ topic: q.position.topic, partition: q.position.partition, offset: q.position.offset }));
  expect(positions.length, "quarantine rows").toBe(bad.size);
  expect(new Set(positions)).toEqual(bad);
  expect(lake.ids.length + positions.length).toBe(total);
  return lake;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

async function highWatermarks(topic: string): Promise<Record<string, number>> {
  const admin = client().admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return Object.fromEntries(offsets.map((o) => [`${topic}:${o.partition}`, Number(o.high)]));
  } finally {
    await admin.disconnect();
  }
}

async function groupOffsets(groupId: string, topic: string): Promise<Record<string, number>> {
  const admin = client().admin();
  await admin.connect();
  try {
    const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return Object.fromEntries((t?.partitions ?? []).map((p) => [`${topic}:${p.partition}`, Number(p.offset)]));
  } finally {
    await admin.disconnect();
  }
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The group's committed offsets have reached every partition's end: lag tools see 0. */
async function groupCaughtUp(groupId: string, topic: string): Promise<boolean> {
  const [group, high] = await Promise.all([groupOffsets(groupId, topic), highWatermarks(topic)]);
  return Object.entries(high).every(([k, v]) => group[k] === v);
}

const brokers = () => kafka!.brokers;

describe("kafka source options (no broker needed)", () => {
  it("validates JSON configs with errors that name the option", async () => {
    await expect(createSource({ type: "kafka", topic: "t", groupId: "g" })).rejects.toThrow(/brokers: is required/);
    await expect(createSource({ type: "kafka", brokers: "b:9092", topic: "t", groupId: "g", brokrs: "x" })).rejects.toThrow(
      /did you mean "brokers"/,
    );
    await expect(createSource({ type: "kafka", brokers: "localhost", topic: "t", groupId: "g" })).rejects.toThrow(/host:port/);
    await expect(
      createSource({ type: "kafka", brokers: "b:9092", topic: "t", groupId: "g", sasl: { mechanism: "gssapi" } }),
    ).rejects.toThrow(/sasl: .*mechanism must be one of/);
    await expect(
      createSource({ type: "kafka", brokers: "b:9092", topic: "t", groupId: "g", sasl: { mechanism: "scram-sha-512", username: "u" } }),
    ).rejects.toThrow(/needs a non-empty string `password`/);
    await expect(createSource({ type: "kafka", brokers: "b:9092", topic: "t", group_id: "g", from_beginning: true, auto_offset_reset: "latest" })).rejects.toThrow(
      /fromBeginning: contradicts/,
    );
    expect(() => new KafkaOffsetSource("t", { brokers: "b:9092", groupId: "g", consumerGroup: "h" })).toThrow(ConfigError);
  });

  it("builds a KafkaOffsetSource from JSON, snake_case and SASL/SSL passed through", async () => {
    process.env.LL_TEST_KAFKA_PASSWORD = "p";
    const source = await createSource({
      type: "kafka",
      brokers: "b1:9092,b2:9093",
      topic: "orders",
      consumer_group: "bronze",
      auto_offset_reset: "latest",
      ssl: true,
      sasl: { mechanism: "SCRAM-SHA-512", username: "u", password: "env:LL_TEST_KAFKA_PASSWORD" },
    });
    expect(source).toBeInstanceOf(KafkaOffsetSource);
    const k = source as KafkaOffsetSource;
    expect(k.description).toBe("kafka orders");
    expect(k.groupId).toBe("bronze");
    const options = (k as unknown as { options: Record<string, unknown> }).options;
    expect(options.brokers).toEqual(["b1:9092", "b2:9093"]);
    expect(options.autoOffsetReset).toBe("latest");
    expect(options.ssl).toBe(true);
    expect(options.sasl).toEqual({ mechanism: "scram-sha-512", username: "u", password: "p" });
    // Secrets never appear in messages.
    await expect(createSource({ type: "kafka", brokers: "b:9092", topic: "t", groupId: "g", sasl: "hunter2" })).rejects.toThrow(
      /sasl: expected an object; got <secret>/,
    );
  });

  it("rejects a cursor of another topic or another kind of source", async () => {
    const s = new KafkaOffsetSource("orders", { brokers: "b:9092", groupId: "g" });
    await expect(s.seek({ "payments:0": 5 })).rejects.toThrow(/not a Kafka cursor of topic "orders"/);
    await expect(s.seek({ offset: 5, exhausted: false })).rejects.toThrow(/CURSOR_MISMATCH|not a Kafka cursor/);
    await s.seek({ "orders:0": 5, "orders:2": 7 });
    const c1 = s.currentCursor();
    expect(c1).toEqual({ "orders:0": 5, "orders:2": 7 });
    expect(s.currentCursor()).toBe(c1); // unchanged → same object, never mutated later
  });

  it("without kafkajs installed, says which package to install", async () => {
    const child = fileURLToPath(new URL("./kafka-nopeer-child.ts", import.meta.url));
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, ["--import", "tsx", child], { stdio: ["ignore", "pipe", "pipe"] });
      let text = "";
      p.stdout.on("data", (c: Buffer) => (text += c.toString()));
      p.stderr.on("data", (c: Buffer) => (text += c.toString()));
      p.on("error", reject);
      p.on("exit", () => resolve(text));
    });
    const result = JSON.parse(out.trim().split("\n").pop() ?? "{}") as { name?: string; code?: string; message?: string };
    expect(result.name).toBe("MissingDependencyError");
    expect(result.code).toBe("MISSING_DEPENDENCY");
    expect(result.message).toContain("npm install kafkajs");
  }, 30_000);

  it("documents every option from the spec", () => {
    const md = renderSpecMarkdown(kafkaSpec);
    for (const key of Object.keys(kafkaSpec.options)) expect(md).toContain(`\`${key}\``);
    expect(md).toContain("npm install kafkajs");
  });
});

describe.skipIf(!kafka)("kafka on a real broker", () => {
  it("iterator API: parsed JSON, group offsets committed, a second consumer continues", async () => {
    const topic = "iter";
    const group = "iter-g";
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, 300);

    const seen: number[] = [];
    const first = new KafkaConnector({ brokers: brokers(), topic, consumerGroup: group, commitIntervalMs: 0, logLevel: "nothing" });
    for await (const event of first.stream()) {
      expect(typeof event).toBe("object");
      seen.push((event as { order_id: number }).order_id);
      if (seen.length === 100) break;
    }
    await first.close();
    // Everything but the event held when the loop broke is committed to the group.
    const committed = Object.values(await groupOffsets(group, topic)).reduce((a, b) => a + Math.max(0, b), 0);
    expect(committed).toBe(99);

    const second = new KafkaConnector({ brokers: brokers(), topic, consumerGroup: group, commitIntervalMs: 0, logLevel: "nothing" });
    // The group stands after the first 99 events: 201 remain, the event held at `break` among
    // them (at-least-once for the caller's loop: it is seen twice).
    for await (const event of second.stream()) {
      seen.push((event as { order_id: number }).order_id);
      if (seen.length === 301) break;
    }
    await second.close();
    expect(new Set(seen)).toEqual(new Set(range(0, 300)));
    // The group is at the end, but for the event held at the last `break`.
    const sum = (o: Record<string, number>) => Object.values(o).reduce((x, y) => x + y, 0);
    expect(sum(await highWatermarks(topic)) - sum(await groupOffsets(group, topic))).toBe(1);
  }, 60_000);

  it("StreamSink available_now from a JSON source config: exact counts, cursor at the end, lag tools see progress", async () => {
    const topic = "drain";
    const group = "drain-g";
    const N = 10_000;
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, N);
    const dir = tempDir("drain");
    const lake = join(dir, "lake");
    const config = { type: "kafka", brokers: brokers().join(","), topic, group_id: group, log_level: "nothing" };

    const sink = new StreamSink(contractPath, await createSource(config), { targetPath: lake, checkpoint: join(dir, "ck.sqlite"), batchSize: 1000 });
    const summary = await sink.run("available_now");
    const high = await highWatermarks(topic);
    expect(summary.sourceCount).toBe(N);
    expect(summary.goodCount + summary.badCount).toBe(N);
    expect(summary.badCount).toBe(range(0, N).filter((i) => isBadOrder(i)).length);
    expect(summary.cursor).toEqual(high);
    expect(summary.batches).toBe(10);
    await expectExactlyOnce(lake, topic, range(0, N));
    expect(await groupOffsets(group, topic)).toEqual(high);

    // Nothing new: the next run ends at once, without a batch.
    const again = await new StreamSink(contractPath, await createSource(config), { targetPath: lake, checkpoint: join(dir, "ck.sqlite") }).run("available_now");
    expect(again.batches).toBe(0);
    expect(again.resumedFrom).toEqual(high);
    expect(again.cursor).toEqual(high);
  }, 90_000);

  it("resumes after SIGKILL of the consumer process: no loss, no duplicates", async () => {
    const topic = "kill";
    const group = "kill-g";
    const N = 20_000;
    const MIN_KILLS = 5;
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, N);
    const dir = tempDir("kill");
    const lake = join(dir, "lake");
    const ckpt = join(dir, "ck.sqlite");
    const args = [brokers().join(","), topic, group, lake, ckpt, "500"];

    let kills = 0;
    let killsAfterWrite = 0;
    let lives = 0;
    for (;;) {
      lives++;
      expect(lives, "the child should finish once the kills stop").toBeLessThan(MIN_KILLS + 5);
      const plan = kills >= MIN_KILLS ? {} : kills % 2 === 0 ? { killOnWrite: 1 + (kills % 3) } : { killOnCommit: 2 + kills };
      const life = await runChild(args, plan);
      if (life.exitCode === 0) {
        expect(life.output).toMatch(/^done /m);
        break;
      }
      if (life.signal !== "SIGKILL") throw new Error(`child failed on its own (exit ${life.exitCode}):\n${life.output}`);
      kills++;
      if (life.killedAfterWrite) killsAfterWrite++;
    }
    expect(kills).toBe(MIN_KILLS);
    expect(killsAfterWrite).toBeGreaterThan(0);

    await expectExactlyOnce(lake, topic, range(0, N));
    const store = new SQLiteCheckpointStore(ckpt);
    const record = await store.load("stream::orders");
    await store.close();
    expect(record?.cursor).toEqual(await highWatermarks(topic));
    // Only committed batches count, and each record was committed once.
    expect(record?.totals.sourceCount).toBe(N);
  }, 240_000);

  it("survives a broker restart mid-stream", async () => {
    const topic = "restart";
    const group = "restart-g";
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, 6_000);
    const dir = tempDir("restart");
    const lake = join(dir, "lake");
    const stop = new AbortController();
    const warnings: string[] = [];
    let committed = 0;
    const source = new KafkaOffsetSource(topic, {
      brokers: brokers(),
      groupId: group,
      bufferMaxMessages: 1_000,
      logLevel: "nothing",
      onWarning: (m) => warnings.push(m),
    });
    const sink = new StreamSink(contractPath, source, {
      targetPath: lake,
      checkpoint: join(dir, "ck.sqlite"),
      batchSize: 500,
      maxWaitMs: 300,
      signal: stop.signal,
      handleSignals: false,
      // Slow batches down so the restart lands mid-stream.
      onBatch: async (b) => {
        committed = b.totals.sourceCount;
        await new Promise((r) => setTimeout(r, 50));
      },
    });
    const running = sink.run("continuous");
    try {
      await waitFor("the first batches", () => committed >= 1_000, 60_000);
      expect(committed).toBeLessThan(6_000);
      await kafka!.restart({ hard: true });
      await produce(topic, 6_000, 6_000);
      await waitFor("all 12,000 records committed", () => committed >= 12_000, 120_000);
      await waitFor("group offsets at the end", () => groupCaughtUp(group, topic), 30_000);
    } finally {
      stop.abort();
    }
    const summary = await running;
    expect(summary.stoppedBy).toBe("signal");
    expect(summary.totals.sourceCount).toBe(12_000);
    await expectExactlyOnce(lake, topic, range(0, 12_000));
  }, 240_000);

  it("available_now ends at the snapshot while the topic grows; the next run reads the rest", async () => {
    const topic = "grow";
    const group = "grow-g";
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, 6_000);
    const dir = tempDir("grow");
    const lake = join(dir, "lake");
    const ckpt = join(dir, "ck.sqlite");
    let next = 6_000;
    let producing = true;
    const background = (async () => {
      while (producing) {
        await produce(topic, next, 300);
        next += 300;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    let end: Record<string, number> | undefined;
    let summary;
    try {
      await waitFor("the producer to be writing", () => next > 6_600, 30_000);
      const source = new KafkaOffsetSource(topic, { brokers: brokers(), groupId: group, logLevel: "nothing" });
      summary = await new StreamSink(contractPath, source, {
        targetPath: lake,
        checkpoint: ckpt,
        batchSize: 500,
        onBatch: (b: BatchReport) => {
          end = b.endCursor as Record<string, number>;
        },
      }).run("available_now");
    } finally {
      producing = false;
      await background;
    }
    expect(end).toBeDefined();
    // I7: the drain stopped exactly at the snapshot, though the topic kept growing during it.
    expect(summary.cursor).toEqual(end);
    const after = await highWatermarks(topic);
    const snapshotTotal = Object.values(end!).reduce((a, b) => a + b, 0);
    const total = Object.values(after).reduce((a, b) => a + b, 0);
    expect(total).toBe(next);
    expect(snapshotTotal).toBeLessThan(total);
    expect(summary.sourceCount).toBe(snapshotTotal);
    const inSnapshot = range(0, next).filter((i) => positionOf(i).offset < end![`${topic}:${i % PARTITIONS}`]!);
    expect(inSnapshot.length).toBe(snapshotTotal);
    await expectExactlyOnce(lake, topic, inSnapshot);

    const rest = await new StreamSink(contractPath, new KafkaOffsetSource(topic, { brokers: brokers(), groupId: group, logLevel: "nothing" }), {
      targetPath: lake,
      checkpoint: ckpt,
      batchSize: 500,
    }).run("available_now");
    expect(rest.resumedFrom).toEqual(end);
    expect(rest.sourceCount).toBe(total - snapshotTotal);
    expect(rest.cursor).toEqual(after);
    await expectExactlyOnce(lake, topic, range(0, next));
  }, 120_000);

  it("rebalance between two consumers of one group: nothing lost, replays absorbed by the merge", async () => {
    const topic = "rebalance";
    const group = "rebalance-g";
    const BATCH = 300;
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, 9_000);
    const dir = tempDir("rebalance");
    const lake = join(dir, "lake");
    const ckpt = join(dir, "ck.sqlite");

    const member = (name: string) => {
      const stop = new AbortController();
      const state = { committed: 0, batches: 0, cursor: {} as Record<string, number> };
      const source = new KafkaOffsetSource(topic, {
        brokers: brokers(),
        groupId: group,
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 1_000,
        bufferMaxMessages: 1_000,
        // Small fetches interleave the partitions, so every partition is mid-stream at the rebalance.
        maxBytesPerPartition: 16_384,
        logLevel: "nothing",
      });
      const run = new StreamSink(contractPath, source, {
        targetPath: lake,
        checkpoint: ckpt,
        // One writer per checkpoint key (I3): each member has its own.
        checkpointKey: `orders-${name}`,
        batchSize: BATCH,
        maxWaitMs: 200,
        signal: stop.signal,
        handleSignals: false,
        onBatch: async (b) => {
          state.committed = b.totals.sourceCount;
          state.cursor = b.cursor as Record<string, number>;
          state.batches++;
          await new Promise((r) => setTimeout(r, 20));
        },
      }).run("continuous");
      return { stop, state, run };
    };

    const a = member("a");
    let b: ReturnType<typeof member> | undefined;
    try {
      // a has read part of every partition (none finished) before b joins.
      const midStream = () => range(0, PARTITIONS).every((p) => (a.state.cursor[`${topic}:${p}`] ?? 0) >= 300);
      await waitFor("member a to be mid-way through every partition", midStream, 60_000);
      expect(a.state.committed).toBeLessThan(9_000);
      b = member("b"); // joins: the group rebalances, a gives up partitions mid-stream
      const producing = produce(topic, 9_000, 9_000);
      await waitFor("member b to get partitions and commit", () => b!.state.committed > 0, 60_000);
      await producing;
      await waitFor("the group to catch up", () => groupCaughtUp(group, topic), 120_000);
      a.stop.abort(); // leaves: b takes every partition
      const sa = await a.run;
      expect(sa.stoppedBy).toBe("signal");
      await produce(topic, 18_000, 3_000);
      await waitFor("the group to catch up after a left", () => groupCaughtUp(group, topic), 120_000);
    } finally {
      a.stop.abort();
      b?.stop.abort();
    }
    const [sa, sb] = await Promise.all([a.run, b.run]);
    const TOTAL = 21_000;
    const read = sa.totals.sourceCount + sb.totals.sourceCount;
    console.info(`rebalance: members read ${sa.totals.sourceCount} + ${sb.totals.sourceCount} records for ${TOTAL} (${read - TOTAL} replayed)`);
    expect(sa.totals.sourceCount).toBeGreaterThan(0);
    expect(sb.totals.sourceCount).toBeGreaterThan(0);
    expect(read).toBeGreaterThanOrEqual(TOTAL);
    // Duplicates come only from batches in flight at a rebalance (two rebalances here).
    expect(read - TOTAL).toBeLessThanOrEqual(2 * BATCH * PARTITIONS);
    await expectExactlyOnce(lake, topic, range(0, TOTAL));
  }, 300_000);

  it("a partition added later starts per autoOffsetReset (earliest)", async () => {
    const topic = "grown-partitions";
    const group = "grown-partitions-g";
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, 300);
    const dir = tempDir("partitions");
    const lake = join(dir, "lake");
    const run = () =>
      new StreamSink(contractPath, new KafkaOffsetSource(topic, { brokers: brokers(), groupId: group, logLevel: "nothing" }), {
        targetPath: lake,
        checkpoint: join(dir, "ck.sqlite"),
        batchSize: 100,
      }).run("available_now");
    expect((await run()).cursor).toEqual({ [`${topic}:0`]: 100, [`${topic}:1`]: 100, [`${topic}:2`]: 100 });

    const admin = client().admin();
    await admin.connect();
    try {
      await admin.createPartitions({ topicPartitions: [{ topic, count: PARTITIONS + 1 }] });
    } finally {
      await admin.disconnect();
    }
    // Events 300..349 go to the new partition 3 (offsets 0..49).
    const p = client().producer();
    await p.connect();
    await p.send({ topic, messages: range(300, 350).map((i) => ({ partition: 3, key: String(i), value: JSON.stringify(orderEvent(i)) })) });
    await p.disconnect();

    const second = await run();
    expect(second.sourceCount).toBe(50);
    expect(second.cursor).toEqual({ [`${topic}:0`]: 100, [`${topic}:1`]: 100, [`${topic}:2`]: 100, [`${topic}:3`]: 50 });
    const lakeRows = await readLake(lake);
    const goodIds = range(0, 350).filter((i) => !isBadOrder(i));
    expect(new Set(lakeRows.ids)).toEqual(new Set(goodIds));
    expect(lakeRows.ids.length).toBe(goodIds.length);
  }, 60_000);

  it("passes SASL credentials through: the right ones read, wrong ones fail with a clear error", async () => {
    const topic = "sasl";
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, 600);
    const { brokers: saslBrokers, mechanism, username, password } = kafka!.sasl;
    const dir = tempDir("sasl");
    // A JSON config names the password's variable (a literal one is refused).
    process.env.LL_TEST_KAFKA_SASL_PASSWORD = password;
    const sasl = { mechanism, username, password: "env:LL_TEST_KAFKA_SASL_PASSWORD" };
    const source = await createSource({ type: "kafka", brokers: saslBrokers, topic, groupId: "sasl-g", sasl, logLevel: "nothing" });
    const summary = await new StreamSink(contractPath, source, { targetPath: join(dir, "lake"), checkpoint: join(dir, "ck.sqlite") }).run("available_now");
    expect(summary.sourceCount).toBe(600);

    const wrong = new KafkaOffsetSource(topic, {
      brokers: saslBrokers,
      groupId: "sasl-g2",
      sasl: { mechanism: "plain", username, password: "not-the-password" },
      logLevel: "nothing",
    });
    const failed = new StreamSink(contractPath, wrong, { targetPath: join(dir, "lake2"), checkpoint: join(dir, "ck2.sqlite") }).run("available_now");
    await expect(failed).rejects.toThrow(/SASL|[Aa]uthentication/);
    await expect(failed).rejects.not.toThrow(/not-the-password/);
  }, 60_000);

  it("quarantines poison messages with their bytes (base64), partition, offset and reason; the stream goes on", async () => {
    const topic = "poison";
    const group = "poison-g";
    const N = 3_000;
    const poisonBytes = (i: number): Buffer | null | undefined => {
      if (i % 97 === 5) return Buffer.from([0xc3, 0x28, i & 0xff, 0xff]); // not UTF-8
      if (i % 97 === 50) return Buffer.from(`{"order_id": ${i}, oops`); // not JSON
      if (i % 97 === 70) return null; // a tombstone
      return undefined;
    };
    const isPoison = (i: number) => poisonBytes(i) !== undefined;
    await kafka!.createTopic(topic, PARTITIONS);
    await produce(topic, 0, N, poisonBytes);
    const dir = tempDir("poison");
    const lake = join(dir, "lake");
    const summary = await new StreamSink(contractPath, new KafkaOffsetSource(topic, { brokers: brokers(), groupId: group, logLevel: "nothing" }), {
      targetPath: lake,
      checkpoint: join(dir, "ck.sqlite"),
      batchSize: 250,
    }).run("available_now");
    expect(summary.sourceCount).toBe(N);

    const lakeRows = await expectExactlyOnce(lake, topic, range(0, N), (i) => isPoison(i) || isBadOrder(i));
    const poisoned = range(0, N).filter(isPoison);
    expect(poisoned.length).toBeGreaterThan(60);
    const byPosition = new Map(lakeRows.quarantine.map((q) => [`${q.position.partition}:${q.position.offset}`, q]));
    for (const i of poisoned) {
      const { partition, offset } = positionOf(i);
      const q = byPosition.get(`${partition}:${offset}`);
      expect(q, `poison message ${i}`).toBeDefined();
      expect(q!.position).toEqual({ topic, partition, offset });
      expect(q!.ruleIds).toEqual(["decode"]);
      expect(q!.rawEncoding).toBe("base64");
      expect(Buffer.from(q!.raw ?? "", "base64")).toEqual(poisonBytes(i) ?? Buffer.alloc(0));
      expect(q!.reasons[0]).toMatch(i % 97 === 5 ? /not valid UTF-8/ : i % 97 === 50 ? /not JSON/ : /tombstone/);
    }
  }, 90_000);
});

interface Life {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  killedAfterWrite: boolean;
}

/** One life of the child: SIGKILL right after its Nth write (before the commit), or after its Nth commit. */
function runChild(args: string[], plan: { killOnWrite?: number; killOnCommit?: number }): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", childScript, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let writes = 0;
    let commits = 0;
    let killed = false;
    let killedAfterWrite = false;
    // Never leave a child behind: a life that hangs fails the test.
    const guard = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      writes += (text.match(/^written /gm) ?? []).length;
      commits += (text.match(/^committed /gm) ?? []).length;
      if (killed) return;
      if (plan.killOnWrite !== undefined && writes >= plan.killOnWrite) {
        killed = killedAfterWrite = true;
        child.kill("SIGKILL");
      } else if (plan.killOnCommit !== undefined && commits >= plan.killOnCommit) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (exitCode, signal) => {
      clearTimeout(guard);
      resolve({ exitCode, signal, output, killedAfterWrite });
    });
  });
}
