/**
 * The process the webhook crash test kills: a WebhookSource feeding a DuckDB merge target with a
 * SQLite checkpoint, run continuous (SIGTERM stops it gracefully). Announces each write so the
 * test can SIGKILL it between write and commit — with the senders' requests still open.
 *
 * argv: <port> <lakeDir> <checkpointFile>
 */
import { fileURLToPath } from "node:url";
import { StreamSink } from "../../src/sink/index.js";
import { WebhookSource } from "../../src/sources/webhook/source.js";

const [port, lakeDir, checkpointFile] = process.argv.slice(2);
if (!port || !lakeDir || !checkpointFile) {
  console.error("usage: webhook-child <port> <lakeDir> <checkpointFile>");
  process.exit(2);
}
const contract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const source = new WebhookSource({ port: Number(port), path: "/hook", maxQueued: 60 });
await source.start();
process.stdout.write("listening\n");
const sink = new StreamSink(contract, source, {
  targetPath: lakeDir,
  checkpoint: checkpointFile,
  batchSize: 40,
  maxWaitMs: 100,
  hooks: {
    afterWrite: async (batchId) => {
      process.stdout.write(`written ${batchId}\n`);
      await new Promise((r) => setTimeout(r, 15));
    },
  },
});
const summary = await sink.run("continuous");
process.stdout.write(`done ${summary.stoppedBy} ${summary.totals.sourceCount}\n`);
