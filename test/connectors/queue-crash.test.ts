/**
 * The crash proof for the queue connectors (I8: a message is acknowledged only after its batch is
 * committed). A real StreamSink process drains an SQS queue (ElasticMQ) or a Pub/Sub subscription
 * (pstest) into a DuckDB merge target with a SQLite checkpoint, and is SIGKILLed during a write
 * and between a write and its commit, then restarted until the queue is drained.
 *
 * After every kill the server is asked what was acknowledged (SQS: messages gone from the queue;
 * Pub/Sub: messages with an ack) and that must never exceed what the checkpoint says was committed.
 * The killed batch's messages reappear (visibility timeout / ack deadline) and are written again;
 * at the end every order is in the target exactly once and the quarantine holds exactly the bad
 * orders and poison messages, once each.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvent } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { startPubSub } from "../support/pubsub.js";
import { requireService } from "../support/services.js";
import { startSqs } from "../support/sqs.js";
import { expectedOrders, readLake, sorted, tempDirs } from "./queue-lake.js";

process.env.METADATA_SERVER_DETECTION ??= "none";
const childScript = fileURLToPath(new URL("./queue-child.ts", import.meta.url));
const N = 2000;
const BATCH = 200;
const KILLS_EACH = 3; // during a write, and between a write and its commit

const sqs = await requireService("connectors/queue crash on SQS (ElasticMQ)", () => startSqs());
const ps = await requireService("connectors/queue crash on Pub/Sub (pstest)", () => startPubSub({ minAckDeadlineSeconds: 1 }));
const dirs = tempDirs("ll-queue-crash");
afterAll(async () => {
  await sqs?.stop();
  await ps?.stop();
  dirs.cleanup();
});

type Plan = { kill: "write"; onValidated: number; delayMs: number } | { kill: "between"; onWritten: number } | { kill: "none" };

interface Life {
  exitCode: number | null;
  killed: boolean;
  /** The kill landed after a batch was validated and before it was written. */
  duringWrite: boolean;
  /** The kill landed after a batch was written and before it was committed. */
  betweenWriteAndCommit: boolean;
  output: string;
}

function life(args: string[], env: Record<string, string>, plan: Plan): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), childScript, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let output = "";
    let validated = 0;
    let written = 0;
    let lastLine = "";
    let killed = false;
    let landed: "write" | "between" | "elsewhere" = "elsewhere";
    const kill = () => {
      if (killed) return;
      killed = true;
      // Where the process was when the signal went: the last thing it announced.
      landed = lastLine === "validated" ? "write" : lastLine.startsWith("written") ? "between" : "elsewhere";
      child.kill("SIGKILL");
    };
    let pending = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (killed) break;
        lastLine = line;
        if (line === "validated") {
          validated++;
          if (plan.kill === "write" && validated === plan.onValidated) setTimeout(kill, plan.delayMs);
        } else if (line.startsWith("written ")) {
          written++;
          if (plan.kill === "between" && written === plan.onWritten) kill();
        }
      }
    });
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", reject);
    child.on("exit", (exitCode) =>
      resolve({ exitCode, killed, duringWrite: killed && landed === "write", betweenWriteAndCommit: killed && landed === "between", output }),
    );
  });
}

async function committedSourceCount(checkpointFile: string): Promise<number> {
  const store = new SQLiteCheckpointStore(checkpointFile);
  try {
    return (await store.load("stream::orders"))?.totals.sourceCount ?? 0;
  } finally {
    await store.close();
  }
}

interface QueueUnderTest {
  name: string;
  args: string[];
  env: Record<string, string>;
  total: number;
  /** Messages the server considers acknowledged (deleted / acked). */
  acknowledged(): Promise<number>;
}

async function crashUntilDrained(q: QueueUnderTest, lake: string, ckpt: string) {
  let duringWrite = 0;
  let betweenWriteAndCommit = 0;
  let lives = 0;
  let seed = 17;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  while (true) {
    lives++;
    expect(lives, `${q.name}: the queue should be drained once the kills stop`).toBeLessThan(40);
    const plan: Plan =
      duringWrite < KILLS_EACH && (betweenWriteAndCommit >= KILLS_EACH || lives % 2 === 1)
        ? { kill: "write", onValidated: 1 + Math.floor(rand() * 2), delayMs: Math.floor(rand() * 6) }
        : betweenWriteAndCommit < KILLS_EACH
          ? { kill: "between", onWritten: 1 + Math.floor(rand() * 2) }
          : { kill: "none" };
    const l = await life(q.args, q.env, plan);
    if (l.killed) {
      if (l.duringWrite) duringWrite++;
      if (l.betweenWriteAndCommit) betweenWriteAndCommit++;
      // I8: whatever the server counts as acknowledged was committed first.
      await new Promise((r) => setTimeout(r, 200));
      const acked = await q.acknowledged();
      const committed = await committedSourceCount(ckpt);
      expect(acked, `${q.name}: acknowledged ${acked} > committed ${committed} after a kill`).toBeLessThanOrEqual(committed);
      continue;
    }
    if (l.exitCode !== 0) throw new Error(`${q.name}: child failed on its own (exit ${l.exitCode}):\n${l.output}`);
    expect(l.output).toMatch(/^done /m);
    // A run ends once a receive comes back empty; messages of a killed batch may still be
    // leased to the dead process. Run again until the server has acknowledged everything.
    if ((await q.acknowledged()) === q.total) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { duringWrite, betweenWriteAndCommit, lives };
}

async function checkLake(lake: string, poisonRaw: string[]) {
  const rows = await readLake(lake);
  const { good, bad } = expectedOrders(N);
  // Written once: the merge target holds every good order exactly once.
  expect(rows.goodIds.length).toBe(good.length);
  expect(sorted(rows.goodIds)).toEqual(good);
  // Quarantine exact: every bad order and every poison message once, however often replayed.
  expect(sorted(rows.badIds)).toEqual(bad);
  expect(rows.poison.map((p) => p.raw).sort()).toEqual([...poisonRaw].sort());
}

describe.skipIf(!sqs)("SQS under SIGKILL (ElasticMQ)", () => {
  it(`acknowledges only committed batches; after ${KILLS_EACH}+${KILLS_EACH} kills every order is written once`, async () => {
    const { QueueUrl } = await sqs!.client.send(
      new (await import("@aws-sdk/client-sqs")).CreateQueueCommand({ QueueName: `crash-${Date.now()}`, Attributes: { VisibilityTimeout: "4" } }),
    );
    const url = QueueUrl!;
    const poison = ["not json", "<order/>"];
    const bodies = [...Array.from({ length: N }, (_, i) => JSON.stringify(orderEvent(i))), ...poison];
    for (let i = 0; i < bodies.length; i += 10) {
      await sqs!.client.send(
        new SendMessageBatchCommand({ QueueUrl: url, Entries: bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b })) }),
      );
    }
    const total = bodies.length;
    const dir = dirs.make("sqs");
    const lake = join(dir, "lake");
    const ckpt = join(dir, "ckpt.sqlite");
    const result = await crashUntilDrained(
      {
        name: "sqs",
        args: ["sqs", url, lake, ckpt, String(BATCH)],
        env: sqs!.env,
        total,
        acknowledged: async () => total - (await sqs!.depth(url)).total,
      },
      lake,
      ckpt,
    );
    expect(result.duringWrite).toBeGreaterThanOrEqual(KILLS_EACH);
    expect(result.betweenWriteAndCommit).toBeGreaterThanOrEqual(KILLS_EACH);
    await checkLake(lake, poison);
    // Killed batches were committed again after they reappeared.
    expect(await committedSourceCount(ckpt)).toBeGreaterThanOrEqual(total);
  }, 300_000);
});

describe.skipIf(!ps)("Pub/Sub under SIGKILL (pstest)", () => {
  it(`acknowledges only committed batches; after ${KILLS_EACH}+${KILLS_EACH} kills every order is written once`, async () => {
    const { topic, subscription } = await ps!.createSubscription(`crash-${Date.now()}`, { ackDeadlineSeconds: 3 });
    const t = ps!.pubsub.topic(topic, { batching: { maxMessages: 500, maxMilliseconds: 5 } });
    const poison = [Buffer.from("not json"), Buffer.from([0xfe, 0x41])];
    await Promise.all([
      ...Array.from({ length: N }, (_, i) => t.publishMessage({ data: Buffer.from(JSON.stringify(orderEvent(i))) })),
      ...poison.map((data) => t.publishMessage({ data })),
    ]);
    const total = N + poison.length;
    const dir = dirs.make("pubsub");
    const lake = join(dir, "lake");
    const ckpt = join(dir, "ckpt.sqlite");
    const acknowledged = async () =>
      (await ps!.messages()).filter((m) => m.topic.endsWith(`/topics/${topic}`) && m.acks > 0).length;
    const result = await crashUntilDrained(
      { name: "pubsub", args: ["pubsub", subscription, lake, ckpt, String(BATCH)], env: { ...ps!.env, PUBSUB_PROJECT: ps!.projectId }, total, acknowledged },
      lake,
      ckpt,
    );
    expect(result.duringWrite).toBeGreaterThanOrEqual(KILLS_EACH);
    expect(result.betweenWriteAndCommit).toBeGreaterThanOrEqual(KILLS_EACH);
    await checkLake(lake, ["not json", Buffer.from([0xfe, 0x41]).toString("base64")]);
    expect(await committedSourceCount(ckpt)).toBeGreaterThanOrEqual(total);
  }, 300_000);
});
