/**
 * One StreamSink run for `bench:compare`: `ts-sink.ts <engine> <events.ndjson> <dir> [format] [targetPath]`
 * drains the file (`available_now`, the default batch size, which grows under the backlog; a
 * fixed `batchSize` from BENCH_BATCH_SIZE, `maxBatchBytes` from BENCH_MAX_BATCH_BYTES) into a
 * merge target with quarantine — DuckDB, Delta or DuckLake (checkpoint in the table, their
 * default; `targetPath` an s3:// URI for object storage, the DuckLake catalog from
 * DUCKLAKE_METADATA) — and prints `{seconds, good, bad, stored, quarantined, batches, peakRssMb,
 * cpuSeconds}`: the time covers reading, parsing, validating, writing and committing;
 * `stored`/`quarantined` are read back from the lake afterwards; `peakRssMb` (sampled every
 * 100 ms) and `cpuSeconds` (the process's, all threads) are the drain's, before the read-back.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadContract } from "../../src/contract/index.js";
import type { EngineName } from "../../src/engine/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { FileSource } from "../../src/sources/index.js";

const [engine, input, dir, format, target] = process.argv.slice(2) as [EngineName, string, string, "delta" | "ducklake" | undefined, string | undefined];
const loaded = await loadContract(fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url)));
const contract = format ? { ...loaded, materialization: { ...loaded.materialization, format }, quarantine: { ...loaded.quarantine, format } } : loaded;
const targetPath = target ?? join(dir, "lake");
// The drain's peak RSS, sampled: the read-back below holds the whole table in memory.
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
const started = performance.now();
const cpuAtStart = process.cpuUsage();
const sized = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
const batchSize = sized("BENCH_BATCH_SIZE");
const maxBatchBytes = sized("BENCH_MAX_BATCH_BYTES");
const summary = await new StreamSink(contract, new FileSource(input), {
  engine,
  targetPath,
  ...(format ? {} : { checkpoint: "memory" as const }),
  ...(batchSize !== undefined ? { batchSize } : {}),
  ...(maxBatchBytes !== undefined ? { maxBatchBytes } : {}),
}).run("available_now");
const seconds = (performance.now() - started) / 1000;
clearInterval(sampler);
const cpu = process.cpuUsage(cpuAtStart);
const cpuSeconds = Math.round((cpu.user + cpu.system) / 1e4) / 100;
const peakRssMb = Math.round(Math.max(peakRss, process.memoryUsage().rss) / 1024 / 1024);
const stored = (await readTable(contract, { targetPath })).length;
const quarantined = (await readQuarantine(contract, { targetPath })).length;
process.stdout.write(JSON.stringify({ seconds, good: summary.goodCount, bad: summary.badCount, stored, quarantined, batches: summary.batches, peakRssMb, cpuSeconds }) + "\n");
