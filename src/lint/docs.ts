/**
 * Renders docs/lint.md from the rule list, so the page cannot drift from the rules
 * (test/lint/docs.test.ts compares them). Regenerate: `npx tsx src/lint/docs.ts`.
 */
import { realpathSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { formatPath } from "../contract/yaml.js";
import { NO_REPLAY_SOURCES, RESUMABLE_TRIGGERS, STREAMING_SOURCE_TYPES, TRIGGER_PATHS } from "./facts.js";
import { RULES } from "./rules/index.js";
import { ruleHelpMarkdown } from "./rule-help.js";
import type { LintRule } from "./types.js";

function code(values: Iterable<string>): string {
  return [...values].map((v) => `\`${v}\``).join(", ");
}

function ruleSection(rule: LintRule): string {
  return [
    `### ${rule.id}: ${rule.title}`,
    "",
    `Severity: **${rule.severity}**. Tags: ${code(rule.tags)}.`,
    "",
    ruleHelpMarkdown(rule),
    "",
  ].join("\n");
}

export function renderLintDocs(rules: readonly LintRule[] = RULES): string {
  const transports = [...new Set(STREAMING_SOURCE_TYPES.values())].filter((t) => t !== "stream");
  const aliases = [...STREAMING_SOURCE_TYPES.keys()].filter((k) => !transports.includes(k));
  return [
    "# Contract lint",
    "",
    "<!-- Generated from src/lint/rules by `npx tsx src/lint/docs.ts`; edit the rules, not this file. -->",
    "",
    "`lakelogic lint` checks contracts before they ship: deterministic rules over the YAML as written,",
    "so it also works on contracts that fail to load. Each contract is then loaded as `run` loads it",
    "(with the `_system.yaml` / `_domain.yaml` above it, `--var` and `--env`, and its `sql` rules parsed",
    "and bound by DuckDB): every problem the loader refuses (a key one typo away from a known one among",
    "them) is a LOAD-001 finding, every warning it gives (an unknown key far from every known one) a",
    "LOAD-002 finding. Every finding points at the line of the key that causes it.",
    "",
    "```",
    "lakelogic lint PATHS... [--format text|json|github|sarif] [--fail-on none|info|warning|critical] [--output FILE]",
    "```",
    "",
    "- `PATHS`: contract files or directories (walked for `*.yaml` / `*.yml`, skipping `node_modules` and dot-folders).",
    "  Paths that hold no such file are a usage error.",
    "- `--format`: `text` (default, for people), `json` (an array of findings), `github` (workflow",
    "  commands that annotate the pull request), `sarif` (SARIF 2.1.0 for GitHub code scanning).",
    "- `--fail-on`: exit 1 when a finding at or above this severity exists. Default `critical`; `none`",
    "  reports without failing.",
    "- `--var NAME=VALUE`, `--env NAME`: the placeholder values the run would get.",
    "- `--output`: write the report to a file instead of standard output.",
    "- `--list-rules`: print the rules and exit.",
    "",
    "Exit codes: `0` no finding at or above `--fail-on`; `1` at least one; `2` usage error (unknown",
    "flag or format, no paths, a path that does not exist, paths with no contract file); `3` a bug.",
    "",
    "A finding has `id`, `severity` (`critical` | `warning` | `info`), `file`, `line`, `column`, `path`",
    "(the key, e.g. `materialization.strategy`; absent for syntax errors), `message` and `suggestion`.",
    "",
    "In GitHub Actions:",
    "",
    "```yaml",
    "- run: npx lakelogic lint contracts --format sarif --output lint.sarif --fail-on warning",
    "- uses: github/codeql-action/upload-sarif@v3",
    "  if: always()",
    "  with: { sarif_file: lint.sarif }",
    "```",
    "",
    "## What counts as streaming",
    "",
    "Several rules apply to streaming or resumable contracts. A contract is one when any of these hold:",
    "",
    `- \`source.type\` (or \`source.kind\` / \`source.options.kind\` under the generic \`type: stream\`) is one of ${code(transports)}`,
    `  (case and \`_\`, \`-\`, spaces are ignored; also accepted: ${code(aliases)}).`,
    "- `source.mode` or `source.load_mode` is `streaming`, or `source.streaming: true`.",
    `- the trigger is one of ${code(RESUMABLE_TRIGGERS)}. The trigger is read from the first of`,
    `  ${code(TRIGGER_PATHS.map((p) => formatPath(p)))} that is set; a mapping such as \`trigger: { mode: continuous }\` counts by its \`mode\`.`,
    "",
    `Sources without a replayable cursor: ${code(NO_REPLAY_SOURCES)}. A missing \`materialization.strategy\``,
    "counts as `append`. Quarantine is on by default, so only an explicit `quarantine.enabled: false`",
    "(or `quarantine:` set to null or false) turns it off.",
    "",
    "## Rules",
    "",
    renderRuleTable(rules),
    "",
    ...rules.map(ruleSection),
  ].join("\n");
}

/**
 * The rule table: ID (linked to its section), severity, title. docs/lint.md and the README carry
 * it (the README's links prefixed with `docs/lint.md`); test/lint/docs.test.ts holds both to it.
 */
export function renderRuleTable(rules: readonly LintRule[] = RULES, page = ""): string {
  const rows = rules.map((r) => `| [${r.id}](${page}#${r.id.toLowerCase()}-${slug(r.title)}) | ${r.severity} | ${r.title} |`);
  return ["| ID | Severity | Title |", "| --- | --- | --- |", ...rows].join("\n");
}

/** GitHub's heading anchor for the title part of `### ID: title`. */
function slug(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .replace(/ /g, "-");
}

// Run as a script: write the page beside the sources it documents.
function isEntryPoint(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  const target = new URL("../../docs/lint.md", import.meta.url);
  writeFileSync(target, renderLintDocs());
  process.stdout.write(`wrote ${fileURLToPath(target)}\n`);
}
