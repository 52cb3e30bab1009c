import type { LintRule } from "./types.js";

/** A rule's explanation, fix and examples in Markdown: the SARIF help text and the docs page share it. */
export function ruleHelpMarkdown(rule: LintRule): string {
  return [
    rule.description,
    "",
    `**Fix:** ${rule.fix}`,
    "",
    "Triggers it:",
    "",
    "```yaml",
    rule.examples.bad.trimEnd(),
    "```",
    "",
    "Corrected:",
    "",
    "```yaml",
    rule.examples.good.trimEnd(),
    "```",
  ].join("\n");
}
