/**
 * The checks a row can fail (unknown keys, type errors, row rules), each a boolean flag
 * column, and the final layer that turns the flags into the bad-row flag and failure list.
 */
import type { Contract, RowRule } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { coerceValue, DOUBLE_RE, rawText } from "./canonical.js";
import { PRIMARY_KEY_RULE } from "./keyed.js";
import { TAG } from "./encode.js";
import { and, bool, cast, cmp, col, eq, extract, int, isTrue, matches, not, notNull, nullOf, num, or, str, when, type Expr, type Layer } from "./ir.js";
import type { FieldTable } from "./plan-fields.js";
import { BAD_COL, FAIL_COL, UNKNOWN_COL, type Check, type PlanField } from "./plan-types.js";

export interface CompiledChecks {
  checks: Check[];
  /** Each check's flag column and its expression, in check order. */
  flags: Array<[string, Expr]>;
  /** SQL rules' result columns and expressions, evaluated on the typed columns. */
  sqlRules: Array<[string, string]>;
}

export function compileChecks(
  contract: Contract,
  table: FieldTable,
  sqlRefs: ReadonlyMap<RowRule, PlanField[]>,
  textOf: ReadonlyMap<PlanField, Expr>,
  tracksUnknown: boolean,
  keyFields: readonly PlanField[] = [],
): CompiledChecks {
  const checks: Check[] = [];
  const flags: Array<[string, Expr]> = [];
  const addCheck = (c: Omit<Check, "code" | "flag">, flag: Expr): void => {
    const code = checks.length;
    const name = `__ll_f${code}`;
    checks.push({ ...c, code, flag: name });
    flags.push([name, flag]);
  };
  if (tracksUnknown) {
    addCheck(
      { ruleId: "schema:unknown_fields", severity: "error", kind: "unknown", builtin: true },
      notNull(col(UNKNOWN_COL)),
    );
  }
  for (const f of table.declared) {
    addCheck({ ruleId: `type:${f.name}`, severity: "error", kind: "type", builtin: true, field: f }, col(f.err!));
  }
  // A key part that is null or missing (targets that identify rows by key, keyed.ts), unless an
  // error-severity not_null rule on the field already makes the row bad for it.
  const keyNotNull = new Set(
    contract.rowRules.filter((r) => r.kind === "not_null" && r.severity === "error").map((r) => (r as { field: string }).field.toLowerCase()),
  );
  for (const f of keyFields) {
    if (keyNotNull.has(f.name.toLowerCase())) continue;
    addCheck(
      { ruleId: `${PRIMARY_KEY_RULE}:${f.name}`, severity: "error", kind: "primary_key", builtin: true, field: f },
      eq(col(f.tag), int(TAG.none)),
    );
  }
  // `required: true` / `nullable: false` arrive as not_null rules from the contract loader
  // (origin "required"), which also honours `enforce_required: false`.
  const sqlRules: Array<[string, string]> = [];
  for (const rule of contract.rowRules) {
    const base = { ruleId: rule.id, severity: rule.severity, kind: rule.kind, builtin: false, rule } as const;
    if (rule.kind === "sql") {
      const c = `__ll_q${sqlRules.length}`;
      sqlRules.push([c, rule.sql]);
      const errs = (sqlRefs.get(rule) ?? []).filter((f) => f.err).map((f) => col(f.err!));
      const failed = not(col(c));
      addCheck(base, errs.length ? and(not(or(...errs)), failed) : failed);
      continue;
    }
    const f = table.fieldFor(rule.field, `rule ${rule.id}`);
    if (rule.kind !== "not_null") f.stringText = true;
    addCheck({ ...base, field: f }, fieldRuleFlag(rule, f, textOf.get(f)!));
  }
  return { checks, flags, sqlRules };
}

/** True where the row fails a rule on one field. */
function fieldRuleFlag(rule: Exclude<RowRule, { kind: "sql" }>, f: PlanField, text: Expr): Expr {
  const ok = f.err ? not(col(f.err)) : bool(true);
  const present = and(ok, notNull(col(f.val)));
  switch (rule.kind) {
    case "not_null":
      return eq(col(f.tag), int(TAG.none));
    case "accepted_values":
      return acceptedValuesFlag(f, rule.values, present, text);
    case "regex_match":
      return and(present, not(isTrue(matches(text, rule.pattern))));
    case "range": {
      const x = numericForm(f, rule.id);
      const parts: Expr[] = [];
      if (rule.min !== undefined) parts.push(cmp(rule.inclusive ? ">=" : ">", x, num(rule.min)));
      if (rule.max !== undefined) parts.push(cmp(rule.inclusive ? "<=" : "<", x, num(rule.max)));
      return parts.length ? and(present, not(isTrue(and(...parts)))) : bool(false);
    }
  }
}

/** The value a `range` rule compares, as a double. */
function numericForm(f: PlanField, ruleId: string): Expr {
  const V = col(f.val);
  switch (f.type) {
    case "integer":
    case "decimal":
      return cast(V, "float64");
    case "double":
      return V;
    case "untyped":
      return cast(extract(V, DOUBLE_RE, 1), "float64");
    default:
      throw new ConfigError(`rule ${ruleId}`, `range needs a numeric field, but ${f.name} is ${f.type}`);
  }
}

function acceptedValuesFlag(
  f: PlanField,
  values: Array<string | number | boolean>,
  present: Expr,
  text: Expr,
): Expr {
  let e: Expr;
  let list: Array<string | number | boolean>;
  let type: "utf8" | "float64" | "bool";
  if (f.type === "untyped") {
    e = col(f.val);
    type = "utf8";
    list = values.flatMap((v) => {
      const r = rawText(v);
      return r ? [r.text] : [];
    });
  } else {
    const spec = f.spec!;
    // Constants go through the same definition of coercion as the data.
    const canon = values.flatMap((v) => {
      const c = coerceValue(v, spec);
      return c.ok && c.value !== null ? [c.value] : [];
    });
    switch (f.type) {
      case "double":
        e = col(f.val);
        type = "float64";
        list = canon as number[];
        break;
      case "boolean":
        e = col(f.val);
        type = "bool";
        list = canon as boolean[];
        break;
      case "integer":
        e = text;
        type = "utf8";
        // Integers coerce to a number or, beyond 2^53, a bigint.
        list = (canon as Array<number | bigint>).map((v) => String(v));
        break;
      case "json":
        e = col(f.val);
        type = "utf8";
        list = canon.map((v) => JSON.stringify(v));
        break;
      default:
        e = col(f.val);
        type = "utf8";
        list = canon as string[];
    }
  }
  list = [...new Set(list)];
  if (list.length === 0) return present;
  return and(present, not(isTrue({ op: "inList", e, values: list, type })));
}

/** The bad-row flag (any error-severity check failed) and the failed check codes, comma-separated. */
export function finalLayer(checks: readonly Check[]): Layer {
  const errorFlags = checks.filter((c) => c.severity === "error").map((c) => col(c.flag));
  return {
    columns: [
      [BAD_COL, errorFlags.length ? or(...errorFlags) : bool(false)],
      [
        FAIL_COL,
        checks.length
          ? { op: "joinNonNull", sep: ",", parts: checks.map((c) => when([[col(c.flag), str(String(c.code))]], nullOf("utf8"))) }
          : nullOf("utf8"),
      ],
    ],
  };
}
