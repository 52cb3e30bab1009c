/**
 * One StreamSink run for `bench:compare`: `ts-sink.ts <engine> <events.ndjson> <dir> [format] [targetPath]`
 * drains the file (`available_now`, batch 10,000) into a merge target with quarantine — DuckDB,
 * Delta or DuckLake (checkpoint in the table, their default; `targetPath` an s3:// URI for object
 * storage, the DuckLake catalog from DUCKLAKE_METADATA) — and prints
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

const [engine, input, dir, format, target] = process.argv.slice(2) as [EngineName, string, string, "delta" | "ducklake" | undefined, string | undefined];
const loaded = await loadContract(fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url)));
const contract = format ? { ...loaded, materialization: { ...loaded.materialization, format }, quarantine: { ...loaded.quarantine, format } } : loaded;
const targetPath = target ?? join(dir, "lake");
const started = performance.now();
const summary = await new StreamSink(contract, new FileSource(input), { engine, targetPath, ...(format ? {} : { checkpoint: "memory" as const }), batchSize: 10_000 }).run("available_now");
const seconds = (performance.now() - started) / 1000;
const stored = (await readTable(contract, { targetPath })).length;
const quarantined = (await readQuarantine(contract, { targetPath })).length;
process.stdout.write(JSON.stringify({ seconds, good: summary.goodCount, bad: summary.badCount, stored, quarantined }) + "\n");
