/**
 * The chaos harness's network sources: an SSE feed (served from this process), a Kafka topic,
 * an SQS queue (ElasticMQ) and a Pub/Sub subscription (pstest), each started through the
 * test/support starters. Queues are drained until the server holds no unacknowledged message.
 */
import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import kafkajs from "kafkajs";
import { ScriptedSSEServer } from "../../test/connectors/sse-server.js";
import { startKafka } from "../../test/support/kafka.js";
import { startPubSub } from "../../test/support/pubsub.js";
import { startSqs } from "../../test/support/sqs.js";
import { itemText, type Dataset } from "./dataset.js";
import type { SourceDriver } from "./source-driver.js";

const texts = (data: Dataset) => data.items.map(itemText);

export async function sseDriver(): Promise<SourceDriver> {
  const servers: ScriptedSSEServer[] = [];
  return {
    kind: "sse",
    text: true,
    load: async (_name, _dir, data) => {
      // The feed resumes after the Last-Event-ID the consumer sends, like a real resumable feed.
      const server = await new ScriptedSSEServer(data.items.map((item, i) => ({ id: String(i + 1), event: "message", data: itemText(item) }))).start();
      servers.push(server);
      return { source: { type: "sse", url: server.url, eventTypes: ["message"], drainIdleMs: 500 }, env: {}, exactTotals: true, ordered: true };
    },
    stop: async () => {
      for (const s of servers) await s.stop();
    },
  };
}

export async function kafkaDriver(): Promise<SourceDriver> {
  const broker = await startKafka();
  const kafka = new kafkajs.Kafka({ brokers: broker.brokers, clientId: "chaos-producer", logLevel: kafkajs.logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  return {
    kind: "kafka",
    text: true,
    load: async (name, _dir, data) => {
      const topic = `chaos-${name}`;
      await broker.createTopic(topic, 3);
      // Keyed by primary key, so each key's events stay in order in their partition.
      const messages = data.items.map((item) => ({
        key: item.kind === "event" && item.event.id !== null ? String(item.event.id) : item.kind === "event" ? item.event.tag : item.tag,
        value: itemText(item),
      }));
      for (let at = 0; at < messages.length; at += 1000) await producer.send({ topic, messages: messages.slice(at, at + 1000) });
      const source = { type: "kafka", brokers: broker.brokers, topic, groupId: `chaos-${name}`, autoOffsetReset: "earliest", sessionTimeoutMs: 6000, heartbeatIntervalMs: 1000 };
      return { source, env: {}, exactTotals: true, ordered: true };
    },
    stop: async () => {
      await producer.disconnect().catch(() => undefined);
      await broker.stop();
    },
  };
}

export async function sqsDriver(): Promise<SourceDriver> {
  const sqs = await startSqs();
  return {
    kind: "sqs",
    text: true,
    load: async (name, _dir, data) => {
      const url = await sqs.createQueue(`chaos-${name}`, { VisibilityTimeout: "4" });
      const bodies = texts(data);
      for (let i = 0; i < bodies.length; i += 10) {
        const entries = bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b }));
        await sqs.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
      }
      return {
        source: { type: "sqs", queueUrl: url, visibilityTimeout: 4, waitTimeSeconds: 1 },
        env: sqs.env,
        exactTotals: false,
        ordered: false,
        remaining: async () => (await sqs.depth(url)).total,
      };
    },
    stop: () => sqs.stop(),
  };
}

/**
 * Messages are published as the consumer goes, as a live producer would: never more than
 * FEED_AHEAD of them waiting for their first delivery, so a stream's dataset is sized by what
 * its consumer gets through (pacedRecordsPerKill) and its final drain stays short. (The fake is
 * built with the real service's 7-day retention, scripts/provision-pubsub.sh: pstest's own
 * 10 minutes would delete messages a consumer killed over and over has not reached yet.)
 */
const FEED_AHEAD = 300;
const FEED_EVERY_MS = 2000;

export async function pubsubDriver(): Promise<SourceDriver> {
  process.env.METADATA_SERVER_DETECTION ??= "none";
  const ps = await startPubSub({ minAckDeadlineSeconds: 1 });
  const feeders: NodeJS.Timeout[] = [];
  return {
    kind: "pubsub",
    text: true,
    // Measured over 1,000 kills: ~50 records per kill of either runtime (the feed, not the consumer, sets the pace).
    pacedRecordsPerKill: 100,
    load: async (name, _dir, data) => {
      // 10 s: a killed consumer's leases lapse soon, and a batch on a loaded machine still acks in time.
      const { topic, subscription } = await ps.createSubscription(`chaos-${name}`, { ackDeadlineSeconds: 10 });
      const t = ps.pubsub.topic(topic, { batching: { maxMessages: 500, maxMilliseconds: 5 } });
      const all = texts(data);
      let published = 0;
      const publish = async (n: number) => {
        const chunk = all.slice(published, published + n);
        published += chunk.length;
        await Promise.all(chunk.map((b) => t.publishMessage({ data: Buffer.from(b) })));
      };
      const mine = async () => (await ps.messages()).filter((m) => m.topic.endsWith(`/topics/${topic}`));
      await publish(FEED_AHEAD);
      let feeding = false;
      const feeder = setInterval(() => {
        if (feeding) return;
        if (published >= all.length) return clearInterval(feeder);
        feeding = true;
        void mine()
          .then(async (msgs) => {
            const waiting = msgs.filter((m) => m.deliveries === 0).length;
            if (waiting < FEED_AHEAD / 2) await publish(FEED_AHEAD - waiting);
          })
          .catch(() => undefined)
          .finally(() => (feeding = false));
      }, FEED_EVERY_MS);
      feeder.unref();
      feeders.push(feeder);
      const unacked = async () => (await mine()).filter((m) => m.acks === 0).length + (all.length - published);
      return {
        source: { type: "pubsub", projectId: ps.projectId, subscription, ackDeadlineSeconds: 10 },
        env: { ...ps.env, METADATA_SERVER_DETECTION: "none" },
        exactTotals: false,
        ordered: false,
        remaining: unacked,
      };
    },
    stop: () => {
      for (const f of feeders) clearInterval(f);
      return ps.stop();
    },
  };
}
