import type { Finding } from "../types.js";
import { formatGithub } from "./github.js";
import { formatJson } from "./json.js";
import { formatSarif } from "./sarif.js";
import { formatText } from "./text.js";

export const OUTPUT_FORMATS = ["text", "json", "github", "sarif"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function isOutputFormat(value: string): value is OutputFormat {
  return (OUTPUT_FORMATS as readonly string[]).includes(value);
}

export interface FormatOptions {
  /** Repository root for relative paths (github, sarif); default: the cwd. */
  root?: string;
  /** How many files were linted, for summary lines. */
  filesScanned?: number;
  /** Tool version for SARIF. */
  toolVersion: string;
  informationUri?: string;
}

export function formatFindings(findings: readonly Finding[], format: OutputFormat, options: FormatOptions): string {
  switch (format) {
    case "text":
      return formatText(findings, options.filesScanned);
    case "json":
      return formatJson(findings);
    case "github":
      return formatGithub(findings, options.root ?? process.cwd(), options.filesScanned);
    case "sarif":
      return formatSarif(findings, {
        toolVersion: options.toolVersion,
        ...(options.root === undefined ? {} : { root: options.root }),
        ...(options.informationUri === undefined ? {} : { informationUri: options.informationUri }),
      });
  }
}

export { formatGithub } from "./github.js";
export { formatJson, orderedFinding } from "./json.js";
export { formatSarif, toSarif, type SarifLog, type SarifOptions } from "./sarif.js";
export { countBySeverity, formatText, severitySummary } from "./text.js";
