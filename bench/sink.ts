/**
 * `npm run bench:sink` — StreamSink throughput and memory, printed as JSON lines.
 *
 *  - drain: 1,000,000 order events, available_now, merged into DuckDB at batch 10,000.
 *  - soak: 10,000,000 events in continuous mode, RSS sampled every second (target: flat, <= 300 MB),
 *    in this process, and again in a child process started with the lean memory profile's
 *    settings (docs/lake.md, "Memory").
 *
 * Flags: --events N (drain size), --soak-events N, --only drain|soak|lean, --engine duckdb|polars.
 * `--only soak` runs the soak in this process with whatever settings it has.
 *
 * `npm run bench:sink` compiles the project with tsconfig.bench.json and runs the JavaScript, as
 * a user's process would: under tsx, the loader's worker thread (a second V8 heap) and its
 * caches add ~30-40 MB of RSS that are not the library's. `npx tsx bench/sink.ts` still works.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { orderEvents } from "../examples/orders.js";
import { StreamSink } from "../src/sink/index.js";
import { IterableSource } from "../src/sources/index.js";
import type { EngineName } from "../src/engine/types.js";

const { values: flags } = parseArgs({
  options: {
    events: { type: "string", default: "1000000" },
    "soak-events": { type: "string", default: "10000000" },
    only: { type: "string" },
    engine: { type: "string", default: "duckdb" },
    batch: { type: "string", default: "10000" },
  },
});
// From bench/ (tsx) or from .bench-build/bench/ (compiled): the project root is the nearest
// folder above with a package.json.
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("bench/sink: cannot find the project root (package.json)");
    dir = up;
  }
  return dir;
}
const contract = join(projectRoot(), "examples", "orders.yaml");
const engine = flags.engine as EngineName;
const batchSize = Number(flags.batch);

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

async function run(name: string, events: number, mode: "available_now" | "continuous", sampleEveryMs: number) {
  const dir = mkdtempSync(join(tmpdir(), `ll-bench-${name}-`));
  const samples: number[] = [];
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    const rss = process.memoryUsage().rss;
    peak = Math.max(peak, rss);
    samples.push(mb(rss));
  }, sampleEveryMs);
  const started = process.hrtime.bigint();
  try {
    const sink = new StreamSink(contract, new IterableSource(() => orderEvents(events), { replayable: true }), {
      engine,
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "checkpoints.sqlite"),
      batchSize,
      maxWaitMs: 5_000,
      handleSignals: false,
    });
    const summary = await sink.run(mode);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    peak = Math.max(peak, process.memoryUsage().rss);
    return { summary, seconds, samples, peakRssMb: mb(peak) };
  } finally {
    clearInterval(sampler);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Least-squares slope of RSS over the second half of the samples, in MB per minute. */
function slopePerMinute(samples: number[], everyMs: number): number {
  const tail = samples.slice(Math.floor(samples.length / 2));
  if (tail.length < 2) return 0;
  const n = tail.length;
  const xs = tail.map((_, i) => (i * everyMs) / 60_000);
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = tail.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (tail[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : Math.round((num / den) * 10) / 10;
}

if (!flags.only || flags.only === "drain") {
  const events = Number(flags.events);
  const r = await run("drain", events, "available_now", 100);
  console.log(
    JSON.stringify({
      bench: "sink-drain",
      engine,
      mode: "available_now",
      strategy: "merge",
      events,
      batchSize,
      seconds: Math.round(r.seconds * 100) / 100,
      eventsPerSec: Math.round(events / r.seconds),
      goodCount: r.summary.goodCount,
      badCount: r.summary.badCount,
      peakRssMb: r.peakRssMb,
    }),
  );
}

/**
 * The lean profile's process settings: what the library reads itself (LAKELOGIC_MEMORY_PROFILE)
 * and what only the process's launcher can set (glibc's arenas, V8's young generation).
 */
const LEAN_ENV = { LAKELOGIC_MEMORY_PROFILE: "lean", MALLOC_ARENA_MAX: "2" };
const LEAN_NODE_FLAGS = ["--max-semi-space-size=4"];

if (!flags.only || flags.only === "soak") await soak();
if ((!flags.only && process.env["LAKELOGIC_MEMORY_PROFILE"] !== "lean") || flags.only === "lean") runLeanSoak();

/** This script again, soak only, in a process started with the lean profile's settings. */
function runLeanSoak(): void {
  const script = fileURLToPath(import.meta.url);
  const args = [...LEAN_NODE_FLAGS, ...(script.endsWith(".ts") ? ["--import", "tsx"] : []), script, "--only", "soak"];
  for (const f of ["soak-events", "engine", "batch"] as const) args.push(`--${f}`, String(flags[f]));
  const child = spawnSync(process.execPath, args, { env: { ...process.env, ...LEAN_ENV }, stdio: "inherit" });
  if (child.status !== 0) {
    throw new Error(`bench/sink: the lean soak failed (${child.error?.message ?? `exit ${child.status ?? child.signal}`})`);
  }
}

async function soak(): Promise<void> {
  const events = Number(flags["soak-events"]);
  const r = await run("soak", events, "continuous", 1000);
  console.log(
    JSON.stringify({
      bench: "sink-soak",
      memoryProfile: process.env["LAKELOGIC_MEMORY_PROFILE"] || "default",
      nodeFlags: process.execArgv.filter((a) => a.startsWith("--max-")),
      mallocArenaMax: process.env["MALLOC_ARENA_MAX"] ?? null,
      engine,
      mode: "continuous",
      strategy: "merge",
      events,
      batchSize,
      seconds: Math.round(r.seconds * 10) / 10,
      eventsPerSec: Math.round(events / r.seconds),
      peakRssMb: r.peakRssMb,
      rssSlopeMbPerMinSecondHalf: slopePerMinute(r.samples, 1000),
      rssSamplesMb: r.samples,
    }),
  );
}
