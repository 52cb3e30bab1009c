/** `quality.dataset_rules`: unique, null_ratio and row_count_between become `DatasetRule`s. */
import { RuleExpressionError } from "../rule-expression-error.js";
import { parseDatasetQuery } from "../sql-dataset-query.js";
import type { DatasetBounds, DatasetQuery, DatasetRule } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asList, asMap, asNonEmptyStr, asNum, asStrList, checkKeys, isObj, missing, type Obj } from "./read.js";
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
} from "./rule-parts.js";

const DATASET_SQL_KEYS = ["must_be_between", "must_be_less_than", "must_be_greater_than"];

export function readDatasetRules(cx: NormaliseContext, quality: Obj, dataset?: string): Array<RuleDraft<DatasetRule>> {
  const items = asList(cx, quality["dataset_rules"], ["quality", "dataset_rules"], "a list of rules") ?? [];
  const out: Array<RuleDraft<DatasetRule>> = [];
  items.forEach((item, i) => {
    const path: YamlPath = ["quality", "dataset_rules", i];
    const r = readDatasetRule(cx, item, path, i, dataset);
    if (r) out.push({ rule: r, path });
  });
  return out;
}

function readDatasetRule(cx: NormaliseContext, item: unknown, path: YamlPath, index: number, dataset: string | undefined): DatasetRule | undefined {
  const expected = "a dataset rule: unique, null_ratio, row_count_between or sql";
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
  if (kind === "sql") return sqlDatasetRule(cx, m, path, index, dataset);
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

/**
 * `sql: "SELECT … FROM {dataset} [WHERE …]"` with at most one of `must_be_between: [lo, hi]`,
 * `must_be_less_than`, `must_be_greater_than`: checked here (sql-dataset-query.ts), evaluated by
 * each engine over the batch's good rows.
 */
function sqlDatasetRule(cx: NormaliseContext, m: Obj, path: YamlPath, index: number, dataset: string | undefined): DatasetRule | undefined {
  checkKeys(cx, m, path, [...RULE_LABEL_KEYS, "sql", ...DATASET_SQL_KEYS], "a rule");
  const labels = readLabels(cx, m, path);
  const sqlPath: YamlPath = [...path, "sql"];
  const sql = asNonEmptyStr(cx, m["sql"], sqlPath, "a query such as SELECT count(*) FROM {dataset} WHERE amount < 0");
  if (sql === undefined) return undefined;
  let query: DatasetQuery;
  try {
    query = parseDatasetQuery(sql, { fields: cx.fieldNames, ...(dataset !== undefined ? { dataset } : {}) });
  } catch (e) {
    if (!(e instanceof RuleExpressionError)) throw e;
    cx.error(sqlPath, e.reason, "SELECT <aggregate> FROM {dataset} [WHERE <condition>] over the contract's fields (see docs/contracts.md, Dataset rules)");
    return undefined;
  }
  const bounds = datasetBounds(cx, m, path);
  if (bounds === undefined) return undefined;
  const id = labels.name ?? `sql:dataset:${index}`;
  return { ...ruleBase(cx, id, labels, path, "declared"), kind: "sql", sql, query, bounds, ...sqlLoc(cx, path) };
}

function datasetBounds(cx: NormaliseContext, m: Obj, path: YamlPath): DatasetBounds | undefined {
  const given = DATASET_SQL_KEYS.filter((k) => m[k] !== undefined && m[k] !== null);
  if (given.length > 1) {
    cx.error([...path, given[1]!], `${given.join(" and ")} are both given`, "one of must_be_between, must_be_less_than, must_be_greater_than");
    return undefined;
  }
  const key = given[0];
  if (key === undefined) {
    cx.warn(path, "no must_be_between, must_be_less_than or must_be_greater_than: the rule passes whenever its query gives a value", "suspicious");
    return {};
  }
  const vPath: YamlPath = [...path, key];
  if (key === "must_be_between") {
    const pair = asList(cx, m[key], vPath, "[low, high]");
    const lo = pair?.length === 2 ? asNum(cx, pair[0], [...vPath, 0], "a number") : undefined;
    const hi = pair?.length === 2 ? asNum(cx, pair[1], [...vPath, 1], "a number") : undefined;
    if (pair !== undefined && pair.length !== 2) cx.error(vPath, `found ${pair.length} values`, "[low, high]");
    if (lo === undefined || hi === undefined) return undefined;
    if (lo > hi) {
      cx.error(vPath, `low ${lo} is greater than high ${hi}`, "[low, high] with low <= high");
      return undefined;
    }
    return { between: [lo, hi] };
  }
  const n = asNum(cx, m[key], vPath, "a number");
  if (n === undefined) return undefined;
  return key === "must_be_less_than" ? { lessThan: n } : { greaterThan: n };
}
