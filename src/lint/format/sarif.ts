import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { RULES } from "../rules/index.js";
import type { Finding, LintRule, LintSeverity } from "../types.js";
import { repoRelativePath } from "./paths.js";
import { ruleHelpMarkdown } from "../rule-help.js";

/** The subset of SARIF 2.1.0 this formatter writes (kept local: no dependency for a few types). */
export interface SarifLog {
  $schema: string;
  version: "2.1.0";
  runs: SarifRun[];
}

export interface SarifRun {
  tool: { driver: SarifDriver };
  columnKind: "utf16CodeUnits";
  results: SarifResult[];
}

export interface SarifDriver {
  name: string;
  /** Omitted unless the package declares a homepage (it is optional in SARIF 2.1.0). */
  informationUri?: string;
  version: string;
  semanticVersion?: string;
  rules: SarifRule[];
}

export type SarifLevel = "error" | "warning" | "note";

export interface SarifRule {
  id: string;
  name: string;
  shortDescription: { text: string };
  fullDescription: { text: string };
  help: { text: string; markdown: string };
  defaultConfiguration: { level: SarifLevel };
  properties: { tags: string[]; precision: string; "problem.severity": string };
}

export interface SarifResult {
  ruleId: string;
  ruleIndex: number;
  level: SarifLevel;
  message: { text: string };
  locations: Array<{
    physicalLocation: {
      artifactLocation: { uri: string; uriBaseId?: string };
      region: { startLine: number; startColumn: number };
    };
  }>;
  partialFingerprints: Record<string, string>;
}

export const SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json";
/** Our own fingerprint: stable across line moves because it hashes the key path, not the line. */
export const FINGERPRINT_KEY = "lakelogicFinding/v1";

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

const LEVEL: Record<LintSeverity, SarifLevel> = { critical: "error", warning: "warning", info: "note" };
// GitHub code scanning sorts non-security alerts by this property.
const PROBLEM_SEVERITY: Record<LintSeverity, string> = { critical: "error", warning: "warning", info: "recommendation" };

export interface SarifOptions {
  /** Directory that `%SRCROOT%` stands for (the repository checkout); default: the cwd. */
  root?: string;
  toolVersion: string;
  informationUri?: string;
  rules?: readonly LintRule[];
}


function sarifRule(rule: LintRule): SarifRule {
  return {
    id: rule.id,
    name: rule.name,
    shortDescription: { text: rule.title },
    fullDescription: { text: rule.description },
    help: { text: `${rule.description}\n\nFix: ${rule.fix}`, markdown: ruleHelpMarkdown(rule) },
    defaultConfiguration: { level: LEVEL[rule.severity] },
    properties: { tags: [...rule.tags], precision: "very-high", "problem.severity": PROBLEM_SEVERITY[rule.severity] },
  };
}

function artifactLocation(file: string, root: string): { uri: string; uriBaseId?: string } {
  const rel = repoRelativePath(file, root);
  if (rel === undefined) return { uri: pathToFileURL(resolve(root, file)).href };
  return { uri: rel.split("/").map(encodeURIComponent).join("/"), uriBaseId: "%SRCROOT%" };
}

export function toSarif(findings: readonly Finding[], options: SarifOptions): SarifLog {
  const root = options.root ?? process.cwd();
  const rules = options.rules ?? RULES;
  const index = new Map(rules.map((r, i) => [r.id, i] as const));
  const results = findings.map((f): SarifResult => {
    const ruleIndex = index.get(f.id);
    if (ruleIndex === undefined) throw new Error(`finding ${f.id} has no rule in the SARIF rule list`);
    const location = artifactLocation(f.file, root);
    const anchor = f.path ?? `line:${f.line}`;
    const fingerprint = createHash("sha256").update(`${f.id}\0${location.uri}\0${anchor}`).digest("hex").slice(0, 32);
    return {
      ruleId: f.id,
      ruleIndex,
      level: LEVEL[f.severity],
      message: { text: `${f.message} Suggestion: ${f.suggestion}` },
      locations: [
        {
          physicalLocation: {
            artifactLocation: location,
            region: { startLine: Math.max(1, f.line), startColumn: Math.max(1, f.column ?? 1) },
          },
        },
      ],
      partialFingerprints: { [FINGERPRINT_KEY]: fingerprint },
    };
  });
  return {
    $schema: SARIF_SCHEMA_URI,
    version: "2.1.0",
    runs: [
      {
        tool: {
          driver: {
            name: "lakelogic",
            ...(options.informationUri === undefined ? {} : { informationUri: options.informationUri }),
            version: options.toolVersion,
            ...(SEMVER.test(options.toolVersion) ? { semanticVersion: options.toolVersion } : {}),
            rules: rules.map(sarifRule),
          },
        },
        columnKind: "utf16CodeUnits",
        results,
      },
    ],
  };
}

export function formatSarif(findings: readonly Finding[], options: SarifOptions): string {
  return JSON.stringify(toSarif(findings, options), null, 2) + "\n";
}
