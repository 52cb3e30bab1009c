/**
 * The process the crash test kills. It drains a replayable stream of order events into a
 * DuckDB merge target with a SQLite checkpoint, announcing each write so the test can SIGKILL
 * it in the window between the write and the commit.
 *
 * argv: <lakeDir> <checkpointFile> <records> <batchSize> <checkpoint: sqlite|target> [file]
 * With a file of order events (JSON lines), the stream reads it instead; `batchSize` "grow:<bytes>"
 * leaves the batch size to grow under the backlog, within that many bytes (maxBatchBytes).
 */
import { fileURLToPath } from "node:url";
import { StreamSink } from "../../src/sink/index.js";
import { FileSource, IterableSource } from "../../src/sources/index.js";
import { orderEvents } from "../../examples/orders.js";

const [lakeDir, checkpointFile, records, batchSize, checkpointMode, file] = process.argv.slice(2);
if (!lakeDir || !checkpointFile || !records || !batchSize) {
  console.error("usage: sink-child <lakeDir> <checkpointFile> <records> <batchSize> [sqlite|target]");
  process.exit(2);
}
const contract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const source = file ? new FileSource(file) : new IterableSource(() => orderEvents(Number(records)), { replayable: true, description: "orders" });
const grow = batchSize.startsWith("grow:") ? Number(batchSize.slice("grow:".length)) : undefined;

const sink = new StreamSink(contract, source, {
  targetPath: lakeDir,
  checkpoint: checkpointMode === "target" ? "target" : checkpointFile,
  ...(grow === undefined ? { batchSize: Number(batchSize) } : { maxBatchBytes: grow }),
  maxWaitMs: 60_000,
  hooks: {
    // Widen the write→commit window so that kills land in it often.
    afterWrite: async (batchId) => {
      process.stdout.write(`written ${batchId}\n`);
      await new Promise((r) => setTimeout(r, 15));
    },
  },
  onBatch: (b) => {
    process.stdout.write(`committed ${b.batchId}\n`);
  },
});

const summary = await sink.run("available_now");
process.stdout.write(`done ${JSON.stringify({ ...summary, cursor: summary.cursor })}\n`);
