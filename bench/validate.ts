/**
 * Validation throughput: 1,000,000 generated order events (8 fields, 5 row rules including
 * a regex and accepted values, about 5 % bad) validated in batches of 10,000, and — when the
 * lake writer is available — written to a DuckDB merge target (good rows) and quarantine.
 *
 *   npx tsx bench/validate.ts                       # both engines, each in its own process
 *   npx tsx bench/validate.ts --engine duckdb       # one engine
 *   npx tsx bench/validate.ts --rows 200000 --no-write
 *   npx tsx bench/validate.ts --sequential          # write each batch before validating the next
 *   npx tsx bench/validate.ts --read-ahead 1        # validate one batch (not two) while one is written
 *
 * Prints one JSON line per engine: {engine, rows, seconds, rowsPerSec, peakRssMb, …, calibrationMs}.
 * `seconds` covers validation plus the write, overlapped as StreamSink overlaps them (batches
 * N+1 and N+2 are validated while batch N is written: its default `readAhead` of 2); generating
 * the events is not timed: they are made ten batches at a time between timed spans.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseContract } from "../src/contract/index.js";
import type { Contract } from "../src/contract/types.js";
import { createEngine } from "../src/engine/index.js";
import type { EngineName } from "../src/engine/types.js";
import type { LakeWriter, WriteRequest } from "../src/lake/types.js";
import { defineLazy } from "../src/util/lazy.js";
import { mulberry32 } from "../test/support/random.js";

interface Options {
  engine?: EngineName;
  rows: number;
  batch: number;
  write: boolean;
  /** Write each batch before validating the next (no overlap). */
  sequential: boolean;
  /** Batches validated while one is written (StreamSink's `readAhead`). */
  readAhead: number;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { rows: 1_000_000, batch: 10_000, write: true, sequential: false, readAhead: 2 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--engine") opts.engine = next() as EngineName;
    else if (a === "--rows") opts.rows = Number(next());
    else if (a === "--batch") opts.batch = Number(next());
    else if (a === "--no-write") opts.write = false;
    else if (a === "--sequential") opts.sequential = true;
    else if (a === "--read-ahead") opts.readAhead = Number(next());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(opts.readAhead) || opts.readAhead < 1) throw new Error("--read-ahead needs a whole number >= 1");
  return opts;
}

/** 8 fields, 5 row rules (one regex, two accepted_values), merge on order_id. */
export const benchContract: Contract = parseContract(`
version: "1"
dataset: orders
primary_key: [order_id]
model:
  fields:
    - { name: order_id, type: string }
    - { name: customer_id, type: long }
    - { name: amount, type: "decimal(12,2)" }
    - { name: currency, type: string }
    - { name: status, type: string }
    - { name: email, type: string }
    - { name: created_at, type: timestamp }
    - { name: quantity, type: integer }
quality:
  row_rules:
    - not_null: order_id
    - regex_match: { field: email, pattern: '^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$' }
    - accepted_values: { field: currency, values: [USD, EUR, GBP, JPY] }
    - accepted_values: { field: status, values: [new, paid, shipped, cancelled] }
    - range: { field: quantity, min: 1, max: 1000 }
materialization:
  strategy: merge
  format: duckdb
`);

/** Seeded: the same events on every run. */
const rng = mulberry32;

const CURRENCIES = ["USD", "EUR", "GBP", "JPY"];
const STATUSES = ["new", "paid", "shipped", "cancelled"];
const BASE_MS = Date.UTC(2024, 0, 1);

export function generateBatch(start: number, count: number, seed = 42): Array<Record<string, unknown>> {
  const r = rng(seed + start);
  const out = new Array<Record<string, unknown>>(count);
  for (let i = 0; i < count; i++) {
    const n = start + i;
    const rec: Record<string, unknown> = {
      order_id: `ORD-${String(n).padStart(9, "0")}`,
      customer_id: 1 + Math.floor(r() * 500_000),
      amount: Math.round(r() * 100_000) / 100,
      currency: CURRENCIES[Math.floor(r() * 4)],
      status: STATUSES[Math.floor(r() * 4)],
      email: `user${Math.floor(r() * 1e6)}@example.com`,
      created_at: new Date(BASE_MS + Math.floor(r() * 31_536_000_000)).toISOString(),
      quantity: 1 + Math.floor(r() * 20),
    };
    // About 5 % bad, spread over the kinds of failure.
    if (r() < 0.05) {
      switch (Math.floor(r() * 6)) {
        case 0:
          rec["email"] = "not-an-email";
          break;
        case 1:
          rec["currency"] = "XXX";
          break;
        case 2:
          rec["quantity"] = 0;
          break;
        case 3:
          rec["amount"] = "12,50";
          break;
        case 4:
          rec["created_at"] = "yesterday";
          break;
        default:
          rec["order_id"] = null;
      }
    }
    out[i] = rec;
  }
  return out;
}

async function openWriter(contract: Contract, targetPath: string): Promise<LakeWriter | undefined> {
  try {
    const lake = (await import("../src/lake/index.js")) as {
      openLake(c: Contract, o: { targetPath: string }): Promise<LakeWriter>;
    };
    return await lake.openLake(contract, { targetPath });
  } catch (err) {
    process.stderr.write(`lake writer unavailable, timing validation only: ${(err as Error).message}\n`);
    return undefined;
  }
}

/**
 * A fixed piece of CPU work (JSON round trips of 100,000 small objects, ten times), timed before
 * the run: on a shared machine it tells a slow hour from a fast one (450–1,850 ms on the machine
 * of docs/benchmarks.md). It does not pin down one run's speed; to compare trees, alternate them.
 */
function calibrationMs(): number {
  const objects = Array.from({ length: 100_000 }, (_, i) => ({ a: i, b: `x${i}`, c: i / 3 }));
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) JSON.parse(JSON.stringify(objects));
  return Math.round(performance.now() - t0);
}

/** Batches generated ahead, untimed; the pipeline drains between groups (about one batch's overlap lost per group). */
const GROUP = 10;

async function runOne(opts: Options & { engine: EngineName }): Promise<void> {
  const calibration = calibrationMs();
  const engine = await createEngine(opts.engine);
  const dir = mkdtempSync(join(tmpdir(), "lakelogic-bench-"));
  const writer = opts.write ? await openWriter(benchContract, dir) : undefined;
  let wallMs = 0;
  let validateMs = 0;
  let writeMs = 0;
  let cpuMicros = 0;
  let jsBusyMs = 0;
  let good = 0;
  let bad = 0;
  try {
    let batchId = 0;
    let lastWritten: Date | null = null;
    for (let group = 0; group < opts.rows; group += GROUP * opts.batch) {
      const batches: Array<{ start: number; records: Array<Record<string, unknown>> }> = [];
      for (let start = group; start < Math.min(opts.rows, group + GROUP * opts.batch); start += opts.batch) {
        batches.push({ start, records: generateBatch(start, Math.min(opts.batch, opts.rows - start)) });
      }
      const cpu0 = process.cpuUsage();
      const elu0 = performance.eventLoopUtilization();
      const t0 = performance.now();
      // As StreamSink does: up to `readAhead` batches are validated while one is written; writes
      // one at a time, in order.
      let writing: Promise<void> | undefined;
      const inFlight: Array<Promise<Awaited<ReturnType<typeof engine.validate>>>> = [];
      let issued = 0;
      const issue = (): void => {
        const b = batches[issued++]!;
        const v0 = performance.now();
        inFlight.push(
          engine.validate(b.records, benchContract).then((r) => {
            validateMs += performance.now() - v0;
            return r;
          }),
        );
      };
      for (const { start } of batches) {
        while (issued < batches.length && inFlight.length < (opts.sequential ? 1 : opts.readAhead)) issue();
        const result = await inFlight.shift()!;
        good += result.goodCount;
        bad += result.bad.length;
        if (!writer) continue;
        await writing; // the previous batch is written before this one starts (as in StreamSink)
        const id = ++batchId;
        const w0 = performance.now();
        // As src/pipeline/commit.ts does: the engine's GoodColumns go along, rows only if asked for.
        // …and names the stream, as for a source that replays from its cursor.
        const request = {
          batchId: id,
          bad: result.bad.map((b) => ({ record: b.record, errors: b.errors, position: b.index + start })),
          stream: { key: "bench", replay: "cursor", previousCommittedAt: lastWritten },
        } as WriteRequest;
        defineLazy(request, "good", () => result.good);
        if (result.goodColumns) request.goodColumns = result.goodColumns;
        writing = writer
          .write(request)
          .then(() => {
            writeMs += performance.now() - w0;
            lastWritten = new Date();
          });
        writing.catch(() => undefined); // thrown by the next await
        if (opts.sequential) await writing;
      }
      await writing;
      wallMs += performance.now() - t0;
      jsBusyMs += performance.eventLoopUtilization(elu0).active;
      const cpu = process.cpuUsage(cpu0);
      cpuMicros += cpu.user + cpu.system;
    }
  } finally {
    await writer?.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const seconds = wallMs / 1000;
  const line = {
    engine: opts.engine,
    rows: opts.rows,
    seconds: Number(seconds.toFixed(3)),
    rowsPerSec: Math.round(opts.rows / seconds),
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    batchSize: opts.batch,
    write: writer ? "duckdb-merge" : "none",
    overlap: writer !== undefined && !opts.sequential,
    readAhead: opts.sequential ? 0 : opts.readAhead,
    // CPU time of this process over the same spans (all threads): on a busy machine wall time
    // overstates cost, and cpuSeconds / seconds shows how much ran in parallel.
    cpuSeconds: Number((cpuMicros / 1e6).toFixed(3)),
    // Share of the wall time the JavaScript thread was busy (event-loop utilisation): near 1, it
    // is the bottleneck; well below, the DuckDB threads are.
    jsThreadBusy: Number((jsBusyMs / wallMs).toFixed(2)),
    // Time spent in each step; with overlap they run at the same time and add up to more than `seconds`.
    validateSeconds: Number((validateMs / 1000).toFixed(3)),
    writeSeconds: Number((writeMs / 1000).toFixed(3)),
    good,
    bad,
    calibrationMs: calibration,
  };
  process.stdout.write(JSON.stringify(line) + "\n");
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.engine) return runOne({ ...opts, engine: opts.engine });
  // One process per engine, so each peak RSS is that engine's own.
  const self = fileURLToPath(import.meta.url);
  for (const engine of ["duckdb", "polars"] as const) {
    const args = [...process.execArgv, self, ...process.argv.slice(2), "--engine", engine];
    const res = spawnSync(process.execPath, args, { stdio: "inherit" });
    if (res.status !== 0) process.exitCode = res.status ?? 1;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main();
}
