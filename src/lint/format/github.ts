import type { Finding, LintSeverity } from "../types.js";
import { repoRelativePath } from "./paths.js";
import { severitySummary } from "./text.js";

const LEVEL: Record<LintSeverity, string> = { critical: "error", warning: "warning", info: "notice" };

// Workflow-command escaping, as the Actions runner decodes it.
function escapeData(s: string): string {
  return s.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/**
 * GitHub Actions workflow commands: each finding becomes an annotation on its line in the
 * pull request. Paths are made relative to `root` (the checkout) so annotations attach.
 */
export function formatGithub(findings: readonly Finding[], root: string, filesScanned?: number): string {
  const lines = findings.map((f) => {
    const file = repoRelativePath(f.file, root) ?? f.file;
    const props = [`file=${escapeProperty(file)}`, `line=${f.line}`];
    if (f.column !== undefined) props.push(`col=${f.column}`);
    props.push(`title=${escapeProperty(f.id)}`);
    return `::${LEVEL[f.severity]} ${props.join(",")}::${escapeData(`${f.message}\n→ ${f.suggestion}`)}`;
  });
  const scope = filesScanned === undefined ? "" : ` in ${filesScanned} file${filesScanned === 1 ? "" : "s"}`;
  lines.push(`lakelogic lint: ${findings.length} finding${findings.length === 1 ? "" : "s"}${scope} (${severitySummary(findings)})`);
  return lines.join("\n") + "\n";
}
