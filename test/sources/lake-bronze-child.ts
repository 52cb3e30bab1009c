/**
 * A bronze writer in its own process, for the lake source's concurrency tests: writes orders
 * `from`..`to` to the bronze lake of `<dir>` in batches of `batchSize`, prints `done`, and with
 * `hold` keeps the process (and so a duckdb lake's file) open until killed.
 *
 * argv: <dir> <format: duckdb|parquet> <from> <to> <batchSize> [hold]
 */
import { orders, writeBronze } from "./lake-source-support.js";

const [dir, format, from, to, batchSize, hold] = process.argv.slice(2);
if (!dir || (format !== "duckdb" && format !== "parquet") || !from || !to || !batchSize) {
  console.error("usage: lake-bronze-child <dir> <duckdb|parquet> <from> <to> <batchSize> [hold]");
  process.exit(2);
}
await writeBronze(dir, format, `bronze-${from}`, orders(Number(from), Number(to)), Number(batchSize));
process.stdout.write("done\n");
if (hold === "hold") setInterval(() => undefined, 1_000);
