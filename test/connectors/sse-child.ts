/**
 * The process the SSE crash test kills: drains an SSE feed into a DuckDB merge target with a
 * SQLite checkpoint, announcing each write so the test can SIGKILL it between write and commit.
 *
 * argv: <url> <lakeDir> <checkpointFile>
 */
import { fileURLToPath } from "node:url";
import { StreamSink } from "../../src/sink/index.js";
import { SSEOffsetSource } from "../../src/sources/sse/source.js";

const [url, lakeDir, checkpointFile] = process.argv.slice(2);
if (!url || !lakeDir || !checkpointFile) {
  console.error("usage: sse-child <url> <lakeDir> <checkpointFile>");
  process.exit(2);
}
const contract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const source = new SSEOffsetSource(url, {
  eventTypes: ["message"],
  drainIdleMs: 1000,
  retry: { initialDelayMs: 10, maxDelayMs: 50, jitter: 0 },
  onRetry: () => {},
});
const sink = new StreamSink(contract, source, {
  targetPath: lakeDir,
  checkpoint: checkpointFile,
  batchSize: 50,
  maxWaitMs: 60_000,
  hooks: {
    afterWrite: async (batchId) => {
      process.stdout.write(`written ${batchId}\n`);
      await new Promise((r) => setTimeout(r, 15));
    },
  },
  onBatch: (b) => void process.stdout.write(`committed ${b.batchId} ${JSON.stringify(b.cursor)}\n`),
});
const summary = await sink.run("available_now");
process.stdout.write(`done ${JSON.stringify(summary.cursor)} ${JSON.stringify(summary.resumedFrom)}\n`);
