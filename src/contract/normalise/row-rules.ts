/**
 * `quality.row_rules` and a field's own `rules`: not_null, accepted_values, regex_match, range and
 * `sql`, each in every shorthand the original accepts, become `RowRule`s.
 */
import { quoteIdent, quoteString } from "../../util/sql-text.js";
import type { RowRule } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asBool, asList, asMap, asNonEmptyStr, asScalarList, asStr, checkKeys, describe, isObj, missing, type Obj } from "./read.js";
import { regexProblem } from "./regex.js";
import {
  DATASET_KINDS,
  RULE_LABEL_KEYS,
  ROW_KINDS,
  readLabels,
  ruleBase,
  ruleField,
  ruleKinds,
  sqlLoc,
  unknownKind,
  type Labels,
  type RuleDraft,
  type RuleOrigin,
} from "./rule-parts.js";

/** Where a row rule was written: its index in its list, and the field whose `rules` hold it, if any. */
export interface RowRuleSite {
  index: number;
  origin: "declared" | "field";
  field?: string;
}

/** Keys the config mapping of each configurable kind takes, besides the labels. */
const CONFIG_KEYS: Record<string, string[]> = {
  accepted_values: ["field", "column", "values"],
  regex_match: ["field", "column", "pattern"],
  range: ["field", "column", "min", "max", "inclusive"],
};

export function readRowRules(cx: NormaliseContext, quality: Obj): Array<RuleDraft<RowRule>> {
  const items = asList(cx, quality["row_rules"], ["quality", "row_rules"], "a list of rules") ?? [];
  const out: Array<RuleDraft<RowRule>> = [];
  items.forEach((item, i) => {
    out.push(...readRowRule(cx, item, ["quality", "row_rules", i], { index: i, origin: "declared" }));
  });
  return out;
}

export function readRowRule(cx: NormaliseContext, item: unknown, path: YamlPath, site: RowRuleSite): Array<RuleDraft<RowRule>> {
  const m = asMap(cx, item, path, "a rule mapping such as {not_null: field} or {name, sql}");
  if (!m) {
    if (item === null || item === undefined) cx.error(path, "empty rule entry", "a rule mapping such as {not_null: field} or {name, sql}");
    return [];
  }
  const kinds = ruleKinds(cx, m, path, ROW_KINDS);
  if (!kinds) return [];
  const kind = kinds[0];
  if (kind === undefined) {
    const dsKind = Object.keys(m).find((k) => DATASET_KINDS.includes(k));
    if (dsKind !== undefined) {
      cx.error([...path, dsKind], `${dsKind} is a dataset rule`, "it under quality.dataset_rules");
      return [];
    }
    unknownKind(cx, m, path, [...ROW_KINDS, "sql"], "a row rule: not_null, accepted_values, regex_match, range, or name + sql");
    return [];
  }
  checkKeys(cx, m, path, [...RULE_LABEL_KEYS, kind], "a rule");
  const beside = readLabels(cx, m, path);

  if (kind === "sql") return sqlRule(cx, m, path, beside, site);
  if (kind === "referential_integrity" || kind === "lifecycle_window") {
    cx.warn(path, `${kind} rules check rows against reference data, which this runtime does not load; the rule is not enforced`, "unsupported");
    return [];
  }
  const value = m[kind];
  if (kind === "not_null") return notNullRules(cx, value, [...path, kind], path, beside, site);
  return configuredRule(cx, kind, value, path, beside, site);
}

function sqlRule(cx: NormaliseContext, m: Obj, path: YamlPath, beside: Labels, site: RowRuleSite): Array<RuleDraft<RowRule>> {
  const sql = asNonEmptyStr(cx, m["sql"], [...path, "sql"], "a SQL boolean expression");
  if (sql === undefined) return [];
  const id = beside.name ?? (site.field !== undefined ? `sql:${site.field}:${site.index}` : `sql:${site.index}`);
  const rule: RowRule = { ...ruleBase(cx, id, beside, path, site.origin), kind: "sql", sql, ...sqlLoc(cx, path) };
  return [{ rule, path, sqlPath: [...path, "sql"] }];
}

/** A kind that takes a config mapping (accepted_values, regex_match, range), already resolved to its field. */
interface Configured {
  cfg: Obj;
  cfgPath: YamlPath;
  path: YamlPath;
  labels: Labels;
  field: string;
  origin: RuleOrigin;
}

/** The kinds that take a config mapping; labels inside it win over the ones beside. */
function configuredRule(
  cx: NormaliseContext,
  kind: string,
  value: unknown,
  path: YamlPath,
  beside: Labels,
  site: RowRuleSite,
): Array<RuleDraft<RowRule>> {
  const cfgPath: YamlPath = [...path, kind];
  let cfg: Obj | undefined;
  if (kind === "accepted_values" && Array.isArray(value) && site.field !== undefined) cfg = { values: value };
  else cfg = asMap(cx, value, cfgPath, `a mapping, e.g. ${kind}: {field: …}`);
  if (!cfg) {
    if (value === null || value === undefined) cx.error(cfgPath, "is empty", `a mapping, e.g. ${kind}: {field: …}`);
    return [];
  }
  if (kind === "accepted_values") cfg = fieldKeyedValues(cfg);
  checkKeys(cx, cfg, cfgPath, [...RULE_LABEL_KEYS, ...(CONFIG_KEYS[kind] ?? [])], kind);
  const labels = { ...beside, ...readLabels(cx, cfg, cfgPath, beside) };
  const field = ruleField(cx, cfg, cfgPath, site.field);
  if (field === undefined) return [];
  const c: Configured = { cfg, cfgPath, path, labels, field, origin: site.origin };
  if (kind === "accepted_values") return acceptedValuesRule(cx, c);
  if (kind === "regex_match") return regexMatchRule(cx, c);
  const inclusive = asBool(cx, cfg["inclusive"], [...cfgPath, "inclusive"]) ?? true;
  const id = labels.name ?? `range:${field}`;
  const rule = rangeRule(cx, { id, labels, path, origin: site.origin, field, min: cfg["min"], max: cfg["max"], inclusive, cfgPath });
  return rule ? [{ rule, path, rangeField: field }] : [];
}

/**
 * `accepted_values: {currency: [GBP, USD]}`: the field named by the key, its values the list (the
 * shorthand the Python package's annotated reference contracts write). Only when it is the one
 * key besides the labels, so `{field, values}` and a misspelt key keep their meaning and messages.
 */
function fieldKeyedValues(cfg: Obj): Obj {
  const keys = Object.keys(cfg).filter((k) => !RULE_LABEL_KEYS.includes(k));
  const only = keys.length === 1 ? keys[0]! : undefined;
  if (only === undefined || (CONFIG_KEYS["accepted_values"] ?? []).includes(only) || !Array.isArray(cfg[only])) return cfg;
  const { [only]: values, ...labels } = cfg;
  return { ...labels, field: only, values };
}

function acceptedValuesRule(cx: NormaliseContext, c: Configured): Array<RuleDraft<RowRule>> {
  if (c.cfg["values"] === undefined) {
    missing(cx, c.cfg, c.cfgPath, "values", "a non-empty list of accepted values");
    return [];
  }
  const values = asScalarList(cx, c.cfg["values"], [...c.cfgPath, "values"]);
  if (!values) return [];
  const id = c.labels.name ?? `accepted_values:${c.field}`;
  return [{ rule: { ...ruleBase(cx, id, c.labels, c.path, c.origin), kind: "accepted_values", field: c.field, values }, path: c.path }];
}

function regexMatchRule(cx: NormaliseContext, c: Configured): Array<RuleDraft<RowRule>> {
  if (c.cfg["pattern"] === undefined) {
    missing(cx, c.cfg, c.cfgPath, "pattern", "a regular expression");
    return [];
  }
  const pattern = asStr(cx, c.cfg["pattern"], [...c.cfgPath, "pattern"], "a regular expression");
  if (pattern === undefined) return [];
  const bad = regexProblem(pattern);
  if (bad !== undefined) {
    cx.error([...c.cfgPath, "pattern"], bad, "a regular expression in RE2 syntax (no look-around, no backreferences)");
    return [];
  }
  const id = c.labels.name ?? `regex_match:${c.field}`;
  return [{ rule: { ...ruleBase(cx, id, c.labels, c.path, c.origin), kind: "regex_match", field: c.field, pattern }, path: c.path }];
}

export interface RangeSpec {
  id: string;
  labels: Labels;
  path: YamlPath;
  origin: RuleOrigin;
  field: string;
  /** The bounds as written: numbers, date/time strings, or absent. */
  min: unknown;
  max: unknown;
  inclusive: boolean;
  /** Where problems with the bounds point. */
  cfgPath: YamlPath;
}

/** A range: numeric bounds make a `range` rule; date/time strings (as the original allows) a `sql` rule. */
export function rangeRule(cx: NormaliseContext, spec: RangeSpec): RowRule | undefined {
  const { id, labels, path, origin, field, inclusive, cfgPath } = spec;
  const bounds: Array<[string, unknown]> = [["min", spec.min], ["max", spec.max]];
  const given = bounds.filter(([, v]) => v !== undefined && v !== null);
  if (given.length === 0) {
    cx.error(cfgPath, "a range needs min, max or both", "min and/or max");
    return undefined;
  }
  for (const [k, v] of given) {
    if (typeof v !== "number" && typeof v !== "string") {
      cx.error([...cfgPath, k], `found ${describe(v)}`, "a number (or a date/time string)");
      return undefined;
    }
  }
  const numeric = given.every(([, v]) => typeof v === "number");
  const min = spec.min as number | string | undefined | null;
  const max = spec.max as number | string | undefined | null;
  if (numeric) {
    if (typeof min === "number" && typeof max === "number" && min > max) {
      cx.error(cfgPath, `min ${min} is greater than max ${max}`, "min <= max");
      return undefined;
    }
    const r: RowRule = { ...ruleBase(cx, id, labels, path, origin), kind: "range", field, inclusive };
    if (typeof min === "number") r.min = min;
    if (typeof max === "number") r.max = max;
    return r;
  }
  const q = quoteIdent(field);
  const parts: string[] = [];
  if (min !== undefined && min !== null) parts.push(`${q} ${inclusive ? ">=" : ">"} ${sqlLiteral(min)}`);
  if (max !== undefined && max !== null) parts.push(`${q} ${inclusive ? "<=" : "<"} ${sqlLiteral(max)}`);
  return { ...ruleBase(cx, id, labels, path, origin), kind: "sql", sql: parts.join(" AND ") };
}

function sqlLiteral(v: string | number): string {
  return typeof v === "string" ? quoteString(v) : String(v);
}

/**
 * not_null in all its forms: "f" | [f, {field: g, …}] | {field: f, …} | {fields: [f, g], …}; in a
 * field's own rules, nothing (the field itself).
 */
function notNullRules(
  cx: NormaliseContext,
  value: unknown,
  valuePath: YamlPath,
  path: YamlPath,
  beside: Labels,
  site: RowRuleSite,
): Array<RuleDraft<RowRule>> {
  const targets: Array<{ field: string; labels: Labels; path: YamlPath }> = [];
  const one = (item: unknown, p: YamlPath, inherited: Labels): void => {
    if (typeof item === "string") {
      if (item.trim() === "") cx.error(p, "is empty", "a field name");
      else targets.push({ field: cx.fieldRef(item.trim(), p), labels: inherited, path: p });
      return;
    }
    const cfg = asMap(cx, item, p, "a field name or {field: …}");
    if (!cfg) return;
    checkKeys(cx, cfg, p, [...RULE_LABEL_KEYS, "field", "column"], "not_null");
    const field = ruleField(cx, cfg, p, site.field);
    if (field !== undefined) targets.push({ field, labels: { ...inherited, ...readLabels(cx, cfg, p, inherited) }, path: p });
  };
  if ((value === null || value === true) && site.field !== undefined) {
    targets.push({ field: site.field, labels: beside, path: valuePath });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => one(item, [...valuePath, i], beside));
  } else if (isObj(value) && (value["fields"] !== undefined || value["columns"] !== undefined)) {
    const key = value["fields"] !== undefined ? "fields" : "columns";
    checkKeys(cx, value, valuePath, [...RULE_LABEL_KEYS, "fields", "columns"], "not_null");
    const shared = { ...beside, ...readLabels(cx, value, valuePath, beside) };
    const list = asList(cx, value[key], [...valuePath, key], "a list of field names") ?? [];
    if (list.length === 0) cx.error([...valuePath, key], "is empty", "a non-empty list of field names");
    list.forEach((item, i) => one(item, [...valuePath, key, i], shared));
  } else if (value === null || value === undefined) {
    cx.error(valuePath, "is empty", "a field name, a list of field names, or {field: …}");
  } else {
    one(value, valuePath, beside);
  }
  const many = targets.length > 1;
  return targets.map((t) => {
    // One name shared by several fields would collide; suffix the field to keep ids unique.
    const id = t.labels.name !== undefined ? (many ? `${t.labels.name}:${t.field}` : t.labels.name) : `not_null:${t.field}`;
    return { rule: { ...ruleBase(cx, id, t.labels, path, site.origin), kind: "not_null", field: t.field }, path: t.path };
  });
}
