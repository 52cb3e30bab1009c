import { ConfigError, LakeLogicError } from "../../errors.js";
import { DEFAULT_RETAIN_HOURS, maintainLake, type MaintainReport, type MaintenanceStep, type TableMaintenance } from "../../lake/maintain.js";
import { parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { JSON_FLAG, printResult } from "../output.js";
import { contractLoadOptionsOf } from "../temporal-flags.js";
import { EXIT, subcommands, UsageError, type CliCommand, type CliIO } from "../types.js";

const usage = `Usage: lakelogic lake maintain CONTRACT [options]

Maintain CONTRACT's table and its quarantine, as the lake format needs (docs/lake.md, "Small
files and maintenance"):
  delta    compact small files, vacuum files unreferenced for longer than --retain-hours, write a
           Delta checkpoint. Safe while a stream writes: a compaction that loses its commit to
           the stream's is planned again; the log is never cleaned up (a stream's checkpoint
           lives in its commits)
  duckdb   CHECKPOINT the database file (rows live in the one file)
  parquet  report the file counts (each writer removes replaced and unlisted files itself)
Run it on a schedule with: lakelogic schedule create NAME CONTRACT --every 1h --maintain

Options:
      --target-path DIR        the lake directory (default: the contract's, else ./lake)
      --retain-hours N         delta: vacuum files unreferenced for longer than N hours
                               (default ${DEFAULT_RETAIN_HOURS}, Delta's; below the table's
                               delta.deletedFileRetentionDuration it is refused)
      --allow-short-retention  delta: accept --retain-hours below that minimum (only for tables
                               nothing reads or writes while maintenance runs)
      --var NAME=VALUE         a value for the contract's {NAME} placeholders (repeatable)
      --env NAME               the environments.<NAME> of _system.yaml that binds placeholders (default dev)
      --json                   print one JSON document instead of text
  -h, --help

Exit codes: 0 done, 1 maintenance failed or a step gave up (concurrent writers won every
attempt; run it again), 2 usage.
`;

/** `--retain-hours`: whole hours (delta-rs's unit), 0 or more. */
export function retainHoursOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 0) throw new UsageError(`--retain-hours must be a whole number of hours >= 0 (got "${value}")`);
  return n;
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

const files = (n: number) => `${n} file${n === 1 ? "" : "s"}`;

function stepText(s: MaintenanceStep): string {
  switch (s.kind) {
    case "compact":
      if (s.status === "gave-up") return `compaction gave up after ${s.attempts} attempts lost to concurrent writers`;
      return s.filesRemoved === 0 ? "nothing to compact" : `compacted ${files(s.filesRemoved)} into ${s.filesAdded}`;
    case "vacuum":
      return s.status === "gave-up" ? "vacuum gave up" : `vacuumed ${files(s.filesDeleted)} unreferenced for over ${s.retainHours} h`;
    case "checkpoint":
      return `checkpoint at version ${s.version}`;
    case "duckdb-checkpoint":
      return "CHECKPOINT";
    case "flush-inlined":
      return s.status === "gave-up" ? "flushing inlined rows gave up" : "inlined rows flushed to files";
    case "expire-snapshots":
      return s.status === "gave-up" ? "expiring snapshots gave up" : `expired ${s.snapshotsExpired} snapshot${s.snapshotsExpired === 1 ? "" : "s"} older than ${s.retainHours} h`;
    case "none":
      return "nothing to do";
  }
}

function tableText(t: TableMaintenance): string {
  const where = `${t.name} (${t.role}) ${t.location}`;
  if (!t.exists) return `${where}: nothing written yet\n`;
  const version = t.before.version === undefined ? "" : `, version ${t.before.version} -> ${t.after.version}`;
  return `${where}: ${files(t.before.files)} ${size(t.before.bytes)} -> ${files(t.after.files)} ${size(t.after.bytes)}${version}; ${t.steps.map(stepText).join(", ")}\n`;
}

function reportText(r: MaintainReport): string {
  return r.tables.map(tableText).join("") + (r.complete ? "" : "not complete: run lakelogic lake maintain again later\n");
}

async function maintain(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, {
    "target-path": { type: "string" },
    "retain-hours": { type: "string" },
    "allow-short-retention": { type: "boolean" },
    var: { type: "string", multiple: true },
    env: { type: "string" },
    ...JSON_FLAG,
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    io.stdout(usage);
    return EXIT.ok;
  }
  const [contractPath, ...extra] = positionals;
  if (!contractPath) throw new UsageError("lake maintain needs a CONTRACT");
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const retainHours = retainHoursOf(values["retain-hours"]);
  const contract = await loadForCommand(contractPath, contractLoadOptionsOf(values), io, "lake");
  let report: MaintainReport;
  try {
    report = await maintainLake(contract, {
      ...(values["target-path"] !== undefined ? { targetPath: values["target-path"] } : {}),
      ...(retainHours !== undefined ? { retainHours } : {}),
      allowShortRetention: values["allow-short-retention"] === true,
    });
  } catch (err) {
    if (err instanceof ConfigError && err.option === "retainHours") throw new UsageError(`--retain-hours: ${err.detail}`);
    if (err instanceof ConfigError && err.option === "targetPath") throw new UsageError(`--target-path: ${err.detail}`);
    // Bad configuration is a usage error (the dispatcher says so); a failed maintenance is a failure.
    if (err instanceof ConfigError || !(err instanceof LakeLogicError)) throw err;
    io.stderr(`lakelogic lake: ${err.message}\n`);
    return EXIT.failed;
  }
  printResult(io, values.json, report, () => reportText(report));
  return report.complete ? EXIT.ok : EXIT.failed;
}

export const lakeCommand: CliCommand = subcommands(usage, { maintain });
