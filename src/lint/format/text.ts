import { LINT_SEVERITIES, type Finding, type LintSeverity } from "../types.js";

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function countBySeverity(findings: readonly Finding[]): Record<LintSeverity, number> {
  const counts: Record<LintSeverity, number> = { critical: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity] += 1;
  return counts;
}

/** `1 critical, 2 warning, 0 info`, most severe first. */
export function severitySummary(findings: readonly Finding[]): string {
  const counts = countBySeverity(findings);
  return [...LINT_SEVERITIES]
    .reverse()
    .map((s) => `${counts[s]} ${s}`)
    .join(", ");
}

/** For people: one `file:line:col severity ID message` line per finding, the fix under it, a summary. */
export function formatText(findings: readonly Finding[], filesScanned?: number): string {
  const lines: string[] = [];
  for (const f of findings) {
    const where = f.column === undefined ? `${f.file}:${f.line}` : `${f.file}:${f.line}:${f.column}`;
    lines.push(`${where} ${f.severity} ${f.id} ${f.message}`);
    lines.push(`  → ${f.suggestion}`);
  }
  const scope = filesScanned === undefined ? "" : ` in ${plural(filesScanned, "file")}`;
  if (findings.length === 0) lines.push(`No problems found${scope}.`);
  else lines.push("", `${plural(findings.length, "problem")}${scope} (${severitySummary(findings)}).`);
  return lines.join("\n") + "\n";
}
