/**
 * The two Python-form contracts in examples/python/, run with a bare `lakelogic run CONTRACT` on a
 * real Kafka broker whose SASL_PLAINTEXT + PLAIN listener knows `alice` and `$ConnectionString`
 * (the Event Hubs login). Each contract goes through the same story on its own topic and lake:
 * drain with quarantine and a poison message, a later run that reads only new events, a SIGKILL
 * mid-run, a SIGKILL between write and commit, a full replay into merge, and a key updated twice
 * in one batch.
 */
import { spawn } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import kafkajs from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { startKafka } from "../support/kafka.js";
import { requireService } from "../support/services.js";

const REPO = resolve(".");
const BIN = join(REPO, "bin", "lakelogic.js");
const CHILD = join(REPO, "test", "crash", "run-child.ts");
const PASSWORD = "alice-secret";
// The Event Hubs emulator's form, pointing at loopback; the key is made up.
const CONNECTION_STRING = "Endpoint=sb://127.0.0.1/;SharedAccessKeyName=lakelogic;SharedAccessKey=dGVzdC1rZXk=;UseDevelopmentEmulator=true";

const kafka = await requireService("examples/python contracts on Kafka with SASL", () =>
  startKafka({ saslUsers: { alice: PASSWORD, $ConnectionString: CONNECTION_STRING } }),
);
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-python-"));
afterAll(async () => {
  await kafka?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

interface Life {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run `lakelogic run` (the binary, or the crash child) in `cwd`; `kill` decides when to SIGKILL it. */
function runCli(cwd: string, args: string[], options: { child?: boolean; env?: NodeJS.ProcessEnv; kill?: (stdout: string) => boolean } = {}): Promise<Life> {
  const argv = options.child ? ["--import", import.meta.resolve("tsx"), CHILD, ...args, "--json"] : [BIN, "run", ...args, "--json"];
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, argv, { cwd, env: { ...process.env, ...kafkaEnv(), ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killed = false;
    const kill = () => {
      if (!killed) child.kill("SIGKILL");
      killed = true;
    };
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (options.kill?.(stdout)) kill();
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      done({ code, signal, stdout, stderr });
    });
  });
}

function kafkaEnv(): NodeJS.ProcessEnv {
  const brokers = kafka!.sasl.brokers.join(",");
  return { KAFKA_BROKERS: brokers, KAFKA_PASSWORD: PASSWORD, EVENTHUBS_CONNECTION_STRING: CONNECTION_STRING, EVENTHUBS_KAFKA_BROKERS: brokers };
}

type Summary = { sourceCount: number; goodCount: number; badCount: number; supersededCount: number; batches: number };

function summaryOf(life: Life): Summary {
  expect(life.code, life.stderr).toBe(0);
  // kafkajs may log a transient coordinator error; a secret must never appear.
  expect(life.stderr + life.stdout).not.toContain(PASSWORD);
  expect(life.stderr + life.stdout).not.toContain("dGVzdC1rZXk");
  return JSON.parse(life.stdout.trim().split("\n").pop()!) as Summary;
}

const isBad = (i: number) => i % 10 === 3 || i % 17 === 5;
function ride(i: number, fare?: number): Record<string, unknown> {
  const event: Record<string, unknown> = { ride_id: i, city: "Leeds", fare: fare ?? (i % 10 === 3 ? -1 : 5 + (i % 7)), status: "done" };
  if (i % 17 === 5) delete event["city"];
  return event;
}

/** The committed batch id of `key` in a SQLite checkpoint file (0 before the first commit). */
function committedBatch(file: string, key: string): number {
  if (!existsSync(file)) return 0;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare<[string], { batch_id: number }>("SELECT batch_id FROM lakelogic_checkpoints WHERE key = ?").get(key);
    return row?.batch_id ?? 0;
  } catch {
    return 0; // the table is not created yet
  } finally {
    db.close();
  }
}

function totalsOf(file: string, key: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare<[string], { total_source: number }>("SELECT total_source FROM lakelogic_checkpoints WHERE key = ?").get(key)!.total_source;
  } finally {
    db.close();
  }
}

const CASES = [
  { file: "rides_kafka.yaml", topic: "rides", dataset: "rides", checkpoint: (dir: string) => join(dir, "_checkpoints", "rides.sqlite") },
  { file: "rides_eventhubs.yaml", topic: "rides-eh", dataset: "rides_eh", checkpoint: (dir: string) => join(dir, "data", "checkpoints", "rides_eventhubs.sqlite") },
];

describe.skipIf(!kafka)("examples/python contracts with a bare `lakelogic run`", () => {
  describe.each(CASES)("$file", ({ file, topic, dataset, checkpoint }) => {
    const dir = join(tmp, dataset);
    const contractPath = join(dir, file);
    const checkpointFile = checkpoint(dir);
    const key = `stream::${dataset}`;
    const good = new Map<number, number>();
    let bad = 0;
    let produced = 0;
    let contract: Contract;

    const { Kafka, logLevel } = kafkajs;
    const client = () => new Kafka({ brokers: kafka!.brokers, clientId: "python-contracts-test", logLevel: logLevel.NOTHING });

    async function produce(messages: Array<{ key: string; value: string }>): Promise<void> {
      // Idempotent: a retried send on a cold broker must not write the messages twice.
      const producer = client().producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      try {
        await producer.send({ topic, messages });
      } finally {
        await producer.disconnect();
      }
      produced += messages.length;
      const admin = client().admin();
      await admin.connect();
      try {
        const ends = await admin.fetchTopicOffsets(topic);
        expect(ends.reduce((n, p) => n + Number(p.high), 0), "the topic holds each produced message once").toBe(produced);
      } finally {
        await admin.disconnect();
      }
    }

    async function produceRides(from: number, to: number): Promise<void> {
      const messages = [];
      for (let i = from; i < to; i++) {
        messages.push({ key: String(i), value: JSON.stringify(ride(i)) });
        if (isBad(i)) bad++;
        else good.set(i, ride(i)["fare"] as number);
      }
      await produce(messages);
    }

    let snapshots = 0;
    /**
     * A copy of the lake to read: DuckDB keeps a file open (and locked) in the process that read
     * it, and the next `lakelogic run` must be able to open the original.
     */
    function snapshot(): string {
      const copy = join(tmp, `${dataset}-read-${++snapshots}`);
      cpSync(join(dir, "data", "bronze"), copy, { recursive: true });
      return copy;
    }

    /** Every produced event is in the lake exactly once: good rows by key, bad rows in quarantine. */
    async function expectLakeExact(): Promise<void> {
      const targetPath = snapshot();
      const rows = await readTable(contract, { targetPath });
      const ids = rows.map((r) => Number(r["ride_id"]));
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort((a, b) => a - b)).toEqual([...good.keys()].sort((a, b) => a - b));
      for (const r of rows) expect(r["fare"]).toBe(good.get(Number(r["ride_id"])));
      const quarantine = await readQuarantine(contract, { targetPath });
      expect(new Set(quarantine.map((q) => q.quarantineId)).size).toBe(quarantine.length);
      expect(quarantine).toHaveLength(bad);
    }

    it("setup: the contract is copied beside its own lake and the topic created", async () => {
      mkdirSync(dir, { recursive: true });
      copyFileSync(join(REPO, "examples", "python", file), contractPath);
      contract = await loadContract(contractPath);
      await kafka!.createTopic(topic, 3);
    });

    it("drains: good rows to the lake, bad rows and a non-JSON message to quarantine, and the stream goes on", async () => {
      await produceRides(0, 150);
      await produce([{ key: "0", value: "not json {" }]);
      bad++;
      await produceRides(150, 300);
      const s = summaryOf(await runCli(dir, [contractPath]));
      expect(s).toMatchObject({ sourceCount: 301, goodCount: good.size, badCount: bad, batches: 4 });
      await expectLakeExact();
      const poison = (await readQuarantine(contract, { targetPath: snapshot() })).filter((q) => q.rawEncoding === "base64");
      expect(poison).toHaveLength(1);
      expect(Buffer.from(poison[0]!.raw!, "base64").toString()).toBe("not json {");
      expect(existsSync(checkpointFile)).toBe(true);
      expect(totalsOf(checkpointFile, key)).toBe(produced);
    });

    it("a later run reads only the new events", async () => {
      await produceRides(300, 400);
      const s = summaryOf(await runCli(dir, [contractPath]));
      expect(s.sourceCount).toBe(100);
      await expectLakeExact();
    });

    it("a SIGKILL mid-run loses and duplicates nothing", async () => {
      await produceRides(400, 2400);
      const before = committedBatch(checkpointFile, key);
      // Killed while it runs: after its third batch's write, whatever it is doing by then.
      const killed = await runCli(dir, [contractPath], { child: true, kill: (out) => (out.match(/^written /gm) ?? []).length >= 3 });
      expect(killed.signal).toBe("SIGKILL");
      expect(committedBatch(checkpointFile, key)).toBeLessThan(before + 20);
      summaryOf(await runCli(dir, [contractPath]));
      await expectLakeExact();
      expect(totalsOf(checkpointFile, key)).toBe(produced);
    });

    it("a SIGKILL between write and commit loses and duplicates nothing", async () => {
      await produceRides(1400, 1700);
      const before = committedBatch(checkpointFile, key);
      const killed = await runCli(dir, [contractPath], { child: true, env: { LL_HANG_AFTER_WRITE: "1" }, kill: (out) => /^written /m.test(out) });
      expect(killed.signal).toBe("SIGKILL");
      expect(committedBatch(checkpointFile, key)).toBe(before); // written, never committed
      const s = summaryOf(await runCli(dir, [contractPath], { child: true }));
      expect(s.sourceCount).toBe(300);
      await expectLakeExact();
      expect(totalsOf(checkpointFile, key)).toBe(produced);
    });

    it("a replay of the whole topic into merge adds nothing", async () => {
      // Forget the position: the checkpoint and the consumer group (named after the dataset).
      rmSync(checkpointFile);
      const admin = client().admin();
      await admin.connect();
      try {
        await admin.deleteGroups([`lakelogic-${dataset}`]);
      } finally {
        await admin.disconnect();
      }
      const s = summaryOf(await runCli(dir, [contractPath, "--reset-checkpoint"]));
      expect(s.sourceCount).toBe(produced);
      await expectLakeExact();
    });

    it("a key updated twice in one batch is written once, the earlier update counted superseded", async () => {
      await produce([
        { key: "5000", value: JSON.stringify(ride(5000, 1)) },
        { key: "5000", value: JSON.stringify(ride(5000, 2)) },
      ]);
      good.set(5000, 2);
      const s = summaryOf(await runCli(dir, [contractPath]));
      expect(s).toMatchObject({ sourceCount: 2, goodCount: 1, supersededCount: 1 });
      await expectLakeExact();
    });
  });
});
