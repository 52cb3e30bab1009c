/**
 * The process the crash test kills. It drains a replayable stream of order events into a
 * DuckDB merge target with a SQLite checkpoint, announcing each write so the test can SIGKILL
 * it in the window between the write and the commit.
 *
 * argv: <lakeDir> <checkpointFile> <records> <batchSize> <checkpoint: sqlite|target>
 */
import { fileURLToPath } from "node:url";
import { StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";
import { orderEvents } from "../../examples/orders.js";

const [lakeDir, checkpointFile, records, batchSize, checkpointMode] = process.argv.slice(2);
if (!lakeDir || !checkpointFile || !records || !batchSize) {
  console.error("usage: sink-child <lakeDir> <checkpointFile> <records> <batchSize> [sqlite|target]");
  process.exit(2);
}
const contract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const source = new IterableSource(() => orderEvents(Number(records)), { replayable: true, description: "orders" });

const sink = new StreamSink(contract, source, {
  targetPath: lakeDir,
  checkpoint: checkpointMode === "target" ? "target" : checkpointFile,
  batchSize: Number(batchSize),
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
