/**
 * What row and dataset rules share: their kinds, the labels written beside or inside a rule
 * (name, severity, category, description), the fields they name, and their common base.
 */
import { didYouMean } from "../suggest.js";
import type { RowRule, Severity, SourceLoc } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asNonEmptyStr, asOptStr, asStr, missing, unknownChoice, type Obj } from "./read.js";

export const RULE_LABEL_KEYS = ["name", "severity", "category", "description", "phase"];
export const ROW_KINDS = ["not_null", "accepted_values", "regex_match", "range", "referential_integrity", "lifecycle_window"];
export const DATASET_KINDS = ["unique", "null_ratio", "row_count_between"];
const SEVERITIES: readonly Severity[] = ["error", "warning", "info"];

export type RuleOrigin = NonNullable<RowRule["origin"]>;

export interface Labels {
  name?: string;
  severity?: Severity;
  category?: string;
  description?: string;
}

export interface RuleDraft<R> {
  rule: R;
  path: YamlPath;
  /** For rules written as `sql:`, where the expression is (problems point there). */
  sqlPath?: YamlPath;
  /** A range rule that became `sql` (date bounds) still covers its field's own min/max. */
  rangeField?: string;
}

export interface RuleBase {
  id: string;
  severity: Severity;
  origin: RuleOrigin;
  description?: string;
  category?: string;
  loc?: SourceLoc;
}

export function readSeverity(cx: NormaliseContext, v: unknown, path: YamlPath): Severity {
  if (v === undefined || v === null) return "error";
  const s = asOptStr(cx, v, path, "error, warning or info");
  if (s === undefined) return "error";
  const t = s.trim().toLowerCase();
  if ((SEVERITIES as readonly string[]).includes(t)) return t as Severity;
  const synonyms: Record<string, Severity> = { warn: "warning", critical: "error", fatal: "error", err: "error", information: "info" };
  const guess = synonyms[t] ?? didYouMean(t, SEVERITIES);
  cx.error(path, unknownChoice("severity", s, guess), "error, warning or info");
  return "error";
}

export function readLabels(cx: NormaliseContext, m: Obj, path: YamlPath, inherited?: Labels): Labels {
  const out: Labels = {};
  const name = asOptStr(cx, m["name"], [...path, "name"], "a rule name");
  if (name !== undefined) out.name = name;
  if (m["severity"] !== undefined) out.severity = readSeverity(cx, m["severity"], [...path, "severity"]);
  else if (inherited?.severity !== undefined) out.severity = inherited.severity;
  const category = asStr(cx, m["category"], [...path, "category"]);
  if (category !== undefined) out.category = category.trim().toLowerCase();
  const description = asStr(cx, m["description"], [...path, "description"]);
  if (description !== undefined) out.description = description;
  return out;
}

export function ruleBase(cx: NormaliseContext, id: string, labels: Labels, path: YamlPath, origin: RuleOrigin): RuleBase {
  const b: RuleBase = { id, severity: labels.severity ?? "error", origin };
  if (labels.description !== undefined) b.description = labels.description;
  if (labels.category !== undefined) b.category = labels.category;
  const loc = cx.loc(path);
  if (loc) b.loc = loc;
  return b;
}

/** Point a sql rule's location at its `sql` key rather than the list item. */
export function sqlLoc(cx: NormaliseContext, path: YamlPath): { loc?: SourceLoc } {
  const loc = cx.loc([...path, "sql"]);
  return loc ? { loc } : {};
}

/** The field a rule config names under `field` (or `column`), else `defaultField`. */
export function ruleField(cx: NormaliseContext, cfg: Obj, cfgPath: YamlPath, defaultField: string | undefined): string | undefined {
  const key = cfg["field"] !== undefined ? "field" : cfg["column"] !== undefined ? "column" : undefined;
  if (key === undefined) {
    if (defaultField !== undefined) return defaultField;
    missing(cx, cfg, cfgPath, "field", "the name of the field the rule checks");
    return undefined;
  }
  const name = asNonEmptyStr(cx, cfg[key], [...cfgPath, key], "a field name");
  return name === undefined ? undefined : cx.fieldRef(name, [...cfgPath, key]);
}

/** A rule item names no kind this list takes: point at the likeliest misspelling. */
export function unknownKind(cx: NormaliseContext, m: Obj, path: YamlPath, kinds: readonly string[], expected: string): void {
  const candidates = Object.keys(m).filter((k) => !RULE_LABEL_KEYS.includes(k));
  for (const k of candidates) {
    const guess = didYouMean(k, kinds);
    if (guess !== undefined) {
      cx.error([...path, k], `unknown rule kind '${k}' (did you mean ${guess}?)`, expected);
      return;
    }
  }
  if (candidates.length > 0) cx.error([...path, candidates[0]!], `unknown rule kind '${candidates[0]}'`, expected);
  else cx.error(path, "the rule says nothing to check", expected);
}

/** The kind keys of one rule item (`sql` included); one is expected, more is an error at the second. */
export function ruleKinds(cx: NormaliseContext, m: Obj, path: YamlPath, kinds: readonly string[]): string[] | undefined {
  const found = Object.keys(m).filter((k) => kinds.includes(k) || k === "sql");
  if (found.length > 1) {
    cx.error([...path, found[1]!], `one rule per list item, found ${found.join(" and ")}`, "a separate list item for each rule");
    return undefined;
  }
  return found;
}
