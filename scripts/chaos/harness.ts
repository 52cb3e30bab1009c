/**
 * The chaos harness: for every (source × runtime) cell a known stream is produced, its consumer is
 * SIGKILLed at random moments (seeded) and at the hook point between write and commit, restarted,
 * and finally left to drain; then every stream is audited. See docs/guarantees.md, "Chaos".
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { delay } from "../../test/support/proc.js";
import { mulberry32 } from "../../test/support/random.js";
import { s3Environment, startS3, type ObjectStoreServer } from "../../test/support/objectstores.js";
import { startPostgres, type PostgresServer } from "../../test/support/postgres.js";
import { startTemporal, type TemporalServer } from "../../test/support/temporal.js";
import type { WorkerMachine } from "../../test/temporal/support.js";
import { auditStream, loadCheckpoint, type StreamAudit } from "./check.js";
import { CHAOS_CONTRACT, makeDataset, type Dataset } from "./dataset.js";
import { sinkLife, type SinkPlan } from "./sink-life.js";
import type { LoadedStream, SourceDriver, SourceKind } from "./source-driver.js";
import { startDriver } from "./sources.js";
import { QUEUE_DRAIN_MS, startTemporalCell, type TemporalCell } from "./temporal-cell.js";

export const RUNTIMES = ["sink", "temporal"] as const;
export const LAKE_FORMATS = ["duckdb", "delta", "ducklake"] as const;
export type LakeFormat = (typeof LAKE_FORMATS)[number];
export type Runtime = (typeof RUNTIMES)[number];

export interface ChaosOptions {
  kills: number;
  seed: number;
  sources: SourceKind[];
  runtimes: Runtime[];
  /** Distinct keys per stream; default grows with the kills per stream. */
  keys?: number;
  /**
   * The lake format every stream writes. Default duckdb. On one machine the checkpoint stays a
   * SQLite file beside the lake; on two it is the lake's own commits (`checkpoint: "target"`).
   */
  lake?: LakeFormat;
  /**
   * 2: every consumer life (Temporal worker or StreamSink run) is a machine of its own, in a
   * private mount namespace with a private disk, alternating between machines A and B, so a
   * stream moves machine at every kill; lakes then live on shared storage (delta or ducklake
   * only). Needs root. Default 1.
   */
  machines?: 1 | 2;
  log?: (line: string) => void;
}

interface Tally {
  kills: number;
  killsAtHook: number;
  streams: number;
  lost: number;
  duplicated: number;
}

/** Where the run's streams ran and kept their lakes. */
export interface ChaosTopology {
  machines: 1 | 2;
  lake: LakeFormat;
  /** Where every stream's lake lives, and where its checkpoint. */
  lakeAt: string;
  checkpointAt: string;
}

export interface ChaosReport {
  seed: number;
  topology: ChaosTopology;
  kills: number;
  killsAtHook: number;
  /** Kills asked for but not spent because every stream had already drained. */
  unspentKills: number;
  byRuntime: Record<string, Tally>;
  bySource: Record<string, Tally>;
  lost: number;
  duplicated: number;
  quarantineMismatch: number;
  reconciled: boolean;
  /** Batches written but not committed when a consumer died (redone after the restart); measured where writes are announced (StreamSink). */
  maxBatchesReplayedPerCrash: number;
  streams: Array<{ source: SourceKind; runtime: Runtime; produced: number; poison: number; kills: number } & Omit<StreamAudit, "totals"> & { totals: StreamAudit["totals"] }>;
}

/** Small batches: more write→commit windows per second of stream, so each kill costs little data. */
const SINK_BATCH = 20;
const TEMPORAL_BATCH = 20;

interface Cell {
  source: SourceKind;
  runtime: Runtime;
  dir: string;
  contract: string;
  lake: string;
  /** A SQLite file on this host, or "target" (the lake's own commits). */
  checkpoint: string;
  /** What a process needs to reach the lake (S3 credentials, a DuckLake's catalog). */
  lakeEnv: Record<string, string>;
  /** The machines its lives alternate between (none: plain processes of this host). */
  machines: WorkerMachine[];
  /** StreamSink lives so far, for the alternation. */
  lives: number;
  /** Per cell: a Temporal stream's workflow id derives from it, and is unique per server. */
  key: string;
  data: Dataset;
  loaded: LoadedStream;
  temporal?: TemporalCell;
  kills: number;
  killsAtHook: number;
  drained: boolean;
}

/**
 * What the stream has not consumed yet. A run of `available_now` may end before the end of what
 * was produced — an SSE feed that stalled for `drainIdleMs` looks caught up, and Pub/Sub messages
 * are published as the consumer goes — and a scheduled stream would simply run again: so does the
 * harness, until nothing is left. Queues say what they still hold; cursor sources, whose totals
 * are exact, what was produced minus what the checkpoint counts.
 */
async function remainingOf(c: Cell): Promise<number> {
  if (c.loaded.remaining) return c.loaded.remaining();
  const counted = (await loadCheckpoint(c))?.totals.sourceCount ?? 0;
  return Math.max(0, c.data.items.length - counted);
}

function sinkArgs(c: Cell): string[] {
  return [c.contract, "--source", JSON.stringify(c.loaded.source), "--checkpoint", c.checkpoint, "--checkpoint-key", c.key, "--target-path", c.lake, "--batch-size", String(SINK_BATCH), "--max-wait-ms", "1000", "--mode", "available_now"];
}

/** One StreamSink life, on the cell's next machine if it has machines. */
function sinkRun(c: Cell, plan: SinkPlan): ReturnType<typeof sinkLife> {
  const machine = c.machines.length ? c.machines[c.lives++ % c.machines.length] : undefined;
  const env = { ...c.loaded.env, ...c.lakeEnv, ...(machine ? { TMPDIR: machine.privateDisk } : {}) };
  return sinkLife(sinkArgs(c), env, plan, { privateDisk: machine?.privateDisk, writeIsCommit: c.checkpoint === "target" });
}

/** One kill of a StreamSink cell; returns the batches it left written but uncommitted. */
async function killSink(c: Cell, rand: () => number): Promise<number> {
  // Every third kill of a cell lands at the hook point for sure; the others where chance puts them.
  const pick = c.kills % 3 === 1 ? 0.5 : rand();
  const plan: SinkPlan =
    pick < 0.2
      ? { kill: "delay", ms: Math.floor(rand() * 800) }
      : pick < 0.6
        ? { kill: "afterWrite", n: 1 + Math.floor(rand() * 5) }
        : { kill: "midStream", ms: Math.floor(rand() * 300) };
  const life = await sinkRun(c, plan);
  if (life.killed) {
    c.kills++;
    if (life.atHook) c.killsAtHook++;
    const committed = (await loadCheckpoint(c))?.batchId ?? 0;
    return Math.max(0, life.maxWritten - committed);
  }
  if (life.exitCode === 0) c.drained = (await remainingOf(c)) === 0;
  else throw new Error(`${c.source}/sink: the consumer failed on its own (exit ${life.exitCode}):\n${life.output}`);
  return 0;
}

async function drainSink(c: Cell): Promise<void> {
  const deadline = Date.now() + QUEUE_DRAIN_MS;
  for (let run = 1; ; run++) {
    const life = await sinkRun(c, { kill: "none" });
    if (life.exitCode !== 0) throw new Error(`${c.source}/sink: the final run failed (exit ${life.exitCode}):\n${life.output}`);
    // A queue run ends on an empty receive while a killed life's lease may still hide messages;
    // on a loaded machine an ack can also come after its lease lapsed, and the message returns.
    const left = await remainingOf(c);
    if (left === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`${c.source}/sink: ${left} records still unconsumed after ${run} runs in ${QUEUE_DRAIN_MS / 60_000} min`);
    }
    await delay(1000);
  }
}

/** Storage every machine reaches (--machines 2): an S3 server, and a PostgreSQL server for DuckLake catalogs. */
interface SharedStorage {
  s3: ObjectStoreServer;
  pg?: PostgresServer;
  /** The private-disk paths of machines A and B. */
  disks: string[];
}

const BUCKET = "chaos";

/** A machine whose private disk is also its temporary directory: what a life stages locally stays on it. */
const machineOn =
  (env: Record<string, string>) =>
  (privateDisk: string): WorkerMachine => ({ privateDisk, env: { ...env, TMPDIR: privateDisk } });

/**
 * A cell on two machines: its lake on S3 (for DuckLake with a catalog database of its own, as a
 * catalog has one data path), its checkpoint in the lake's commits — not a file of this host,
 * which every machine's namespace would see and so hide a split.
 */
function sharedCell(name: string, shared: SharedStorage): Pick<Cell, "lake" | "lakeEnv" | "checkpoint" | "machines"> {
  const lakeEnv = s3Environment(shared.s3.endpoint);
  if (shared.pg) {
    const db = name.replace(/-/g, "_");
    execFileSync(join(shared.pg.binDir, "createdb"), ["-h", "127.0.0.1", "-p", String(shared.pg.port), "-U", "postgres", db]);
    lakeEnv.DUCKLAKE_METADATA = `postgres:dbname=${db} host=127.0.0.1 port=${shared.pg.port} user=postgres`;
  }
  return { lake: `s3://${BUCKET}/${name}`, lakeEnv, checkpoint: "target", machines: shared.disks.map(machineOn(lakeEnv)) };
}

async function makeCell(source: SourceKind, runtime: Runtime, driver: SourceDriver, keys: number, root: string, lake: LakeFormat, shared?: SharedStorage): Promise<Cell> {
  const name = `${source}-${runtime}`;
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const contract = join(dir, "chaos.yaml");
  writeFileSync(contract, CHAOS_CONTRACT.replace("format: duckdb", `format: ${lake}`));
  const data = makeDataset(keys, driver.text);
  const loaded = await driver.load(`${source}_${runtime}`, dir, data);
  const where = shared ? sharedCell(name, shared) : { lake: join(dir, "lake"), lakeEnv: {}, checkpoint: join(dir, "checkpoints.sqlite"), machines: [] };
  return { source, runtime, dir, contract, ...where, lives: 0, key: `stream::chaos-${source}-${runtime}`, data, loaded, kills: 0, killsAtHook: 0, drained: false };
}

async function startTemporalCells(cells: Cell[], temporal: TemporalServer): Promise<void> {
  for (const c of cells.filter((x) => x.runtime === "temporal")) {
    // Workers inherit this process's environment (a source's secret references resolve there).
    Object.assign(process.env, c.loaded.env);
    c.temporal = await startTemporalCell(
      temporal.address,
      `chaos-${c.source}`,
      () => remainingOf(c),
      {
      contract: c.contract,
      source: c.loaded.source as { type: string },
      mode: "available_now",
      checkpointKey: c.key,
      targetPath: c.lake,
      checkpoint: c.checkpoint,
      batchSize: TEMPORAL_BATCH,
      maxWaitMs: 1000,
      // Notice a dead worker within seconds, not minutes.
      timeouts: { scheduleToStartMs: 3000, heartbeatMs: 4000, idleFetchMs: 1000 },
      },
      c.machines,
    );
  }
}

function tally(report: Record<string, Tally>, name: string, c: Cell, a: StreamAudit): void {
  const t = (report[name] ??= { kills: 0, killsAtHook: 0, streams: 0, lost: 0, duplicated: 0 });
  t.kills += c.kills;
  t.killsAtHook += c.killsAtHook;
  t.streams++;
  t.lost += a.lost;
  t.duplicated += a.duplicated;
}

async function killLoop(cells: Cell[], kills: number, rand: () => number, log: (l: string) => void): Promise<number> {
  let spent = 0;
  let maxReplayed = 0;
  let turn = 0;
  while (spent < kills && cells.some((c) => !c.drained)) {
    const c = cells[turn++ % cells.length]!;
    if (c.drained) continue;
    const before = c.kills;
    if (c.runtime === "sink") maxReplayed = Math.max(maxReplayed, await killSink(c, rand));
    else {
      const outcome = await c.temporal!.killAfter(Math.floor(rand() * 3000));
      if (outcome === "killed") c.kills++;
      else if (outcome === "done") c.drained = true;
    }
    spent += c.kills - before;
    if (c.kills > before) {
      const at = (await loadCheckpoint(c))?.totals.sourceCount ?? 0;
      log(`[chaos] kill ${spent}/${kills}: ${c.source}/${c.runtime} at ${at}/${c.data.items.length} records`);
    }
  }
  return maxReplayed;
}

/**
 * The topology a run asks for, checked up front: two machines cannot share a lake on a private
 * disk, so they need a format whose tables live on shared storage.
 */
export function chaosTopology(o: Pick<ChaosOptions, "lake" | "machines">): ChaosTopology {
  const machines = o.machines ?? 1;
  const lake = o.lake ?? "duckdb";
  if (machines !== 1 && machines !== 2) throw new Error(`--machines must be 1 or 2, not ${String(machines)}`);
  if (machines === 1) return { machines, lake, lakeAt: "local disk (one directory per stream)", checkpointAt: "SQLite file beside the lake" };
  if (lake === "duckdb") {
    throw new Error(
      "--machines 2 needs --lake delta or --lake ducklake: a duckdb lake lives on one machine's disk, so a stream moved to the other machine finds none of its batches",
    );
  }
  const lakeAt =
    lake === "delta"
      ? `S3 (s3://${BUCKET}/<source>-<runtime>)`
      : `PostgreSQL catalog (one database per stream), data on S3 (s3://${BUCKET}/<source>-<runtime>)`;
  return { machines, lake, lakeAt, checkpointAt: 'the lake\'s own commits (checkpoint "target")' };
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const topology = chaosTopology(o);
  const log = o.log ?? ((l: string) => void process.stderr.write(l + "\n"));
  const rand = mulberry32(o.seed);
  const root = mkdtempSync(join(tmpdir(), "ll-chaos-"));
  const drivers = new Map<SourceKind, SourceDriver>();
  let temporal: TemporalServer | undefined;
  let shared: SharedStorage | undefined;
  const cells: Cell[] = [];
  try {
    for (const s of o.sources) drivers.set(s, await startDriver(s));
    if (topology.machines === 2) {
      const disks = ["machine-a", "machine-b"].map((m) => join(root, m));
      for (const d of disks) mkdirSync(d);
      const [s3, pg] = await Promise.all([startS3(), topology.lake === "ducklake" ? startPostgres() : undefined]);
      shared = { s3, pg, disks };
      await s3.createBucket(BUCKET);
    }
    if (o.runtimes.includes("temporal")) temporal = await startTemporal();
    const perCell = Math.ceil(o.kills / Math.max(1, o.sources.length * o.runtimes.length));
    // Up to ~500 records of progress per kill (measured): enough that kills, not data, run out.
    // A Temporal worker commits faster once warm, and a life of up to 3 s moves it further.
    const keysFor = (r: Runtime, d: SourceDriver) => o.keys ?? 500 + (d.pacedRecordsPerKill ?? (r === "sink" ? 300 : 600)) * perCell;
    for (const s of o.sources) {
      const d = drivers.get(s)!;
      for (const r of o.runtimes) cells.push(await makeCell(s, r, d, keysFor(r, d), root, topology.lake, shared));
    }
    if (temporal) await startTemporalCells(cells, temporal);
    const maxReplayed = await killLoop(cells, o.kills, rand, log);
    log("[chaos] kills spent; draining every stream");
    // All at once: the drain takes as long as the slowest stream, not the sum of them.
    await Promise.all(cells.map((c) => (c.runtime === "sink" ? drainSink(c) : c.temporal!.drain())));
    // A worker keeps the DuckDB lake open: stop them before the audit reads it.
    for (const c of cells) await c.temporal?.close();
    return await report(o, topology, cells, maxReplayed);
  } finally {
    for (const c of cells) await c.temporal?.close().catch(() => undefined);
    await temporal?.stop();
    await Promise.all([shared?.s3.stop(), shared?.pg?.stop()]);
    for (const d of drivers.values()) await d.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

async function report(o: ChaosOptions, topology: ChaosTopology, cells: Cell[], maxReplayed: number): Promise<ChaosReport> {
  const r: ChaosReport = {
    seed: o.seed,
    topology,
    kills: 0,
    killsAtHook: 0,
    unspentKills: 0,
    byRuntime: {},
    bySource: {},
    lost: 0,
    duplicated: 0,
    quarantineMismatch: 0,
    reconciled: true,
    maxBatchesReplayedPerCrash: maxReplayed,
    streams: [],
  };
  for (const c of cells) {
    const a = await auditStream({ ...c, exactTotals: c.loaded.exactTotals, ordered: c.loaded.ordered });
    r.kills += c.kills;
    r.killsAtHook += c.killsAtHook;
    r.lost += a.lost;
    r.duplicated += a.duplicated;
    r.quarantineMismatch += a.quarantineMismatch;
    r.reconciled &&= a.reconciled;
    tally(r.byRuntime, c.runtime, c, a);
    tally(r.bySource, c.source, c, a);
    r.streams.push({ source: c.source, runtime: c.runtime, produced: c.data.items.length, poison: c.data.poisonTags.size, kills: c.kills, ...a });
  }
  r.unspentKills = Math.max(0, o.kills - r.kills);
  return r;
}
