/** `quality.dataset_rules`: unique, null_ratio and row_count_between become `DatasetRule`s. */
import type { DatasetRule } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asList, asMap, asNum, asStrList, checkKeys, isObj, missing, type Obj } from "./read.js";
import {
  DATASET_KINDS,
  RULE_LABEL_KEYS,
  ROW_KINDS,
  readLabels,
  ruleBase,
  ruleField,
  ruleKinds,
  unknownKind,
  type Labels,
  type RuleDraft,
} from "./rule-parts.js";

const DATASET_SQL_KEYS = ["must_be_between", "must_be_less_than", "must_be_greater_than"];

export function readDatasetRules(cx: NormaliseContext, quality: Obj): Array<RuleDraft<DatasetRule>> {
  const items = asList(cx, quality["dataset_rules"], ["quality", "dataset_rules"], "a list of rules") ?? [];
  const out: Array<RuleDraft<DatasetRule>> = [];
  items.forEach((item, i) => {
    const path: YamlPath = ["quality", "dataset_rules", i];
    const r = readDatasetRule(cx, item, path);
    if (r) out.push({ rule: r, path });
  });
  return out;
}

function readDatasetRule(cx: NormaliseContext, item: unknown, path: YamlPath): DatasetRule | undefined {
  const expected = "a dataset rule: unique, null_ratio or row_count_between";
  const m = asMap(cx, item, path, expected);
  if (!m) {
    if (item === null || item === undefined) cx.error(path, "empty rule entry", expected);
    return undefined;
  }
  const kinds = ruleKinds(cx, m, path, DATASET_KINDS);
  if (!kinds) return undefined;
  const kind = kinds[0];
  if (kind === undefined) {
    const rowKind = Object.keys(m).find((k) => ROW_KINDS.includes(k));
    if (rowKind !== undefined) {
      cx.error([...path, rowKind], `${rowKind} is a row rule`, "it under quality.row_rules");
      return undefined;
    }
    unknownKind(cx, m, path, DATASET_KINDS, expected);
    return undefined;
  }
  if (kind === "sql") {
    checkKeys(cx, m, path, [...RULE_LABEL_KEYS, "sql", ...DATASET_SQL_KEYS], "a rule");
    cx.warn(path, "SQL dataset rules (aggregate queries) are not evaluated by this runtime; the rule is not enforced", "unsupported");
    return undefined;
  }
  checkKeys(cx, m, path, [...RULE_LABEL_KEYS, kind], "a rule");
  const beside = readLabels(cx, m, path);
  const value = m[kind];
  const vPath: YamlPath = [...path, kind];
  if (kind === "unique") return uniqueRule(cx, value, vPath, path, beside);

  const cfg = asMap(cx, value, vPath, `a mapping, e.g. ${kind}: {…}`);
  if (!cfg) {
    if (value === null || value === undefined) cx.error(vPath, "is empty", `a mapping, e.g. ${kind}: {…}`);
    return undefined;
  }
  const labels = { ...beside, ...readLabels(cx, cfg, vPath, beside) };
  if (kind === "null_ratio") return nullRatioRule(cx, cfg, vPath, path, labels);
  return rowCountRule(cx, cfg, vPath, path, labels);
}

/** unique: "f" | [f, g] | {field: f} | {fields: [f, g]}; labels inside or beside. */
function uniqueRule(cx: NormaliseContext, value: unknown, vPath: YamlPath, path: YamlPath, beside: Labels): DatasetRule | undefined {
  let labels = beside;
  let names: string[] | undefined;
  let namesPath: YamlPath = vPath;
  let listed = Array.isArray(value);
  if (isObj(value)) {
    checkKeys(cx, value, vPath, [...RULE_LABEL_KEYS, "field", "fields", "columns", "column"], "unique");
    labels = { ...beside, ...readLabels(cx, value, vPath, beside) };
    const key = ["fields", "columns", "field", "column"].find((k) => value[k] !== undefined);
    if (key === undefined) {
      missing(cx, value, vPath, "field", "field: name, or fields: [names]");
      return undefined;
    }
    namesPath = [...vPath, key];
    listed = Array.isArray(value[key]);
    names = asStrList(cx, value[key], namesPath);
  } else if (value === null || value === undefined) {
    cx.error(vPath, "is empty", "a field name or a list of field names");
    return undefined;
  } else {
    names = asStrList(cx, value, vPath);
  }
  if (!names) return undefined;
  if (names.length === 0) {
    cx.error(namesPath, "is empty", "at least one field name");
    return undefined;
  }
  const fields = names.map((n, i) => cx.fieldRef(n, listed ? [...namesPath, i] : namesPath));
  return { ...ruleBase(cx, labels.name ?? `unique:${fields.join(",")}`, labels, path, "declared"), kind: "unique", fields };
}

function nullRatioRule(cx: NormaliseContext, cfg: Obj, vPath: YamlPath, path: YamlPath, labels: Labels): DatasetRule | undefined {
  checkKeys(cx, cfg, vPath, [...RULE_LABEL_KEYS, "field", "column", "max", "threshold"], "null_ratio");
  const field = ruleField(cx, cfg, vPath, undefined);
  const key = cfg["max"] !== undefined ? "max" : cfg["threshold"] !== undefined ? "threshold" : undefined;
  if (key === undefined) {
    missing(cx, cfg, vPath, "max", "the largest accepted share of nulls, from 0 to 1");
    return undefined;
  }
  let max = asNum(cx, cfg[key], [...vPath, key], "a ratio from 0 to 1");
  if (field === undefined || max === undefined) return undefined;
  if (max > 1 && max <= 100) {
    // The original reads values above 1 as percentages.
    cx.warn([...vPath, key], `${max} is read as a percentage (${max / 100}); write ${max / 100} to silence this`, "suspicious");
    max = max / 100;
  } else if (max < 0 || max > 100) {
    cx.error([...vPath, key], `found ${max}`, "a ratio from 0 to 1");
    return undefined;
  }
  return { ...ruleBase(cx, labels.name ?? `null_ratio:${field}`, labels, path, "declared"), kind: "null_ratio", field, max };
}

function rowCountRule(cx: NormaliseContext, cfg: Obj, vPath: YamlPath, path: YamlPath, labels: Labels): DatasetRule | undefined {
  checkKeys(cx, cfg, vPath, [...RULE_LABEL_KEYS, "min", "max"], "row_count_between");
  const min = asNum(cx, cfg["min"], [...vPath, "min"], "a whole number of rows");
  const max = asNum(cx, cfg["max"], [...vPath, "max"], "a whole number of rows");
  if (min === undefined && max === undefined) {
    if (cfg["min"] === undefined && cfg["max"] === undefined) cx.error(vPath, "needs min, max or both", "min and/or max row counts");
    return undefined;
  }
  if (min !== undefined && max !== undefined && min > max) {
    cx.error(vPath, `min ${min} is greater than max ${max}`, "min <= max");
    return undefined;
  }
  const r: DatasetRule = { ...ruleBase(cx, labels.name ?? "row_count_between", labels, path, "declared"), kind: "row_count_between" };
  if (min !== undefined) r.min = min;
  if (max !== undefined) r.max = max;
  return r;
}
