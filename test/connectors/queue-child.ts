/**
 * The process the queue crash tests kill: drains an SQS queue or a Pub/Sub subscription into a
 * DuckDB merge target with a SQLite checkpoint. It announces when a batch has been validated
 * (its write starts next) and when it has been written (its commit follows after a 15 ms pause),
 * so the test can SIGKILL it during the write or between the write and the commit.
 *
 * argv: <sqs|pubsub> <queueUrl|subscription> <lakeDir> <checkpointFile> <batchSize>
 * env:  AWS_* (SQS, default chain) or PUBSUB_EMULATOR_HOST + PUBSUB_PROJECT (Pub/Sub)
 */
import { fileURLToPath } from "node:url";
import { PubSubConnector } from "../../src/sources/pubsub/source.js";
import { SQSConnector } from "../../src/sources/sqs/source.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine } from "../../src/engine/types.js";
import { StreamSink } from "../../src/sink/index.js";

const [kind, address, lakeDir, checkpointFile, batchSize] = process.argv.slice(2);
if (!kind || !address || !lakeDir || !checkpointFile || !batchSize) {
  console.error("usage: queue-child <sqs|pubsub> <queueUrl|subscription> <lakeDir> <checkpointFile> <batchSize>");
  process.exit(2);
}
const contract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const source =
  kind === "sqs"
    ? new SQSConnector({ queueUrl: address, visibilityTimeout: 4, waitTimeSeconds: 1 })
    : new PubSubConnector({ projectId: process.env.PUBSUB_PROJECT!, subscription: address, ackDeadlineSeconds: 3, maxMessages: 1000 });

// The engine's validate is the step right before the write: announce when it is done.
const base = await createEngine("duckdb");
const engine: Engine = {
  name: base.name,
  validate: async (records, c) => {
    const out = await base.validate(records, c);
    process.stdout.write("validated\n");
    return out;
  },
  close: () => base.close(),
};

const sink = new StreamSink(contract, source, {
  engine,
  targetPath: lakeDir,
  checkpoint: checkpointFile,
  batchSize: Number(batchSize),
  maxWaitMs: 1000,
  hooks: {
    afterWrite: async (batchId) => {
      process.stdout.write(`written ${batchId}\n`);
      await new Promise((r) => setTimeout(r, 15));
    },
  },
  onBatch: (b) => void process.stdout.write(`committed ${b.batchId} ${b.sourceCount}\n`),
});
const summary = await sink.run("available_now");
await engine.close();
process.stdout.write(`done ${JSON.stringify({ sourceCount: summary.sourceCount, batches: summary.batches, totals: summary.totals })}\n`);
