import { existsSync } from "node:fs";
import type { InspectedCommit, InspectedTable, QuarantineGroup } from "../../lake/index.js";
import { inspectStream, type CheckpointView, type StreamInspection } from "../../pipeline/inspect.js";
import { parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { JSON_FLAG, JSON_HELP, printResult, toJson } from "../output.js";
import { commandSettings, contractLoadOptionsOf, streamOverridesOf } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic show CONTRACT [options]

What the contract's lake holds: its table and quarantine (format, location, columns, rows), the
newest commits (batch, time, good and quarantined rows, stream), the quarantine by rule with a
sample reason and raw payload, and the stream's checkpoint where \`lakelogic run\` keeps it.
Reads only. Delta, parquet and DuckLake on a PostgreSQL catalog are read beside a running
stream; a DuckDB lake file (and a DuckLake catalog file) is locked by the process writing it.

Options:
      --target-path DIR     the lake directory or URI (default: the contract's, else ./lake)
      --checkpoint PATH     the checkpoint's SQLite file, object-store URI or "target" (default:
                            where \`lakelogic run\` keeps it for this contract)
      --checkpoint-key KEY  default: stream::<dataset>
      --commits N           how many of the newest commits to list (default 10)
      --var NAME=VALUE      a value for the contract's {NAME} placeholders (repeatable)
      --env NAME            the environments.<NAME> of _system.yaml that binds placeholders (default dev)
${JSON_HELP} (samples in full)
  -h, --help

Exit codes: 0 shown, 1 the lake is locked by another process (the message says how to look
anyway), 2 usage or a contract that does not load.
`;

const FLAGS = {
  "target-path": { type: "string" },
  checkpoint: { type: "string" },
  "checkpoint-key": { type: "string" },
  commits: { type: "string" },
  var: { type: "string", multiple: true },
  env: { type: "string" },
  ...JSON_FLAG,
  help: { type: "boolean", short: "h" },
} as const;

export const showCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, FLAGS);
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    if (positionals.length !== 1) throw new UsageError("expected exactly one CONTRACT path");
    const path = positionals[0]!;
    if (!existsSync(path)) throw new UsageError(`contract not found: ${path}`);
    const commits = values.commits === undefined ? undefined : Number(values.commits);
    if (commits !== undefined && !(Number.isInteger(commits) && commits >= 0)) throw new UsageError(`--commits must be a whole number >= 0 (got "${values.commits}")`);
    const contract = await loadForCommand(path, contractLoadOptionsOf(values), io, "show");
    const settings = commandSettings(contract, streamOverridesOf(values));
    // A lake another process holds is LakeBusyError: retriable, so the dispatcher exits 1.
    const shown = await inspectStream(settings, commits === undefined ? {} : { commits });
    printResult(io, values.json, shown, () => showText(shown));
    return EXIT.ok;
  },
};

const n = (x: number) => x.toLocaleString("en");

/** At most `max` characters of `text` on one line, with the length left out said. */
export function truncated(text: string, max = 80): string {
  const flat = text.replace(/\s*\n\s*/g, " ");
  return flat.length <= max ? flat : `${flat.slice(0, max)}… (${n(flat.length)} chars)`;
}

function tableText(t: InspectedTable): string[] {
  if (!t.exists) return [`  ${t.role.padEnd(10)}  ${t.name}: not written yet (${t.location})`];
  const columns = t.columns.map((c) => `${c.name} ${c.type}`).join(", ");
  return [`  ${t.role.padEnd(10)}  ${t.name}: ${n(t.rows)} rows`, `              at ${t.location}`, `              columns ${columns}`];
}

function commitsText(commits: readonly InspectedCommit[]): string[] {
  if (commits.length === 0) return ["  none recorded"];
  const rows = commits.map((c) => [
    String(c.batchId),
    c.committedAt ?? "-",
    c.good === null ? "-" : n(c.good),
    c.quarantined === null ? "-" : n(c.quarantined),
    c.streamKey ?? "-",
    c.version === undefined ? "" : String(c.version),
  ]);
  const head = ["batch", "committed at", "good", "quarantined", "stream", commits.some((c) => c.version !== undefined) ? "version" : ""];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => `  ${r.map((v, i) => v.padEnd(widths[i]!)).join("  ")}`.trimEnd());
}

function groupText(g: QuarantineGroup): string[] {
  const payload = g.sample.raw ?? g.sample.record;
  const encoding = g.sample.rawEncoding === "base64" ? " (base64)" : "";
  return [
    `  ${g.ruleId}: ${n(g.rows)} row${g.rows === 1 ? "" : "s"}`,
    `    reason  ${g.sample.reason === null ? "- (not kept: quarantine.include_error_reason is false)" : truncated(g.sample.reason)}`,
    `    ${g.sample.raw !== null ? "raw    " : "record "} ${payload === null ? "-" : truncated(payload) + encoding}  (batch ${g.sample.batchId})`,
  ];
}

function checkpointText(c: CheckpointView): string[] {
  if (!c.found) return [`  none for ${c.key} in ${c.location}`];
  const lines = [
    `  key          ${c.key}`,
    `  store        ${c.location}`,
    `  batch        ${c.batchId}, committed ${c.committedAt}${c.lag ? ` (${ago(c.lag.sinceCommitMs)} ago)` : ""}`,
    `  cursor       ${truncated(toJson(c.cursor) ?? "null", 120)}`,
  ];
  if (c.totals) lines.push(`  totals       ${n(c.totals.sourceCount)} records: good ${n(c.totals.goodCount)}, quarantined ${n(c.totals.badCount)}, superseded ${n(c.totals.supersededCount)}`);
  if (c.lag?.lakeBatchesAhead) lines.push(`  behind lake  the lake holds ${n(c.lag.lakeBatchesAhead)} batch${c.lag.lakeBatchesAhead === 1 ? "" : "es"} past this checkpoint`);
  return lines;
}

function ago(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}

/** The inspection as a person reads it. */
export function showText(s: StreamInspection): string {
  const q = s.quarantine;
  const lines = [
    `${s.dataset}: ${s.format} lake at ${s.location}`,
    "",
    "tables",
    ...s.tables.flatMap(tableText),
    "",
    `last commits (newest first)`,
    ...commitsText(s.commits),
    "",
    `quarantine by rule (${n(q.rows)} row${q.rows === 1 ? "" : "s"}${q.groups.length > 1 ? "; a row that failed several rules counts under each" : ""})`,
    ...(q.groups.length === 0 ? ["  none"] : q.groups.flatMap(groupText)),
    "",
    "checkpoint",
    ...checkpointText(s.checkpoint),
  ];
  return lines.join("\n") + "\n";
}
