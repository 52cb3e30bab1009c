/**
 * The process the Kafka SIGKILL test kills: drains a topic (available_now) into a DuckDB merge
 * target with a SQLite checkpoint, announcing each write so the test can kill it in the window
 * between the write and the commit. With `continuous` it keeps reading until SIGTERM, and must
 * then exit by itself.
 *
 * argv: <brokers> <topic> <groupId> <lakeDir> <checkpointFile> <batchSize> [available_now|continuous]
 */
import { fileURLToPath } from "node:url";
import { KafkaOffsetSource } from "../../src/sources/kafka/connector.js";
import { StreamSink } from "../../src/sink/index.js";

const [brokers, topic, groupId, lakeDir, checkpointFile, batchSize, mode = "available_now"] = process.argv.slice(2);
if (!brokers || !topic || !groupId || !lakeDir || !checkpointFile || !batchSize || (mode !== "available_now" && mode !== "continuous")) {
  console.error("usage: kafka-child <brokers> <topic> <groupId> <lakeDir> <checkpointFile> <batchSize> [available_now|continuous]");
  process.exit(2);
}
const continuous = mode === "continuous";
const contract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const source = new KafkaOffsetSource(topic, {
  brokers,
  groupId,
  // A killed member holds its partitions until its session expires; keep that short so the
  // next life's join does not wait long (6 s is the broker's default minimum).
  sessionTimeoutMs: 6_000,
  heartbeatIntervalMs: 1_000,
  // Small read-ahead, so a kill usually finds records fetched but not yet committed.
  bufferMaxMessages: 2_000,
  logLevel: "nothing",
});

const sink = new StreamSink(contract, source, {
  targetPath: lakeDir,
  checkpoint: checkpointFile,
  batchSize: Number(batchSize),
  // Continuous: a batch is cut soon after its first record, and SIGTERM stops the run.
  maxWaitMs: continuous ? 200 : 60_000,
  handleSignals: continuous,
  hooks: {
    afterWrite: async (batchId) => {
      process.stdout.write(`written ${batchId}\n`);
      // Widen the write→commit window so that kills land in it.
      await new Promise((r) => setTimeout(r, 20));
    },
  },
  onBatch: (b) => {
    process.stdout.write(`committed ${b.batchId} ${b.sourceCount}\n`);
  },
});

const summary = await sink.run(mode);
process.stdout.write(`done ${JSON.stringify({ sourceCount: summary.sourceCount, cursor: summary.cursor, stoppedBy: summary.stoppedBy })}\n`);
