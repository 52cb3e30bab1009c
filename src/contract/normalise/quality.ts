/** The `quality` section: row rules (declared and implied by fields) and dataset rules, with unique ids. */
import type { DatasetRule, RowRule } from "../types.js";
import { formatPath, type YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { readDatasetRules } from "./dataset-rules.js";
import { implicitRules } from "./implicit-rules.js";
import type { ParsedField } from "./model.js";
import { asBool, asMap, checkKeys } from "./read.js";
import { readRowRules } from "./row-rules.js";
import type { RuleDraft } from "./rule-parts.js";

const QUALITY_KEYS = ["row_rules", "dataset_rules", "enforce_required", "fail_pipeline_on_dataset_error"];

export interface QualityDrafts {
  rowRules: Array<RuleDraft<RowRule>>;
  datasetRules: Array<RuleDraft<DatasetRule>>;
}

/** Read after the model: rules refer to its fields, and fields imply rules of their own. */
export function readQuality(cx: NormaliseContext, data: Record<string, unknown>, fields: ParsedField[]): QualityDrafts {
  const quality = asMap(cx, data["quality"], ["quality"]) ?? {};
  checkKeys(cx, quality, ["quality"], QUALITY_KEYS, "quality");
  const enforceRequired = asBool(cx, quality["enforce_required"], ["quality", "enforce_required"]) ?? true;
  const declared = readRowRules(cx, quality);
  const datasetRules = readDatasetRules(cx, quality);
  const rowRules = implicitRules(cx, fields, declared, enforceRequired);
  checkUniqueIds(cx, rowRules, datasetRules);
  return { rowRules, datasetRules };
}

function checkUniqueIds(cx: NormaliseContext, rowRules: Array<RuleDraft<RowRule>>, datasetRules: Array<RuleDraft<DatasetRule>>): void {
  const seen = new Map<string, YamlPath>();
  for (const d of [...rowRules, ...datasetRules]) {
    const before = seen.get(d.rule.id);
    if (before === undefined) {
      seen.set(d.rule.id, d.path);
      continue;
    }
    cx.error(
      d.path,
      `duplicate rule id '${d.rule.id}' (also used by ${formatPath(before)})`,
      "a unique name for each rule: add or change `name`",
    );
  }
}
