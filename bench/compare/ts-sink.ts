/**
 * One StreamSink run for `bench:compare`: `ts-sink.ts <engine> <events.ndjson> <dir> [format]` drains
 * the file (`available_now`, batch 10,000) into a merge target with quarantine — DuckDB, or Delta
 * (`delta`: local, checkpoint in the table, its default) — and prints
 * `{seconds, good, bad, stored, quarantined}` — the time covers reading, parsing, validating,
 * writing and committing; `stored`/`quarantined` are read back from the lake afterwards.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadContract } from "../../src/contract/index.js";
import type { EngineName } from "../../src/engine/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { FileSource } from "../../src/sources/index.js";

const [engine, input, dir, format] = process.argv.slice(2) as [EngineName, string, string, string | undefined];
const loaded = await loadContract(fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url)));
const contract =
  format === "delta" ? { ...loaded, materialization: { ...loaded.materialization, format: "delta" as const }, quarantine: { ...loaded.quarantine, format: "delta" as const } } : loaded;
const targetPath = join(dir, "lake");
const started = performance.now();
const summary = await new StreamSink(contract, new FileSource(input), { engine, targetPath, ...(format === "delta" ? {} : { checkpoint: "memory" as const }), batchSize: 10_000 }).run("available_now");
const seconds = (performance.now() - started) / 1000;
const stored = (await readTable(contract, { targetPath })).length;
const quarantined = (await readQuarantine(contract, { targetPath })).length;
process.stdout.write(JSON.stringify({ seconds, good: summary.goodCount, bad: summary.badCount, stored, quarantined }) + "\n");
