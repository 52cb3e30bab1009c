/** The `quality` section: row rules (declared and implied by fields) and dataset rules, with unique ids. */
import type { DatasetRule, RowRule } from "../types.js";
import { formatPath } from "../yaml.js";
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
  const dataset = typeof data["dataset"] === "string" ? data["dataset"] : undefined;
  const datasetRules = readDatasetRules(cx, quality, dataset);
  const rowRules = implicitRules(cx, fields, declared, enforceRequired);
  const seen = new Map<string, RuleDraft<RowRule | DatasetRule>>();
  return { rowRules: uniqueRules(cx, rowRules, seen), datasetRules: uniqueRules(cx, datasetRules, seen) };
}

/**
 * One rule per id. A rule identical to one before it (`unique: id` and `unique: [id]`, the same
 * check written twice) is the same rule and is kept once, as the original runs it; two different
 * rules with one id are an error, since results and quarantine reasons are reported by id.
 */
function uniqueRules<R extends RowRule | DatasetRule>(
  cx: NormaliseContext,
  drafts: Array<RuleDraft<R>>,
  seen: Map<string, RuleDraft<RowRule | DatasetRule>>,
): Array<RuleDraft<R>> {
  const out: Array<RuleDraft<R>> = [];
  for (const d of drafts) {
    const before = seen.get(d.rule.id);
    if (before === undefined) {
      seen.set(d.rule.id, d);
      out.push(d);
    } else if (!sameRule(before.rule, d.rule)) {
      cx.error(
        d.path,
        `duplicate rule id '${d.rule.id}' (also used by ${formatPath(before.path)})`,
        "a unique name for each rule: add or change `name`",
      );
    }
  }
  return out;
}

/** The same check: everything but where it was written. */
function sameRule(a: RowRule | DatasetRule, b: RowRule | DatasetRule): boolean {
  const strip = (r: RowRule | DatasetRule): string => {
    const { loc: _loc, origin: _origin, ...rest } = r;
    return JSON.stringify(rest, Object.keys(rest).sort());
  };
  return strip(a) === strip(b);
}
