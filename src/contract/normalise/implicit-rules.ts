/**
 * Rules a field declaration implies (required, accepted_values, min/max, max_length), merged with
 * the field's own `rules` and the declared row rules into the final, ordered row rule list.
 */
import { quoteIdent } from "../../util/sql-text.js";
import type { RowRule } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import type { ParsedField } from "./model.js";
import { rangeRule, readRowRule } from "./row-rules.js";
import { ruleBase, type RuleDraft } from "./rule-parts.js";

/** What the written rules already check, per field (lower-cased), so implied rules are not doubled. */
interface Covered {
  notNull: Set<string>;
  acceptedValues: Set<string>;
  range: Set<string>;
}

const NOT_NULL_SQL = /^\s*\(?\s*(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))\s+IS\s+NOT\s+NULL\s*\)?\s*$/i;

function coveredFields(drafts: Array<RuleDraft<RowRule>>): Covered {
  const c: Covered = { notNull: new Set(), acceptedValues: new Set(), range: new Set() };
  for (const { rule, rangeField } of drafts) {
    if (rangeField !== undefined) c.range.add(rangeField.toLowerCase());
    if (rule.kind === "not_null") c.notNull.add(rule.field.toLowerCase());
    else if (rule.kind === "accepted_values") c.acceptedValues.add(rule.field.toLowerCase());
    else if (rule.kind === "range") c.range.add(rule.field.toLowerCase());
    else if (rule.kind === "sql") {
      // A written `x IS NOT NULL` already does what `required: true` would add.
      const m = NOT_NULL_SQL.exec(rule.sql);
      const col = m?.[1] ?? m?.[2];
      if (col !== undefined) c.notNull.add(col.toLowerCase());
    }
  }
  return c;
}

/** Rules implied by field declarations, first (in field order), then the declared ones. */
export function implicitRules(
  cx: NormaliseContext,
  fields: ParsedField[],
  declared: Array<RuleDraft<RowRule>>,
  enforceRequired: boolean,
): Array<RuleDraft<RowRule>> {
  const fieldRuleDrafts = new Map<string, Array<RuleDraft<RowRule>>>();
  for (const f of fields) {
    const drafts: Array<RuleDraft<RowRule>> = [];
    f.rules.forEach((item, j) => {
      drafts.push(...readRowRule(cx, item, [...f.path, "rules", j], { index: j, origin: "field", field: f.spec.name }));
    });
    fieldRuleDrafts.set(f.spec.name, drafts);
  }
  const written = [...declared, ...[...fieldRuleDrafts.values()].flat()];
  // Guard every sql rule now that the field list is known (generated ones too: they embed field names).
  for (const d of written) {
    if (d.rule.kind === "sql") cx.checkSql(d.rule.sql, d.sqlPath ?? d.path);
  }
  const covered = coveredFields(written);
  const out: Array<RuleDraft<RowRule>> = [];
  for (const f of fields) {
    out.push(...fieldRules(cx, f, fieldRuleDrafts.get(f.spec.name) ?? [], covered, enforceRequired));
  }
  out.push(...declared);
  return out;
}

/** One field's rules, in order: implied not_null, its own `rules`, then accepted_values, range, max_length. */
function fieldRules(
  cx: NormaliseContext,
  f: ParsedField,
  own: Array<RuleDraft<RowRule>>,
  covered: Covered,
  enforceRequired: boolean,
): Array<RuleDraft<RowRule>> {
  const s = f.spec;
  const lower = s.name.toLowerCase();
  const out: Array<RuleDraft<RowRule>> = [];
  if (enforceRequired && (s.required || !s.nullable) && !covered.notNull.has(lower)) {
    const why = s.required ? "required" : "not nullable";
    out.push({
      rule: {
        ...ruleBase(cx, `not_null:${s.name}`, { category: "completeness", description: `${s.name} is ${why}` }, f.path, "required"),
        kind: "not_null",
        field: s.name,
      },
      path: [...f.path, s.required ? "required" : "nullable"],
    });
  }
  out.push(...own);
  if (s.acceptedValues !== undefined && !covered.acceptedValues.has(lower)) {
    const p: YamlPath = [...f.path, "accepted_values"];
    out.push({
      rule: {
        ...ruleBase(cx, `accepted_values:${s.name}`, { category: "validity", description: `${s.name} is one of the accepted values` }, p, "field"),
        kind: "accepted_values",
        field: s.name,
        values: s.acceptedValues,
      },
      path: p,
    });
  }
  if ((s.min !== undefined || s.max !== undefined) && !covered.range.has(lower)) {
    const p: YamlPath = [...f.path, s.min !== undefined ? "min" : "max"];
    const r = rangeRule(cx, {
      id: `range:${s.name}`,
      labels: { category: "validity" },
      path: p,
      origin: "field",
      field: s.name,
      min: s.min,
      max: s.max,
      inclusive: true,
      cfgPath: f.path,
    });
    if (r) {
      if (r.kind === "sql") cx.checkSql(r.sql, p);
      out.push({ rule: r, path: p });
    }
  }
  if (s.maxLength !== undefined) out.push(maxLengthRule(cx, f, s.maxLength));
  return out;
}

function maxLengthRule(cx: NormaliseContext, f: ParsedField, maxLength: number): RuleDraft<RowRule> {
  const name = f.spec.name;
  const q = quoteIdent(name);
  const p: YamlPath = [...f.path, "max_length"];
  const sql = `${q} IS NULL OR length(${q}) <= ${maxLength}`;
  cx.checkSql(sql, p);
  return {
    rule: {
      ...ruleBase(cx, `max_length:${name}`, { category: "validity", description: `${name} is at most ${maxLength} characters` }, p, "field"),
      kind: "sql",
      sql,
    },
    path: p,
  };
}
