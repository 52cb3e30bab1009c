/**
 * Lake write micro-benchmark: batches of pre-validated rows (8 columns of every kind) written by
 * the lake writer alone, no validation. Prints one JSON line per run.
 *
 *   npx tsx bench/lake.ts [--format duckdb|parquet] [--strategy merge|append|overwrite]
 *                         [--batches 100] [--batch 10000] [--updates 0.25] [--bad 10]
 *
 * `--updates`: share of each batch that re-writes keys of earlier batches (merge work);
 * `--bad`: quarantine rows per batch.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Contract, FieldSpec, FieldType } from "../src/contract/types.js";
import type { Row } from "../src/engine/types.js";
import { openLake, readTable } from "../src/lake/index.js";
import type { QuarantineRow } from "../src/lake/types.js";

const { values: flags } = parseArgs({
  options: {
    format: { type: "string", default: "duckdb" },
    strategy: { type: "string", default: "merge" },
    batches: { type: "string", default: "100" },
    batch: { type: "string", default: "10000" },
    updates: { type: "string", default: "0.25" },
    bad: { type: "string", default: "10" },
    verify: { type: "boolean", default: false },
  },
});

const fields: Array<[string, FieldType, number?, number?]> = [
  ["order_id", "integer"],
  ["customer", "string"],
  ["amount", "double"],
  ["price", "decimal", 12, 2],
  ["paid", "boolean"],
  ["day", "date"],
  ["created_at", "timestamp"],
  ["meta", "json"],
];

const contract: Contract = {
  info: {},
  dataset: "bench_orders",
  primaryKey: ["order_id"],
  fields: fields.map(
    ([name, type, precision, scale]): FieldSpec => ({
      name,
      type,
      declaredType: type,
      ...(precision !== undefined ? { precision, scale } : {}),
      required: false,
      nullable: true,
      pii: false,
      aliases: [],
    }),
  ),
  rowRules: [],
  datasetRules: [],
  materialization: {
    strategy: flags.strategy as Contract["materialization"]["strategy"],
    strategyDeclared: true,
    format: flags.format as Contract["materialization"]["format"],
    table: "bench_orders",
    partitionBy: [],
  },
  quarantine: { enabled: true, target: "bench_orders_quarantine", format: "duckdb", includeErrorReason: true },
  schemaPolicy: { evolution: "strict", unknownFields: "quarantine" },
  warnings: [],
  raw: {},
};

const batches = Number(flags.batches);
const batchSize = Number(flags.batch);
const updates = Number(flags.updates);
const badPerBatch = Number(flags.bad);

let nextId = 0;
function makeBatch(b: number): { good: Row[]; bad: QuarantineRow[] } {
  const good: Row[] = [];
  for (let i = 0; i < batchSize; i++) {
    const id = nextId > 0 && Math.random() < updates ? Math.floor(Math.random() * nextId) : nextId++;
    good.push({
      order_id: id,
      customer: `customer-${id % 5000}`,
      amount: (id % 1000) * 1.25,
      price: `${id % 100000}.${String(id % 100).padStart(2, "0")}`,
      paid: id % 3 === 0,
      day: `2024-0${1 + (id % 9)}-1${id % 10}`,
      created_at: new Date(1_700_000_000_000 + id * 1000).toISOString(),
      meta: { channel: id % 2 ? "web" : "app", tags: ["a", "b"] },
    });
  }
  const bad: QuarantineRow[] = [];
  for (let j = 0; j < badPerBatch; j++) {
    bad.push({ record: { order_id: `x${b}-${j}` }, errors: [{ ruleId: "type:order_id", message: "not an integer" }], position: { b, j } });
  }
  return { good, bad };
}

const dir = mkdtempSync(join(tmpdir(), "ll-bench-lake-"));
try {
  const writer = await openLake(contract, { targetPath: dir });
  const times: number[] = [];
  let rows = 0;
  let cpuMicros = 0;
  for (let b = 1; b <= batches; b++) {
    const batch = makeBatch(b);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await writer.write({ batchId: b, ...batch });
    times.push(performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    cpuMicros += cpu.user + cpu.system;
    rows += batch.good.length;
  }
  const t0 = performance.now();
  await writer.close();
  const closeMs = performance.now() - t0;
  const sorted = [...times].sort((a, b) => a - b);
  const total = times.reduce((a, b) => a + b, 0);
  const q = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10;
  const result: Record<string, unknown> = {
    bench: "lake-write",
    format: flags.format,
    strategy: flags.strategy,
    batches,
    batchSize,
    columns: fields.length,
    updates,
    rowsWritten: rows,
    msPerBatchMean: Math.round((total / batches) * 10) / 10,
    msPerBatchMin: q(0),
    msPerBatchP50: q(0.5),
    msPerBatchP95: q(0.95),
    msPerBatchMax: q(1),
    rowsPerSec: Math.round(rows / (total / 1000)),
    // CPU of this process (all threads) during the writes: steadier than wall time on a shared machine.
    cpuMsPerBatch: Math.round((cpuMicros / 1000 / batches) * 10) / 10,
    closeMs: Math.round(closeMs),
  };
  if (flags.verify) result.tableRows = (await readTable(contract, { targetPath: dir })).length;
  console.log(JSON.stringify(result));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
