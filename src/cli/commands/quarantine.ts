import type { Contract } from "../../contract/types.js";
import { LakeLogicError, ConfigError } from "../../errors.js";
import { LakeBusyError } from "../../lake/errors.js";
import { readQuarantineEntries, type QuarantineEntry } from "../../lake/replay-log.js";
import { currentReasons, currentRuleIds, replayQuarantine, type ReplayHooks, type ReplayReport } from "../../pipeline/replay.js";
import { parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { fieldsText, JSON_FLAG, printResult, toJson } from "../output.js";
import { contractLoadOptionsOf } from "../temporal-flags.js";
import { EXIT, subcommands, UsageError, type CliCommand, type CliIO } from "../types.js";

const usage = `Usage: lakelogic quarantine list CONTRACT [options]
       lakelogic quarantine show CONTRACT QUARANTINE_ID [options]
       lakelogic quarantine replay CONTRACT [options]

The quarantined rows of CONTRACT's table (docs/lake.md, "Quarantine: list, show, replay"):
  list     the rows, newest first: id, batch, status, rule ids, first reason, raw payload
  show     one row in full: record, raw payload, every reason, position, stream, replay
  replay   validate the pending rows again with CONTRACT as it is now; write those that pass
           to the table (merge on the primary key, as the stream writes), keep the others
           quarantined with their new reasons. Killed and run again, it writes and marks each
           row once; run again with the same contract, it does nothing

Options:
      --target-path DIR       the lake directory (default: the contract's, else ./lake)
      --rule ID               list, replay: rows that failed rule ID (their newest reasons)
      --batch N               list, replay: rows first quarantined by the stream's batch N
      --pending               list: rows not replayed yet
      --replayed              list: rows a replay wrote to the table
      --limit N               list: at most N rows (default 50; 0: all)
      --dry-run               replay: validate and report, write nothing
      --checkpoint-key KEY    replay: the stream's key (default stream::<dataset>); the replay
                              commits as KEY#replay
      --checkpoint PATH       replay: its checkpoint store (default: as lakelogic run's)
      --batch-size N          replay: rows per batch (default 1000)
      --var NAME=VALUE        a value for the contract's {NAME} placeholders (repeatable)
      --env NAME              the environments.<NAME> of _system.yaml that binds placeholders (default dev)
      --json                  print one JSON document instead of text
  -h, --help

Exit codes: 0 done (show: the row exists), 1 the lake is busy or the replay failed, 2 usage
(a bad flag, contract or configuration; show: no such row).
`;

const COMMON = {
  "target-path": { type: "string" },
  var: { type: "string", multiple: true },
  env: { type: "string" },
  ...JSON_FLAG,
  help: { type: "boolean", short: "h" },
} as const;

const FILTERS = { rule: { type: "string" }, batch: { type: "string" } } as const;

function wholeNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isSafeInteger(n) || n < 0) throw new UsageError(`${flag} must be a whole number >= 0 (got "${value}")`);
  return n;
}

interface Loaded {
  contract: Contract;
  read: { targetPath?: string };
}

async function load(positional: string | undefined, values: { "target-path"?: string; var?: string[]; env?: string }, io: CliIO, what: string): Promise<Loaded> {
  if (!positional) throw new UsageError(`quarantine ${what} needs a CONTRACT`);
  const contract = await loadForCommand(positional, contractLoadOptionsOf(values), io, "quarantine");
  return { contract, read: values["target-path"] !== undefined ? { targetPath: values["target-path"] } : {} };
}

/** A busy lake or a failed replay is the command's failure (exit 1); bad configuration stays a usage error. */
async function failing(io: CliIO, work: () => Promise<number>): Promise<number> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConfigError && err.option === "targetPath") throw new UsageError(`--target-path: ${err.detail}`);
    if (err instanceof ConfigError || err instanceof UsageError || !(err instanceof LakeLogicError)) throw err;
    const advice = err instanceof LakeBusyError ? " (a running stream holds the lake: run this after it stops, or on a shared format: delta, ducklake)" : "";
    io.stderr(`lakelogic quarantine: ${err.message}${advice}\n`);
    return EXIT.failed;
  }
}

const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

function listItem(e: QuarantineEntry) {
  return {
    quarantineId: e.quarantineId,
    batchId: e.batchId,
    status: e.status,
    ruleIds: currentRuleIds(e),
    reason: currentReasons(e)[0] ?? null,
    raw: e.raw === null ? null : clip(e.raw, 80),
    quarantinedAt: e.quarantinedAt.toISOString(),
  };
}

async function list(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { ...COMMON, ...FILTERS, pending: { type: "boolean" }, replayed: { type: "boolean" }, limit: { type: "string" } });
  if (values.help) return help(io);
  if (positionals.length > 1) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
  if (values.pending && values.replayed) throw new UsageError("--pending and --replayed exclude each other");
  const batch = wholeNumber("--batch", values.batch);
  const limit = wholeNumber("--limit", values.limit) ?? 50;
  const { contract, read } = await load(positionals[0], values, io, "list");
  return failing(io, async () => {
    const entries = (await readQuarantineEntries(contract, read))
      .filter((e) => (values.pending ? e.status === "pending" : values.replayed ? e.status === "replayed" : true))
      .filter((e) => values.rule === undefined || currentRuleIds(e).includes(values.rule))
      .filter((e) => batch === undefined || e.batchId === batch)
      // Newest first: the latest batch, then the latest write, then the id (a fixed order for ties).
      .sort((a, b) => b.batchId - a.batchId || b.quarantinedAt.getTime() - a.quarantinedAt.getTime() || (a.quarantineId < b.quarantineId ? -1 : 1));
    const shown = (limit === 0 ? entries : entries.slice(0, limit)).map(listItem);
    const result = { total: entries.length, rows: shown };
    printResult(io, values.json, result, () => {
      const lines = shown.map((r) => `${r.quarantineId}  batch ${r.batchId}  ${r.status}  ${r.ruleIds.join(",") || "-"}  ${r.reason ?? "-"}  ${r.raw ?? "-"}\n`);
      const more = entries.length > shown.length ? `… ${entries.length - shown.length} more (--limit)\n` : "";
      return `${lines.join("")}${more}${entries.length} row${entries.length === 1 ? "" : "s"}\n`;
    });
    return EXIT.ok;
  });
}

async function show(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, COMMON);
  if (values.help) return help(io);
  const [contractPath, id, ...extra] = positionals;
  if (id === undefined) throw new UsageError("quarantine show needs a CONTRACT and a QUARANTINE_ID");
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const { contract, read } = await load(contractPath, values, io, "show");
  return failing(io, async () => {
    const entry = (await readQuarantineEntries(contract, read)).find((e) => e.quarantineId === id);
    if (!entry) throw new UsageError(`no quarantine row "${id}" in the quarantine of ${contract.materialization.table} (lakelogic quarantine list shows the ids)`);
    const full = {
      quarantineId: entry.quarantineId,
      batchId: entry.batchId,
      status: entry.status,
      record: entry.record ?? null,
      raw: entry.raw,
      rawEncoding: entry.rawEncoding,
      reasons: entry.reasons,
      ruleIds: entry.ruleIds,
      position: entry.position ?? null,
      streamKey: entry.streamKey,
      quarantinedAt: entry.quarantinedAt.toISOString(),
      replay: entry.replay ?? null,
    };
    printResult(io, values.json, full, () => {
      const { replay, reasons, ...rest } = full;
      const main = fieldsText({ ...rest, reasons: reasons.join("; ") || "-", record: toJson(full.record) });
      return replay ? `${main}replay:\n${fieldsText({ ...replay }, "  ")}` : main;
    });
    return EXIT.ok;
  });
}

function replayText(r: ReplayReport): string {
  if (r.considered === 0) return `nothing to replay (every pending row was tried with this contract, ${r.contractHash})\n`;
  const verb = r.dryRun ? "would write" : "wrote";
  const head = `${r.considered} pending row${r.considered === 1 ? "" : "s"} validated with contract ${r.contractHash}: ${verb} ${r.replayed} to the table, ${r.stillQuarantined} still quarantined`;
  const batches = r.batches.length > 0 ? ` (${r.replayKey} batch${r.batches.length === 1 ? "" : "es"} ${r.batches[0]}${r.batches.length > 1 ? `–${r.batches[r.batches.length - 1]}` : ""})` : "";
  return `${head}${batches}\n`;
}

/** `lakelogic quarantine replay`, with crash hooks for tests. */
export async function runReplay(args: string[], io: CliIO, options: { hooks?: ReplayHooks } = {}): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, {
    ...COMMON,
    ...FILTERS,
    "dry-run": { type: "boolean" },
    "checkpoint-key": { type: "string" },
    checkpoint: { type: "string" },
    "batch-size": { type: "string" },
  });
  if (values.help) return help(io);
  if (positionals.length > 1) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
  const batch = wholeNumber("--batch", values.batch);
  const batchSize = wholeNumber("--batch-size", values["batch-size"]);
  if (batchSize === 0) throw new UsageError("--batch-size must be at least 1");
  const { contract, read } = await load(positionals[0], values, io, "replay");
  return failing(io, async () => {
    const report = await replayQuarantine(contract, {
      ...read,
      ...(values.rule !== undefined ? { rule: values.rule } : {}),
      ...(batch !== undefined ? { batch } : {}),
      ...(values["checkpoint-key"] !== undefined ? { checkpointKey: values["checkpoint-key"] } : {}),
      ...(values.checkpoint !== undefined ? { checkpoint: values.checkpoint } : {}),
      ...(batchSize !== undefined ? { batchSize } : {}),
      dryRun: values["dry-run"] === true,
      ...(options.hooks ? { hooks: options.hooks } : {}),
    });
    printResult(io, values.json, report, () => replayText(report));
    return EXIT.ok;
  });
}

function help(io: CliIO): number {
  io.stdout(usage);
  return EXIT.ok;
}

export const quarantineCommand: CliCommand = subcommands(usage, { list, show, replay: (args, io) => runReplay(args, io) });
