/**
 * `npm run bench:compare [-- --rows N --rounds R --only a,b --batch N]` — this project against the Python
 * original and against DuckDB's own ceiling, side by side on one input:
 *
 *   ts-duckdb, ts-polars   StreamSink available_now from the NDJSON file, each engine, merge into DuckDB
 *   ts-delta               the same (DuckDB engine), merge into a local Delta table, checkpoint in the table
 *   ts-delta-s3            the same, the Delta table on S3 (moto's server on loopback)
 *   ts-ducklake            the same, merge into a DuckLake: catalog file, local data files
 *   ts-ducklake-pg-s3      the same, DuckLake with its catalog in PostgreSQL and data files on S3 (moto)
 *   py-duckdb, py-polars   Python LakeLogic 1.84.0's StreamSink, each engine, merge into Delta (its fastest target)
 *   sql-batches, sql-file  DuckDB alone: the same rules + merge in plain SQL, per 10,000-row batch / whole file
 *   ceiling                DuckDB alone: typed read_json + the rules, plain insert (no merge)
 *
 * Python LakeLogic is installed from PyPI into bench/.python (once; cached). The input is
 * `--rows` order events for examples/orders.yaml (default 1,000,000, ~5 % bad, every id once).
 * Every run is checked before its time counts: good and bad counts as the input has them, and
 * the target and quarantine read back with exactly those rows. Runs alternate over `--rounds`
 * rounds (default 3); one JSON line per run gives the median, then one line the ratios. The
 * StreamSink runs use the default batch size (growing under the backlog); `--batch N` fixes it.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse, stringify } from "yaml";
import { isBadOrder, writeOrderEvents } from "../examples/orders.js";
import { s3Environment, startS3, type ObjectStoreServer } from "../test/support/objectstores.js";
import { startPostgres, type PostgresServer } from "../test/support/postgres.js";

const RUNS = ["ts-duckdb", "ts-polars", "ts-delta", "ts-delta-s3", "ts-ducklake", "ts-ducklake-pg-s3", "py-duckdb", "py-polars", "sql-batches", "sql-file", "ceiling"] as const;
type RunName = (typeof RUNS)[number];

const { values: flags } = parseArgs({
  options: { rows: { type: "string", default: "1000000" }, rounds: { type: "string", default: "3" }, only: { type: "string" }, batch: { type: "string" } },
});
const rows = Number(flags.rows);
const rounds = Number(flags.rounds);
const only = flags.only ? (flags.only.split(",") as RunName[]) : [...RUNS];
for (const r of only) if (!RUNS.includes(r)) throw new Error(`--only: "${r}" is not one of ${RUNS.join(", ")}`);

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const PYTHON_LAKELOGIC = "lakelogic[duckdb,polars]==1.84.0";
const venv = here("./.python");
const python = join(venv, "bin", "python");
const say = (s: string) => process.stderr.write(`[compare] ${s}\n`);

function ensurePython(): void {
  const marker = join(venv, ".installed");
  if (existsSync(marker) && readFileSync(marker, "utf8") === PYTHON_LAKELOGIC) return;
  say(`installing ${PYTHON_LAKELOGIC} into bench/.python (once)…`);
  rmSync(venv, { recursive: true, force: true });
  execFileSync("python3", ["-m", "venv", venv], { stdio: "inherit" });
  execFileSync(join(venv, "bin", "pip"), ["install", "--quiet", "--disable-pip-version-check", PYTHON_LAKELOGIC], { stdio: "inherit" });
  writeFileSync(marker, PYTHON_LAKELOGIC);
}

async function writeInput(path: string): Promise<{ good: number; bad: number }> {
  await writeOrderEvents(path, rows);
  let bad = 0;
  for (let i = 0; i < rows; i++) if (isBadOrder(i)) bad++;
  return { good: rows - bad, bad };
}

/** examples/orders.yaml as the Python original runs it: a Delta merge target and a Delta quarantine. */
function pythonContract(dir: string): string {
  const doc = parse(readFileSync(here("../examples/orders.yaml"), "utf8")) as Record<string, Record<string, unknown>>;
  doc["materialization"] = { ...doc["materialization"], format: "delta", target_path: join(dir, "orders") };
  doc["quarantine"] = { ...doc["quarantine"], target: join(dir, "quarantine") };
  const path = join(dir, "orders.yaml");
  writeFileSync(path, stringify(doc));
  return path;
}

function command(run: RunName, input: string, dir: string): [string, string[]] {
  const tsx = ["--import", import.meta.resolve("tsx")];
  switch (run) {
    case "ts-duckdb":
    case "ts-polars":
      return [process.execPath, [...tsx, here("./compare/ts-sink.ts"), run.slice(3), input, dir]];
    case "ts-delta":
      return [process.execPath, [...tsx, here("./compare/ts-sink.ts"), "duckdb", input, dir, "delta"]];
    case "ts-ducklake":
      return [process.execPath, [...tsx, here("./compare/ts-sink.ts"), "duckdb", input, dir, "ducklake"]];
    // A fresh prefix (and, for DuckLake, a fresh catalog database) per run.
    case "ts-delta-s3":
      return [process.execPath, [...tsx, here("./compare/ts-sink.ts"), "duckdb", input, dir, "delta", `s3://bench/${basename(dir)}`]];
    case "ts-ducklake-pg-s3":
      return [process.execPath, [...tsx, here("./compare/ts-sink.ts"), "duckdb", input, dir, "ducklake", `s3://bench/${basename(dir)}`]];
    case "py-duckdb":
    case "py-polars":
      return [python, [here("./compare/python_sink.py"), pythonContract(dir), input, run.slice(3), dir]];
    case "sql-batches":
    case "sql-file":
      return [process.execPath, [...tsx, here("./compare/duckdb-plain.ts"), run.slice(4), input, dir]];
    case "ceiling":
      return [process.execPath, [...tsx, here("./compare/duckdb-plain.ts"), "ceiling", input, dir]];
  }
}

interface Result {
  seconds: number;
  good: number;
  bad: number;
  stored: number;
  quarantined: number;
  /** StreamSink runs: the drain's peak RSS. */
  peakRssMb?: number;
}

/** PostgreSQL and the S3 server, started once when a run needs them. */
let servers: { pg: PostgresServer; s3: ObjectStoreServer; databases: number } | undefined;
async function serverEnv(run: RunName): Promise<NodeJS.ProcessEnv> {
  if (!run.endsWith("-s3")) return process.env;
  if (!servers) {
    const [pg, s3] = await Promise.all([startPostgres(), startS3()]);
    await s3.createBucket("bench");
    servers = { pg, s3, databases: 0 };
  }
  const env = { ...process.env, ...s3Environment(servers.s3.endpoint) };
  if (!run.startsWith("ts-ducklake")) return env;
  const db = `bench${++servers.databases}`;
  execFileSync(join(servers.pg.binDir, "createdb"), ["-h", "127.0.0.1", "-p", String(servers.pg.port), "-U", "postgres", db]);
  return { ...env, DUCKLAKE_METADATA: `postgres:dbname=${db} host=127.0.0.1 port=${servers.pg.port} user=postgres` };
}

async function runOnce(run: RunName, input: string): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), `ll-compare-${run}-`));
  const [bin, args] = command(run, input, dir);
  const env = { ...(await serverEnv(run)), ...(flags.batch ? { BENCH_BATCH_SIZE: flags.batch } : {}) };
  return new Promise<Result>((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], env });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    child.once("error", reject);
    child.once("close", (code) => {
      rmSync(dir, { recursive: true, force: true });
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !last.startsWith("{")) return reject(new Error(`${run} exited with ${code}:\n${err}`));
      resolve(JSON.parse(last) as Result);
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (only.some((r) => r.startsWith("py-"))) ensurePython();
const work = mkdtempSync(join(tmpdir(), "ll-compare-"));
mkdirSync(work, { recursive: true });
const input = join(work, "events.ndjson");
say(`writing ${rows.toLocaleString("en")} events…`);
const want = await writeInput(input);
const samples = new Map<RunName, number[]>(only.map((r) => [r, []]));
const peaks = new Map<RunName, number>();
const problems: string[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    for (const run of only) {
      const r = await runOnce(run, input);
      const wrong = [
        r.good !== want.good && `good ${r.good} (input has ${want.good})`,
        r.bad !== want.bad && `bad ${r.bad} (input has ${want.bad})`,
        r.stored !== want.good && `target holds ${r.stored}`,
        r.quarantined !== want.bad && `quarantine holds ${r.quarantined}`,
      ].filter((w): w is string => typeof w === "string");
      if (wrong.length > 0) problems.push(`${run}: ${wrong.join(", ")}`);
      samples.get(run)!.push(r.seconds);
      if (r.peakRssMb !== undefined) peaks.set(run, Math.max(peaks.get(run) ?? 0, r.peakRssMb));
      say(`round ${round}/${rounds} ${run}: ${r.seconds.toFixed(2)} s${wrong.length > 0 ? ` — WRONG: ${wrong.join(", ")}` : ""}`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  await Promise.all([servers?.pg.stop(), servers?.s3.stop()]);
}

const rate = new Map<RunName, number>();
for (const [run, xs] of samples) {
  const seconds = median(xs);
  rate.set(run, Math.round(rows / seconds));
  console.log(JSON.stringify({ bench: "compare", run, rows, seconds: Number(seconds.toFixed(3)), rowsPerSec: rate.get(run), good: want.good, bad: want.bad, samples: xs.map((x) => Number(x.toFixed(3))), ...(peaks.has(run) ? { peakRssMb: peaks.get(run) } : {}), ...(run.startsWith("ts-") ? { batchSize: flags.batch ? Number(flags.batch) : "default" } : {}) }));
}
const ratio = (a: RunName, b: number | undefined) => (rate.has(a) && b ? Number((rate.get(a)! / b).toFixed(2)) : undefined);
const pythonBest = Math.max(rate.get("py-duckdb") ?? 0, rate.get("py-polars") ?? 0) || undefined;
console.log(
  JSON.stringify({
    bench: "compare-ratios",
    "ts-duckdb / python best": ratio("ts-duckdb", pythonBest),
    "ts-duckdb / ceiling": ratio("ts-duckdb", rate.get("ceiling")),
    "ts-polars / ts-duckdb": ratio("ts-polars", rate.get("ts-duckdb")),
    "ts-delta / ts-duckdb": ratio("ts-delta", rate.get("ts-duckdb")),
    "ts-delta / python best (both Delta)": ratio("ts-delta", pythonBest),
    "ts-delta-s3 / ts-duckdb": ratio("ts-delta-s3", rate.get("ts-duckdb")),
    "ts-ducklake / ts-duckdb": ratio("ts-ducklake", rate.get("ts-duckdb")),
    "ts-ducklake-pg-s3 / ts-duckdb": ratio("ts-ducklake-pg-s3", rate.get("ts-duckdb")),
    "ts-duckdb / sql-batches": ratio("ts-duckdb", rate.get("sql-batches")),
  }),
);
if (problems.length > 0) {
  say(`runs that did not agree with the input:\n  ${problems.join("\n  ")}`);
  process.exitCode = 1;
}
