/**
 * The short CI version of `npm run chaos`: consumers SIGKILLed at random moments and between
 * write and commit, over every source kind (file, PostgreSQL, SSE, Kafka, SQS, Pub/Sub), under
 * StreamSink and a Temporal worker (12 streams, two kills each), with
 * the poison corpus mixed in. Every stream must end with nothing lost, nothing duplicated, the
 * quarantine exactly the poison produced, and checkpoint totals that reconcile.
 * `LAKELOGIC_TEST_SEED=<seed>` replays a failure's choices.
 */
import { describe, expect, it } from "vitest";
import { runChaos } from "../../scripts/chaos/harness.js";
import { SOURCE_KINDS } from "../../scripts/chaos/source-driver.js";
import { findKafkaLib } from "../support/kafka.js";
import { findPostgresBinDir } from "../support/postgres.js";
import { findPstest } from "../support/pubsub.js";
import { findElasticMqLib } from "../support/sqs.js";
import { requireService } from "../support/services.js";
import { temporalBinary } from "../support/temporal.js";

// The harness starts and stops the servers itself; here we only check they are provisioned.
const ready = await requireService("crash/chaos (PostgreSQL, Kafka, ElasticMQ, pstest, Temporal CLI)", async () => {
  findPostgresBinDir();
  findKafkaLib();
  findElasticMqLib();
  findPstest();
  temporalBinary();
  return true;
});

const KILLS = 24;
const given = process.env.LAKELOGIC_TEST_SEED;
const seed = given !== undefined && given !== "" ? Number(given) >>> 0 : (Date.now() ^ process.pid) >>> 0;

describe.skipIf(!ready)("chaos: SIGKILLed consumers across sources and runtimes", () => {
  it("loses nothing, duplicates nothing, quarantines exactly the poison and reconciles every stream", async () => {
    process.stderr.write(`[seed] crash/chaos: LAKELOGIC_TEST_SEED=${seed}\n`);
    const report = await runChaos({ kills: KILLS, seed, sources: [...SOURCE_KINDS], runtimes: ["sink", "temporal"], log: () => undefined });
    const problems = report.streams.flatMap((s) => s.problems.map((p) => `${s.source}/${s.runtime}: ${p}`));
    expect(problems, `seed ${seed}`).toEqual([]);
    expect(report.lost).toBe(0);
    expect(report.duplicated).toBe(0);
    expect(report.quarantineMismatch).toBe(0);
    expect(report.reconciled).toBe(true);
    expect(report.streams).toHaveLength(SOURCE_KINDS.length * 2);
    for (const s of report.streams) {
      expect(s.reconciled, `${s.source}/${s.runtime}`).toBe(true);
      // A queue may deliver a message again while it is still leased (counted twice); a cursor never.
      if (s.source === "sqs" || s.source === "pubsub") expect(s.totals!.sourceCount).toBeGreaterThanOrEqual(s.produced);
      else expect(s.totals!.sourceCount).toBe(s.produced);
    }
    // The kills were spent, on every runtime, and some landed between a write and its commit.
    expect(report.kills).toBe(KILLS);
    expect(report.byRuntime.sink!.kills).toBeGreaterThan(0);
    expect(report.byRuntime.temporal!.kills).toBeGreaterThan(0);
    expect(report.killsAtHook).toBeGreaterThan(0);
  }, 600_000);
});
