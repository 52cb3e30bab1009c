/**
 * The silver stream the lake source's crash test kills: reads the bronze table of `<dir>` into the
 * silver lake in small batches, announcing each write and commit so the test can SIGKILL it
 * between the two.
 *
 * argv: <dir> <format: duckdb|parquet> <batchSize>
 */
import { join } from "node:path";
import { StreamSink } from "../../src/sink/index.js";
import { createSource } from "../../src/sources/registry.js";
import { silverContract } from "./lake-source-support.js";

const [dir, format, batchSize] = process.argv.slice(2);
if (!dir || (format !== "duckdb" && format !== "parquet") || !batchSize) {
  console.error("usage: lake-silver-child <dir> <duckdb|parquet> <batchSize>");
  process.exit(2);
}
const contract = silverContract(dir, format);
const source = await createSource({ type: "lake", path: join(dir, "bronze"), table: "bronze_orders", chunkSize: 5 });
const sink = new StreamSink(contract, source, {
  checkpoint: join(dir, "silver-checkpoints.sqlite"),
  batchSize: Number(batchSize),
  maxWaitMs: 60_000,
  hooks: {
    afterWrite: async (batchId) => {
      process.stdout.write(`written ${batchId}\n`);
      await new Promise((r) => setTimeout(r, 10));
    },
  },
  onBatch: (b) => {
    process.stdout.write(`committed ${b.batchId}\n`);
  },
});
const summary = await sink.run("available_now");
process.stdout.write(`done ${JSON.stringify({ sourceCount: summary.sourceCount, totals: summary.totals })}\n`);
