/**
 * The Kafka source at the edges of a topic, against a real Apache Kafka broker: transaction
 * markers and aborted transactions at a partition's end, partitions added while a run reads,
 * tombstones. Every case counts the rows of the DuckDB merge target (examples/orders.yaml,
 * keyed on order_id) and its quarantine.
 *
 * The test's vitest timeout bounds each run: a drain that never ends fails the test.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { isBadOrder, orderEvent } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { loadContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { DUCKDB_FILE, resolveLakeConfig } from "../../src/lake/index.js";
import { readQuarantine, readTable } from "../../src/lake/read.js";
import { StreamSink } from "../../src/sink/index.js";
import { KafkaOffsetSource } from "../../src/sources/kafka/connector.js";
import { createSource } from "../../src/sources/registry.js";
import { DuckDBInstance } from "../../src/util/duckdb.js";
import { startKafka } from "../support/kafka.js";
import { waitFor } from "../support/proc.js";
import { requireService } from "../support/services.js";

const { Kafka, logLevel } = kafkajs;
const PARTITIONS = 3;
const contractPath = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const childScript = fileURLToPath(new URL("./kafka-child.ts", import.meta.url));

const kafka = await requireService("connectors/kafka edges (Apache Kafka broker)", () => startKafka());
const dirs: string[] = [];
afterAll(async () => {
  await kafka?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(name: string): string {
  const d = mkdtempSync(join(tmpdir(), `ll-kafka-edges-${name}-`));
  dirs.push(d);
  return d;
}

const client = () => new Kafka({ brokers: kafka!.brokers, clientId: "lakelogic-test", logLevel: logLevel.NOTHING });
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
const message = (i: number) => ({ partition: i % PARTITIONS, key: String(i), value: JSON.stringify(orderEvent(i)) });

interface QuarantineRow {
  record: unknown;
  raw: string | null;
  position: { topic: string; partition: number; offset: number };
  ruleIds: string[];
  reasons: string[];
}

/** The merge target's order ids and its quarantine, straight from the DuckDB file (read-only). */
async function readLake(lakeDir: string): Promise<{ ids: number[]; quarantine: QuarantineRow[] }> {
  const config = resolveLakeConfig(await loadContract(contractPath), { targetPath: lakeDir });
  const instance = await DuckDBInstance.create(join(lakeDir, DUCKDB_FILE), { access_mode: "READ_ONLY" });
  try {
    const conn = await instance.connect();
    try {
      const good = await conn.runAndReadAll(`SELECT order_id::BIGINT AS id FROM "${config.table}"`);
      const bad = await conn.runAndReadAll(
        `SELECT record::VARCHAR AS record, raw, position::VARCHAR AS position, rule_ids, reasons FROM "${config.quarantine.target}"`,
      );
      return {
        ids: good.getRowObjectsJS().map((r) => Number(r.id)),
        quarantine: bad.getRowObjectsJS().map((r) => ({
          record: r.record === null ? null : JSON.parse(r.record as string),
          raw: (r.raw as string | null) ?? null,
          position: JSON.parse(r.position as string) as QuarantineRow["position"],
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

/** Exactly the good ones of `events` in the target, the bad ones in quarantine, once each. */
async function expectEvents(lakeDir: string, events: readonly number[]): Promise<void> {
  const lake = await readLake(lakeDir);
  const good = events.filter((i) => !isBadOrder(i));
  expect(lake.ids.length, "target rows").toBe(good.length);
  expect(new Set(lake.ids)).toEqual(new Set(good));
  expect(lake.quarantine.length, "quarantine rows").toBe(events.length - good.length);
}

describe("kafka edge options (no broker needed)", () => {
  it("metadataMaxAgeMs: validated, and mapped from the Python form's metadata_max_age_ms", async () => {
    const optionsOf = (s: unknown) => (s as { options: Record<string, unknown> }).options;
    expect(optionsOf(new KafkaOffsetSource("t", { brokers: "b:9092" })).metadataMaxAgeMs).toBe(300_000);
    expect(optionsOf(await createSource({ type: "kafka", brokers: "b:9092", topic: "t", metadata_max_age_ms: 2_000 })).metadataMaxAgeMs).toBe(2_000);
    await expect(createSource({ type: "kafka", brokers: "b:9092", topic: "t", metadataMaxAgeMs: 5 })).rejects.toThrow(/metadataMaxAgeMs/);
    const stream = await createSource({ type: "stream", path: "t", options: { kind: "kafka", brokers: "b:9092", metadata_max_age_ms: 1_500 } });
    expect(optionsOf(stream).metadataMaxAgeMs).toBe(1_500);
  });
});

describe.skipIf(!kafka)("kafka edges on a real broker", () => {
  it("available_now ends at the snapshot when transaction markers and an aborted transaction end the partitions", async () => {
    const topic = "tx-end";
    await kafka!.createTopic(topic, PARTITIONS);
    const producer = client().producer({ transactionalId: "lakelogic-test-tx", idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      // Three committed transactions: each partition's last offset is a commit marker.
      for (let t = 0; t < 3; t++) {
        const tx = await producer.transaction();
        await tx.send({ topic, messages: range(t * 100, t * 100 + 100).map(message) });
        await tx.commit();
      }
      const first = tempDir("tx-end");
      const run = (dir: string, groupId: string) =>
        new StreamSink(contractPath, new KafkaOffsetSource(topic, { brokers: kafka!.brokers, groupId, logLevel: "nothing" }), {
          targetPath: join(dir, "lake"),
          checkpoint: join(dir, "ck.sqlite"),
          batchSize: 50,
        }).run("available_now");
      const committed = await run(first, "tx-first");
      expect(committed.sourceCount).toBe(300);
      expect(committed.cursor).toEqual(await highWatermarks(topic));
      await expectEvents(join(first, "lake"), range(0, 300));

      // Then an aborted transaction: its records and its abort marker end every partition.
      const tx = await producer.transaction();
      await tx.send({ topic, messages: range(300, 330).map(message) });
      await tx.abort();
      const second = tempDir("tx-abort");
      const withAbort = await run(second, "tx-second");
      expect(withAbort.sourceCount).toBe(300);
      const end = await highWatermarks(topic);
      expect(withAbort.cursor).toEqual(end);
      await expectEvents(join(second, "lake"), range(0, 300));
      // The first stream resumes at its cursor and skips the aborted transaction the same way.
      const resumed = await run(first, "tx-first");
      expect(resumed.sourceCount).toBe(0);
      expect(resumed.cursor).toEqual(end);
    } finally {
      await producer.disconnect();
    }
  }, 120_000);

  it("partitions added while a continuous run reads are read, within metadataMaxAgeMs", async () => {
    const topic = "grow-partitions-live";
    await kafka!.createTopic(topic, PARTITIONS);
    const producer = client().producer();
    await producer.connect();
    const dir = tempDir("grow-live");
    const stop = new AbortController();
    let committed = 0;
    const source = new KafkaOffsetSource(topic, { brokers: kafka!.brokers, groupId: "grow-live-g", metadataMaxAgeMs: 1_000, logLevel: "nothing" });
    const running = new StreamSink(contractPath, source, {
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "ck.sqlite"),
      batchSize: 100,
      maxWaitMs: 200,
      signal: stop.signal,
      handleSignals: false,
      onBatch: (b) => {
        committed = b.totals.sourceCount;
      },
    }).run("continuous");
    try {
      await producer.send({ topic, messages: range(0, 300).map(message) });
      await waitFor("the first 300 records", async () => committed >= 300, 60_000);
      const admin = client().admin();
      await admin.connect();
      try {
        await admin.createPartitions({ topicPartitions: [{ topic, count: PARTITIONS + 2 }] });
        // A producer sends only to partitions the broker's metadata already lists with a leader.
        await waitFor(
          "the new partitions' leaders",
          async () => {
            const parts = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions ?? [];
            return parts.length === PARTITIONS + 2 && parts.every((p) => p.leader >= 0);
          },
          30_000,
        );
      } finally {
        await admin.disconnect();
      }
      // Events 300..399 go to the new partitions 3 and 4 (a new producer knows of them).
      const later = client().producer();
      await later.connect();
      await later.send({ topic, messages: range(300, 400).map((i) => ({ ...message(i), partition: 3 + (i % 2) })) });
      await later.disconnect();
      expect(await highWatermarks(topic)).toMatchObject({ [`${topic}:3`]: 50, [`${topic}:4`]: 50 });
      // The default (300 s) would leave them unread far beyond this test's timeout.
      await waitFor("the records of the new partitions", async () => committed >= 400, 60_000);
    } finally {
      stop.abort();
      await producer.disconnect();
    }
    const summary = await running;
    expect(summary.totals.sourceCount).toBe(400);
    expect(summary.cursor).toEqual(await highWatermarks(topic));
    expect(summary.cursor).toMatchObject({ [`${topic}:3`]: 50, [`${topic}:4`]: 50 });
    await expectEvents(join(dir, "lake"), range(0, 400));
  }, 120_000);

  it("a tombstone is quarantined with its key, headers, partition and offset", async () => {
    const topic = "tombstones-kept";
    await kafka!.createTopic(topic, PARTITIONS);
    const producer = client().producer();
    await producer.connect();
    const binaryKey = Buffer.from([0xff, 0x00, 0x7f]);
    try {
      // Events 0..29, then deletes of 4, 7 and a key that is not UTF-8, all on partition 1.
      await producer.send({ topic, messages: range(0, 30).map(message) });
      await producer.send({
        topic,
        messages: [
          { partition: 1, key: "4", value: null, headers: { op: "delete", by: ["a", "b"] } },
          { partition: 1, key: "7", value: null },
          { partition: 1, key: binaryKey, value: null },
        ],
      });
    } finally {
      await producer.disconnect();
    }
    const dir = tempDir("tombstones-kept");
    const summary = await new StreamSink(contractPath, new KafkaOffsetSource(topic, { brokers: kafka!.brokers, groupId: "tombstones-kept-g", logLevel: "nothing" }), {
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "ck.sqlite"),
    }).run("available_now");
    expect(summary.sourceCount).toBe(33);
    const lake = await readLake(join(dir, "lake"));
    const tombstones = lake.quarantine.filter((q) => q.ruleIds.includes("decode"));
    tombstones.sort((a, b) => a.position.offset - b.position.offset);
    // Partition 1 holds events 1, 4, …, 28 (offsets 0..9), then the three tombstones.
    expect(tombstones.map((q) => q.position)).toEqual([10, 11, 12].map((offset) => ({ topic, partition: 1, offset })));
    expect(tombstones.map((q) => q.raw)).toEqual(["", "", ""]);
    for (const q of tombstones) expect(q.reasons[0]).toMatch(/tombstone/);
    const records = tombstones.map((q) => q.record as Record<string, unknown>);
    expect(records[0]).toMatchObject({ key: "4", headers: { op: "delete", by: ["a", "b"] } });
    expect(records[1]).toMatchObject({ key: "7" });
    expect(records[1]).not.toHaveProperty("headers");
    expect(records[2]).toMatchObject({ key: binaryKey.toString("base64"), keyEncoding: "base64" });
    for (const r of records) expect(typeof r.timestamp).toBe("number");
    // The deletes are not applied (tombstones: quarantine, the default): the rows stay.
    expect(new Set(lake.ids)).toEqual(new Set(range(0, 30).filter((i) => !isBadOrder(i))));
  }, 60_000);

  it("SIGTERM after a broker SIGKILL and restart: the continuous run commits what it read and its process exits", async () => {
    const topic = "sigterm-after-restart";
    await kafka!.createTopic(topic, PARTITIONS);
    const producer = client().producer();
    await producer.connect();
    await producer.send({ topic, messages: range(0, 3_000).map(message) });
    await producer.disconnect();
    const dir = tempDir("sigterm");
    const lake = join(dir, "lake");
    const ckpt = join(dir, "ck.sqlite");
    const child = spawn(process.execPath, ["--import", "tsx", childScript, kafka!.brokers.join(","), topic, "sigterm-g", lake, ckpt, "500", "continuous"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    let committed = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      for (const m of text.matchAll(/^committed \d+ (\d+)$/gm)) committed += Number(m[1]);
    });
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    // Also when the test times out (a child that never exits): no process outlives the test.
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    await waitFor("the first 3,000 records committed", async () => committed >= 3_000, 60_000);
    await kafka!.restart({ hard: true });
    const again = client().producer();
    await again.connect();
    await again.send({ topic, messages: range(3_000, 6_000).map(message) });
    await again.disconnect();
    await waitFor("the records produced after the restart committed", async () => committed >= 6_000, 120_000);
    child.kill("SIGTERM");
    // The bound is the test's timeout: a process that lingers fails it.
    const exit = await exited;
    expect(exit, output).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/^done .*"stoppedBy":"signal"/m);
    const store = new SQLiteCheckpointStore(ckpt);
    const record = await store.load("stream::orders");
    await store.close();
    expect(record?.cursor).toEqual(await highWatermarks(topic));
    expect(record?.totals.sourceCount).toBe(6_000);
    await expectEvents(lake, range(0, 6_000));
  }, 240_000);

  /**
   * One partition, so the order is the produce order. The batches are cut so that a batch's
   * deletes come after its other rows; batch size 1000 and 2 must end in the same state.
   */
  async function produceWithTombstones(topic: string): Promise<void> {
    await kafka!.createTopic(topic, 1);
    const producer = client().producer();
    await producer.connect();
    const upsert = (i: number) => ({ partition: 0, key: String(i), value: JSON.stringify(orderEvent(i)) });
    const tombstone = (key: string | Buffer | null) => ({ partition: 0, key, value: null });
    try {
      await producer.send({
        topic,
        messages: [
          ...range(0, 30).map(upsert),
          tombstone("4"),
          tombstone("7"),
          upsert(7), // written again after its delete: it stays
          upsert(10),
          tombstone("10"), // deleted after it was written in the same batch: it goes
          tombstone(JSON.stringify({ order_id: 12, note: "a JSON key with the primary-key field" })),
          tombstone("999"), // a key never stored: nothing to delete
          tombstone("not-a-number"), // not an order_id (long): quarantined
          tombstone(null), // no key: quarantined
          tombstone(JSON.stringify({ id: 13 })), // an object without order_id: quarantined
        ],
      });
    } finally {
      await producer.disconnect();
    }
  }

  it("tombstones: delete removes the key's row from a merge target (DuckDB and Parquet), in order, whatever the batch size", async () => {
    const topic = "tombstones-delete";
    await produceWithTombstones(topic);
    const base = await loadContract(contractPath);
    const expected = range(0, 30).filter((i) => !isBadOrder(i) && ![4, 10, 12].includes(i));
    for (const [format, batchSize] of [["duckdb", 1000], ["duckdb", 2], ["parquet", 1000], ["parquet", 2]] as const) {
      const dir = tempDir(`tombstones-delete-${format}-${batchSize}`);
      const contract = { ...base, materialization: { ...base.materialization, format } };
      const source = new KafkaOffsetSource(topic, { brokers: kafka!.brokers, groupId: `td-${format}-${batchSize}`, tombstones: "delete", logLevel: "nothing" });
      const summary = await new StreamSink(contract, source, { targetPath: join(dir, "lake"), checkpoint: join(dir, "ck.sqlite"), batchSize }).run("available_now");
      const what = `${format}, batch size ${batchSize}`;
      expect(summary.sourceCount, what).toBe(40);
      expect(summary.goodCount + summary.badCount + summary.supersededCount, what).toBe(40);
      const ids = (await readTable(contract, { targetPath: join(dir, "lake") })).map((r) => Number(r.order_id));
      expect(ids.length, what).toBe(expected.length);
      expect(new Set(ids), what).toEqual(new Set(expected));
      const quarantine = await readQuarantine(contract, { targetPath: join(dir, "lake") });
      const tombstones = quarantine.filter((q) => (q.position as { offset: number }).offset >= 30);
      expect(tombstones.map((q) => (q.record as { key: unknown }).key).sort(), what).toEqual(['{"id":13}', "not-a-number", null].sort());
      expect(tombstones.find((q) => (q.record as { key: unknown }).key === "not-a-number")?.ruleIds, what).toEqual(["type:order_id"]);
      expect(tombstones.filter((q) => q.ruleIds.includes("delete_key")).length, what).toBe(2);
      // The bad orders among 0..29 are quarantined as usual.
      expect(quarantine.length - tombstones.length, what).toBe(range(0, 30).filter((i) => isBadOrder(i)).length);
    }
  }, 180_000);

  it("tombstones: delete is refused at start on a target that is not merge, or without a primary key", async () => {
    const base = await loadContract(contractPath);
    const source = () => new KafkaOffsetSource("never-read", { brokers: kafka!.brokers, tombstones: "delete", logLevel: "nothing" });
    const dir = tempDir("tombstones-refused");
    const run = (contract: typeof base) => new StreamSink(contract, source(), { targetPath: join(dir, "lake"), checkpoint: join(dir, "ck.sqlite") }).run("available_now");
    const append = run({ ...base, materialization: { ...base.materialization, strategy: "append" } });
    await expect(append).rejects.toThrow(ConfigError);
    await expect(append).rejects.toThrow(/tombstones: .*strategy is append/);
    await expect(run({ ...base, primaryKey: [] })).rejects.toThrow(/tombstones: .*no primary_key/);
  }, 60_000);
});
