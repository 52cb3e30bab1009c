/**
 * `npm run chaos -- --kills 1000 [--seed S] [--sources file,postgres] [--runtimes sink,temporal] [--lake duckdb|delta|ducklake] [--machines 1|2] [--json]`
 *
 * SIGKILLs stream consumers at random moments across source kinds and both runtimes (StreamSink
 * and a Temporal worker), with poison records mixed in, then audits every stream: nothing lost,
 * nothing duplicated under merge, quarantine exactly the poison, checkpoint totals reconciled.
 * Prints a JSON report; exits 1 on any loss, duplicate or mismatch. The seed is printed, and the
 * same seed makes the same choices again. Needs the servers of the chosen sources and the
 * Temporal CLI (scripts/provision-*.sh). `--machines 2` runs every consumer life as a machine of
 * its own (a private mount namespace and disk; root only), alternating between two, with the
 * lakes on S3 (and DuckLake catalogs in PostgreSQL).
 */
import { chaosTopology, LAKE_FORMATS, RUNTIMES, runChaos, type ChaosReport, type LakeFormat, type Runtime } from "./chaos/harness.js";
import { SOURCE_KINDS, type SourceKind } from "./chaos/source-driver.js";

const usage = `Usage: npm run chaos -- [--kills N] [--seed S] [--sources ${SOURCE_KINDS.join(",")}] [--runtimes ${RUNTIMES.join(",")}] [--lake ${LAKE_FORMATS.join("|")}] [--machines 1|2] [--json]`;

function listOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T[] {
  const items = value.split(",").map((s) => s.trim()).filter(Boolean);
  for (const i of items) if (!allowed.includes(i as T)) throw new Error(`${flag}: "${i}" is not one of ${allowed.join(", ")}`);
  return items as T[];
}

function parse(argv: string[]): { kills: number; seed: number; sources: SourceKind[]; runtimes: Runtime[]; lake: LakeFormat; machines: 1 | 2; json: boolean } {
  const o = {
    kills: 100,
    seed: (Date.now() ^ process.pid) >>> 0,
    sources: [...SOURCE_KINDS] as SourceKind[],
    runtimes: [...RUNTIMES] as Runtime[],
    lake: "duckdb" as LakeFormat,
    machines: 1 as 1 | 2,
    json: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value\n${usage}`);
      return v;
    };
    if (flag === "--kills") o.kills = Number(value());
    else if (flag === "--seed") o.seed = Number(value()) >>> 0;
    else if (flag === "--sources") o.sources = listOf(flag, value(), SOURCE_KINDS);
    else if (flag === "--runtimes") o.runtimes = listOf(flag, value(), RUNTIMES);
    else if (flag === "--lake") o.lake = listOf(flag, value(), LAKE_FORMATS)[0]!;
    else if (flag === "--machines") {
      const m = value();
      if (m !== "1" && m !== "2") throw new Error(`--machines must be 1 or 2, not "${m}"\n${usage}`);
      o.machines = m === "1" ? 1 : 2;
    }
    else if (flag === "--json") o.json = true;
    else throw new Error(`unknown option "${flag}"\n${usage}`);
  }
  if (!Number.isInteger(o.kills) || o.kills < 0) throw new Error(`--kills must be a whole number >= 0\n${usage}`);
  try {
    chaosTopology(o);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${usage}`);
  }
  return o;
}

function failed(r: ChaosReport): boolean {
  return r.lost > 0 || r.duplicated > 0 || r.quarantineMismatch > 0 || !r.reconciled;
}

let o: ReturnType<typeof parse>;
try {
  o = parse(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
}
process.stderr.write(`[chaos] seed ${o.seed}: ${o.kills} kills over ${o.sources.join(",")} × ${o.runtimes.join(",")}, lake ${o.lake}, ${o.machines} machine${o.machines === 1 ? "" : "s"}\n`);
const report = await runChaos(o);
const summary = {
  topology: report.topology,
  kills: report.kills,
  byRuntime: report.byRuntime,
  bySource: report.bySource,
  lost: report.lost,
  duplicated: report.duplicated,
  maxBatchesReplayedPerCrash: report.maxBatchesReplayedPerCrash,
};
const full = { ...summary, seed: report.seed, killsAtHook: report.killsAtHook, unspentKills: report.unspentKills, quarantineMismatch: report.quarantineMismatch, reconciled: report.reconciled };
process.stdout.write(o.json ? JSON.stringify({ ...full, streams: report.streams }) + "\n" : JSON.stringify(full, null, 2) + "\n");
if (failed(report)) {
  process.stderr.write(`[chaos] FAILED (seed ${report.seed}): ${report.streams.flatMap((s) => s.problems.map((p) => `${s.source}/${s.runtime}: ${p}`)).join("\n")}\n`);
  process.exitCode = 1;
}
