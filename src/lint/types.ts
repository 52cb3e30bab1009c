import type { YamlDoc, YamlPath, YamlPos } from "../contract/yaml.js";
import type { RawContract } from "./raw.js";

/** How bad a finding is. Ordered: info < warning < critical (see `severityRank`). */
export type LintSeverity = "critical" | "warning" | "info";

export const LINT_SEVERITIES: readonly LintSeverity[] = ["info", "warning", "critical"];

export function severityRank(severity: LintSeverity): number {
  return LINT_SEVERITIES.indexOf(severity);
}

export function isLintSeverity(value: string): value is LintSeverity {
  return (LINT_SEVERITIES as readonly string[]).includes(value);
}

/** One problem in one contract file, pointing at the line of the offending key. */
export interface Finding {
  id: string;
  severity: LintSeverity;
  /** The file as it was given or found (not rewritten to absolute). */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units. */
  column?: number;
  /** Key path of the offending key, e.g. `materialization.strategy` (absent for parse errors). */
  path?: string;
  message: string;
  suggestion: string;
}

/** What a rule's check reports; `lintText` turns it into a `Finding` with a position. */
export interface RuleHit {
  message: string;
  suggestion: string;
  /** Key to point at; resolved with `YamlDoc.locate` (nearest existing ancestor when missing). */
  path?: YamlPath;
  /** Explicit position, for problems that have no key (syntax errors). Wins over `path`. */
  pos?: YamlPos;
}

interface RuleMeta {
  /** Stable id, e.g. `STREAM-001`; never reused for a different check. */
  readonly id: string;
  readonly severity: LintSeverity;
  /** PascalCase identifier (SARIF `rule.name`). */
  readonly name: string;
  /** One line: what is wrong. */
  readonly title: string;
  /** What the rule checks and why it matters (plain text, may span sentences). */
  readonly description: string;
  /** How to fix it in general (the finding's suggestion is more specific). */
  readonly fix: string;
  readonly tags: readonly string[];
  /**
   * A contract that triggers the rule and a corrected one. Tests run both (bad raises exactly
   * this rule, good raises nothing) and the docs show them, so they cannot go stale.
   */
  readonly examples: { readonly bad: string; readonly good: string };
}

/** Sees every file, including ones that do not parse. */
export interface DocumentRule extends RuleMeta {
  readonly scope: "document";
  check(doc: YamlDoc): RuleHit[];
}

/** Sees files whose top level parsed to a mapping; runs only when no document rule fired. */
export interface ContractRule extends RuleMeta {
  readonly scope: "contract";
  check(contract: RawContract): RuleHit[];
}

export type LintRule = DocumentRule | ContractRule;
