import { mkdir, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { formatFindings, isOutputFormat, OUTPUT_FORMATS, type OutputFormat } from "../../lint/format/index.js";
import { lintPaths } from "../../lint/lint.js";
import { RULES } from "../../lint/rules/index.js";
import { LINT_SEVERITIES, severityRank, type Finding, type LintSeverity } from "../../lint/types.js";
import { oneOf, parseCommandArgs } from "../args.js";
import { packageInfo } from "../../util/package-info.js";
import { contractLoadOptionsOf } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand, type CliIO } from "../types.js";

type FailOn = LintSeverity | "none";
const FAIL_ON: readonly FailOn[] = ["none", ...LINT_SEVERITIES];

const usage = `Usage: lakelogic lint PATHS... [options]

Check data contracts for unsafe settings: streaming sources written with append, merge
without a primary key, quarantine turned off on a stream, files that do not parse. Each
contract is also loaded as the run loads it: what the loader refuses is critical (LOAD-001),
what it warns about (a misspelt key it ignores) is a warning (LOAD-002).
Directories are searched for *.yaml and *.yml files; finding none is a usage error.

Options:
  -f, --format FORMAT   ${OUTPUT_FORMATS.join(" | ")} (default: text)
      --fail-on LEVEL   exit 1 when a finding at or above LEVEL exists:
                        ${FAIL_ON.join(" | ")} (default: critical)
  -o, --output FILE     write the report to FILE instead of standard output
      --var NAME=VALUE  a value for {NAME} placeholders, as the run would get it (repeatable)
      --env NAME        the environments.<NAME> of _system.yaml that binds placeholders (default dev)
      --list-rules      print the rules (text or json) and exit
  -h, --help            show this help

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 usage error
(including paths that hold no *.yaml or *.yml file).

Examples:
  lakelogic lint contracts --fail-on warning
  lakelogic lint contracts --format sarif --output lint.sarif
`;

/** True when a finding reaches the --fail-on threshold. */
export function shouldFail(findings: readonly Finding[], failOn: FailOn): boolean {
  if (failOn === "none") return false;
  const threshold = severityRank(failOn);
  return findings.some((f) => severityRank(f.severity) >= threshold);
}

function listRules(format: OutputFormat): string {
  if (format === "json") {
    const rules = RULES.map((r) => ({
      id: r.id,
      severity: r.severity,
      name: r.name,
      title: r.title,
      description: r.description,
      fix: r.fix,
      tags: [...r.tags],
    }));
    return JSON.stringify(rules, null, 2) + "\n";
  }
  if (format !== "text") throw new UsageError("--list-rules prints text or json");
  const width = Math.max(...RULES.map((r) => r.id.length));
  return RULES.map((r) => `${r.id.padEnd(width)}  ${r.severity.padEnd(8)}  ${r.title}`).join("\n") + "\n";
}

async function emit(text: string, output: string | undefined, io: CliIO): Promise<void> {
  if (output === undefined) {
    io.stdout(text);
    return;
  }
  try {
    await mkdir(dirname(output), { recursive: true });
    await writeFile(output, text);
  } catch (err) {
    throw new UsageError(`cannot write --output ${output}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export const lintCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, {
      format: { type: "string", short: "f" },
      "fail-on": { type: "string" },
      output: { type: "string", short: "o" },
      "list-rules": { type: "boolean" },
      var: { type: "string", multiple: true },
      env: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    const formatValue = values.format ?? "text";
    if (!isOutputFormat(formatValue)) {
      throw new UsageError(`--format must be one of ${OUTPUT_FORMATS.join(", ")} (got "${formatValue}")`);
    }
    // A contract the run refuses must fail CI unless asked otherwise.
    const failOn = oneOf("--fail-on", values["fail-on"], FAIL_ON, "critical");
    const output = values.output;
    if (output !== undefined && output.trim() === "") throw new UsageError("--output needs a file name");

    if (values["list-rules"]) {
      await emit(listRules(formatValue), output, io);
      return EXIT.ok;
    }
    if (positionals.length === 0) throw new UsageError("no paths given: name contract files or directories to lint");
    for (const p of positionals) {
      if (!(await stat(p).catch(() => undefined))) throw new UsageError(`path not found: ${p}`);
    }

    const report = await lintPaths(positionals, contractLoadOptionsOf(values));
    if (report.files.length === 0) {
      // A typo'd path or an emptied folder in CI must not pass as "no problems".
      throw new UsageError(`no contract files (*.yaml or *.yml) found in ${positionals.join(", ")}`);
    }
    const info = packageInfo();
    const text = formatFindings(report.findings, formatValue, {
      filesScanned: report.files.length,
      toolVersion: info.version,
      ...(info.homepage === undefined ? {} : { informationUri: info.homepage }),
    });
    await emit(text, output, io);
    if (output !== undefined) {
      io.stderr(`lakelogic lint: wrote ${formatValue} report (${report.findings.length} findings, ${report.files.length} files) to ${output}\n`);
    }
    return shouldFail(report.findings, failOn) ? EXIT.failed : EXIT.ok;
  },
};
