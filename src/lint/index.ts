/** Contract lint: rules over the raw YAML, with positions, and CI-friendly output formats. */
export { collectContractFiles, compareFindings, lintFiles, lintPaths, lintText, type LintOptions, type LintReport } from "./lint.js";
export { RULES, findRule } from "./rules/index.js";
export {
  LINT_SEVERITIES,
  isLintSeverity,
  severityRank,
  type ContractRule,
  type DocumentRule,
  type Finding,
  type LintRule,
  type LintSeverity,
  type RuleHit,
} from "./types.js";
export {
  OUTPUT_FORMATS,
  formatFindings,
  isOutputFormat,
  toSarif,
  type FormatOptions,
  type OutputFormat,
  type SarifLog,
} from "./format/index.js";
export { renderLintDocs, renderRuleTable } from "./docs.js";
