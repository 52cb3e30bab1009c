/**
 * Compile a Contract into a validation plan: which input keys become columns, the
 * coercion and rule expressions (engine-neutral IR), the checks a row can fail, and
 * what goes out. Both engines execute the same plan.
 */
import type { Contract, DatasetRule, FieldSpec, FieldType, RowRule, Severity } from "../contract/types.js";
import { analyzeRuleExpression } from "../contract/sql-guard.js";
import { ConfigError } from "../errors.js";
import {
  coerceValue,
  DATE_RE,
  DECIMAL_RE,
  decimalPrecision,
  decimalScale,
  DOUBLE_RE,
  FALSE_RE,
  INTEGER_RE,
  MAX_MICROS,
  MAX_SAFE,
  MIN_DAYS,
  MIN_MICROS,
  rawText,
  TIMESTAMP_RE,
  TRUE_RE,
} from "./canonical.js";
import {
  and,
  bool,
  cast,
  cmp,
  col,
  eq,
  extract,
  int,
  isNull,
  isTrue,
  matches,
  not,
  notNull,
  nullOf,
  num,
  or,
  str,
  when,
  type Expr,
  type Layer,
} from "./ir.js";
import { TAG, TAGS_PER_WORD } from "./encode.js";

export const INTERNAL_PREFIX = "__ll_";
const tagWord = (k: number): string => `__ll_w${Math.floor(k / TAGS_PER_WORD)}`;
export const UNKNOWN_COL = "__ll_u";
export const BAD_COL = "__ll_bad";
export const FAIL_COL = "__ll_fail";

/** One input column produced by the JS pass: a declared field, or an undeclared key a rule reads. */
export interface PlanField {
  k: number;
  name: string;
  /** Input keys tried in order: the field's own name, then its aliases. */
  keys: string[];
  /** Absent for an undeclared key a rule refers to: its value is used as text, never a type error. */
  spec?: FieldSpec;
  type: FieldType | "untyped";
  /** Encode the value as JSON text (json fields). */
  json: boolean;
  /** Keep the JSON text of nested values (untyped columns, so rules can see it). */
  keepNested: boolean;
  /**
   * Send the text of string values. A `string` field no rule reads needs only the tag (its
   * good value is the record's own string), so the engine gets text only for the numbers
   * and booleans it has to spell.
   */
  stringText: boolean;
  /**
   * Numbers may travel as JSON numbers (PlanOptions.numbersAsJson), for a field whose type
   * only reads them as numbers (integer, double, decimal).
   */
  numberJson: boolean;
  /** Engine columns: the value's text, its tag (TAG in encode.ts), the coerced value. */
  text: string;
  tag: string;
  val: string;
  err?: string;
}

export type CheckKind = "unknown" | "type" | RowRule["kind"];

export interface Check {
  code: number;
  ruleId: string;
  severity: Severity;
  kind: CheckKind;
  builtin: boolean;
  field?: PlanField;
  rule?: RowRule;
  flag: string;
}

/**
 * How a good row's value is made from engine columns:
 * - `string`: `col` holds text only where the input was not a string (a number or boolean
 *   written as text); otherwise the value is the input string itself, taken from the record
 *   rather than copied out of the engine and back;
 * - `int`: `col` a double for |v| <= 2^53-1, `bigCol` the decimal text beyond (→ bigint);
 * - `text` / `float` / `bool`: `col` as is; `json`: `col` is JSON text.
 */
export type OutputKind = "string" | "text" | "int" | "float" | "bool" | "json";

export interface Output {
  name: string;
  kind: OutputKind;
  col: string;
  bigCol?: string;
  field: PlanField;
}

export interface DatasetPlan {
  rule: DatasetRule;
  /** unique: key columns; null_ratio: a boolean column, true where the value is null. */
  cols: string[];
}

export interface Plan {
  /** Declared fields in contract order, then undeclared keys that rules read. */
  fields: PlanField[];
  passthrough: boolean;
  unknownPolicy: Contract["schemaPolicy"]["unknownFields"];
  /** Keys that are not "unknown": declared names and their aliases. */
  knownKeys: Set<string>;
  checks: Check[];
  /** Layers before the SQL rules; `sqlRules` are evaluated on their result; then `postLayers`. */
  layers: Layer[];
  sqlRules: Array<[col: string, sql: string]>;
  postLayers: Layer[];
  outputs: Output[];
  /** Engine columns the good rows are built from, in a fixed order. */
  outputColumns: string[];
  dataset: DatasetPlan[];
  /**
   * Key columns of the contract's primary key, when every part is a declared field: the DuckDB
   * engine reports whether the good rows repeat a key, so the lake need not look.
   */
  primaryKeyCols?: string[];
  /** The declared names of those fields. */
  primaryKeyFields?: string[];
  /** Does any check need the unknown-keys column filled in. */
  tracksUnknown: boolean;
  /**
   * Under `unknown_fields: allow` (and declared fields): good rows keep undeclared keys in one
   * more column, so the JavaScript pass marks the records that have any.
   */
  keepsExtraKeys: boolean;
  /** Engine columns holding the packed tags, one per 17 fields (at least one). */
  tagWords: string[];
}

export interface PlanOptions {
  /**
   * Send the text of every string value, so the engine can return whole good columns
   * (GoodColumns) instead of leaving strings to be taken from the records.
   */
  allStringText?: boolean;
  /**
   * Let numeric fields' numbers go as JSON numbers where JSON.stringify and DuckDB's reading
   * of them spell the same text as `numberText` (see encodeNumber in encode.ts): the batch
   * document then spells them instead of the JavaScript pass.
   */
  numbersAsJson?: boolean;
}

const NUMERIC_TYPES: ReadonlySet<string> = new Set(["integer", "double", "decimal"]);

/** A timestamp field's range flag: its value converted and is within the supported range. */
const okCol = (k: number): string => `__ll_ok${k}`;

export function compilePlan(contract: Contract, options: PlanOptions = {}): Plan {
  const fields: PlanField[] = [];
  const byName = new Map<string, PlanField>();
  const addField = (name: string, spec?: FieldSpec): PlanField => {
    const k = fields.length;
    const f: PlanField = {
      k,
      name,
      keys: spec ? [name, ...spec.aliases.filter((a) => a !== name)] : [name],
      type: spec ? spec.type : "untyped",
      json: spec?.type === "json",
      keepNested: !spec,
      stringText: options.allStringText === true || spec?.type !== "string",
      numberJson: options.numbersAsJson === true && spec !== undefined && NUMERIC_TYPES.has(spec.type),
      text: `__ll_x${k}`,
      tag: `__ll_t${k}`,
      val: `__ll_v${k}`,
    };
    if (spec) {
      f.spec = spec;
      f.err = `__ll_e${k}`;
    }
    fields.push(f);
    byName.set(name, f);
    return f;
  };

  for (const spec of contract.fields) {
    if (spec.name.startsWith(INTERNAL_PREFIX)) {
      throw new ConfigError(`fields.${spec.name}`, `field names starting with "${INTERNAL_PREFIX}" are reserved`);
    }
    if (byName.has(spec.name)) throw new ConfigError(`fields.${spec.name}`, "field declared twice");
    if (spec.type === "decimal") {
      const p = decimalPrecision(spec);
      const s = decimalScale(spec);
      if (!(Number.isInteger(p) && Number.isInteger(s) && p >= 1 && p <= 38 && s >= 0 && s <= p)) {
        throw new ConfigError(`fields.${spec.name}`, `decimal(${p},${s}) needs 1 <= precision <= 38 and 0 <= scale <= precision`);
      }
    }
    addField(spec.name, spec);
  }
  const declared = fields.slice();
  const declaredLower = new Map(declared.map((f) => [f.name.toLowerCase(), f]));
  const fieldFor = (name: string, where: string): PlanField => {
    // Field names compare case-insensitively, as in the contract loader and in DuckDB.
    const f = byName.get(name) ?? declaredLower.get(name.toLowerCase());
    if (f) return f;
    if (name.startsWith(INTERNAL_PREFIX)) throw new ConfigError(where, `"${name}" is a reserved name`);
    return addField(name);
  };

  // SQL rules: the guard (the same the contract loader runs) rejects statements and unsafe
  // functions even in hand-built contracts, and tells us the columns each rule reads.
  const sqlRefs = new Map<RowRule, PlanField[]>();
  const fieldNames = contract.fields.map((f) => f.name);
  for (const rule of contract.rowRules) {
    if (rule.kind !== "sql") continue;
    let columns: string[];
    try {
      columns = analyzeRuleExpression(rule.sql, { fields: fieldNames }).columns;
    } catch (err) {
      throw new ConfigError(`rule ${rule.id}`, (err as Error).message, { cause: err });
    }
    sqlRefs.set(rule, columns.map((name) => fieldFor(name, `rule ${rule.id}`)));
  }
  for (const refs of sqlRefs.values()) refs.forEach((f) => (f.stringText = true));
  for (const rule of contract.rowRules) {
    if (rule.kind !== "sql") fieldFor(rule.field, `rule ${rule.id}`);
  }
  for (const rule of contract.datasetRules) {
    if (rule.kind === "unique") rule.fields.forEach((n) => fieldFor(n, `dataset rule ${rule.id}`));
    if (rule.kind === "null_ratio") fieldFor(rule.field, `dataset rule ${rule.id}`);
  }

  // ── Coercion layers ──
  const L: Layer[] = [0, 1, 2, 3, 4].map(() => ({ columns: [] }));
  const put = (slot: number, name: string, e: Expr): void => {
    L[slot]!.columns.push([name, e]);
  };
  const outputs: Output[] = [];
  const keyCol = new Map<PlanField, string>();
  const textOf = new Map<PlanField, Expr>();

  for (const f of fields) {
    const k = f.k;
    const g = `__ll_g${k}`;
    const a = `__ll_a${k}`;
    put(0, f.tag, { op: "digit8", e: col(tagWord(k)), pos: k % TAGS_PER_WORD });
    const T = col(f.text);
    const V = col(f.val);
    const typed = f.name;
    const tagIs = (...tags: Array<keyof typeof TAG>): Expr =>
      or(...tags.map((t) => eq(col(f.tag), int(TAG[t]))));
    const trimmed: Expr = { op: "trimWs", e: T };
    /** Numbers arrive in plain decimal notation and skip the regex; strings must match `re`. */
    const numeric = (re: string, numberTags: Array<keyof typeof TAG>): Expr => {
      const fromString: [Expr, Expr] = [and(tagIs("string"), matches(T, re)), trimmed];
      return when(numberTags.length ? [[tagIs(...numberTags), T], fromString] : [fromString], nullOf("utf8"));
    };
    switch (f.type) {
      case "untyped":
        put(1, f.val, T);
        put(4, typed, V);
        // Undeclared keys have no type: 1 and "1" are different values.
        put(4, `__ll_k${k}`, when([[notNull(V), { op: "concat", parts: [cast(col(f.tag), "utf8"), str(":"), V] }]], nullOf("utf8")));
        keyCol.set(f, `__ll_k${k}`);
        break;
      case "string":
        put(1, f.val, when([[tagIs("string", "integral", "number", "boolean"), T]], nullOf("utf8")));
        put(4, typed, V);
        put(4, `__ll_os${k}`, when([[tagIs("integral", "number", "boolean"), T]], nullOf("utf8")));
        outputs.push({ name: f.name, kind: "string", col: `__ll_os${k}`, field: f });
        break;
      case "json":
        put(1, f.val, when([[tagIs("json"), T]], nullOf("utf8")));
        put(4, typed, V);
        outputs.push({ name: f.name, kind: "json", col: f.val, field: f });
        break;
      case "boolean":
        put(
          1,
          f.val,
          when(
            [
              [tagIs("boolean"), eq(T, str("true"))],
              [and(tagIs("integral"), eq(T, str("1"))), bool(true)],
              [and(tagIs("integral"), { op: "inList", e: T, values: ["0", "-0"], type: "utf8" }), bool(false)],
              [and(tagIs("string"), matches(T, TRUE_RE)), bool(true)],
              [and(tagIs("string"), matches(T, FALSE_RE)), bool(false)],
            ],
            nullOf("bool"),
          ),
        );
        put(4, typed, V);
        textOf.set(f, cast(V, "utf8"));
        outputs.push({ name: f.name, kind: "bool", col: f.val, field: f });
        break;
      case "integer": {
        put(1, g, numeric(INTEGER_RE, ["integral"]));
        put(2, f.val, cast(col(g), "int64"));
        put(4, typed, V);
        const safe = and(cmp(">=", V, int(-MAX_SAFE)), cmp("<=", V, int(MAX_SAFE)));
        put(4, `__ll_on${k}`, when([[safe, cast(V, "float64")]], nullOf("float64")));
        put(4, `__ll_ob${k}`, when([[not(safe), cast(V, "utf8")]], nullOf("utf8")));
        textOf.set(f, cast(V, "utf8"));
        outputs.push({ name: f.name, kind: "int", col: `__ll_on${k}`, bigCol: `__ll_ob${k}`, field: f });
        break;
      }
      case "double":
        put(1, g, numeric(DOUBLE_RE, ["integral", "number"]));
        put(2, a, cast(col(g), "float64"));
        put(3, f.val, when([[{ op: "isFinite", e: col(a) }, col(a)]], nullOf("float64")));
        put(4, typed, V);
        // -0.0 and 0.0 are one value for uniqueness.
        put(4, `__ll_k${k}`, { op: "arith", fn: "+", a: V, b: num(0) });
        keyCol.set(f, `__ll_k${k}`);
        // Regexes see a double as it was written (trimmed): engines print doubles differently.
        textOf.set(f, col(g));
        outputs.push({ name: f.name, kind: "float", col: f.val, field: f });
        break;
      case "decimal": {
        const p = decimalPrecision(f.spec!);
        const sc = decimalScale(f.spec!);
        put(1, g, numeric(DECIMAL_RE, ["integral", "number"]));
        put(2, f.val, { op: "decimalCanon", e: col(g), precision: p, scale: sc });
        put(4, typed, { op: "decimalValue", e: V, precision: p, scale: sc, text: col(g) });
        outputs.push({ name: f.name, kind: "text", col: f.val, field: f });
        break;
      }
      case "date":
        put(1, g, numeric(DATE_RE, []));
        put(2, a, { op: "dateToDays", e: col(g) });
        put(3, f.val, when([[cmp(">=", col(a), int(MIN_DAYS)), col(g)]], nullOf("utf8")));
        put(4, typed, when([[notNull(V), { op: "daysToDate", e: col(a) }]]));
        outputs.push({ name: f.name, kind: "text", col: f.val, field: f });
        break;
      case "timestamp": {
        // `integral`: text the JS pass found in canonical form, which needs no regex (encodeTimestamp).
        put(1, g, numeric(TIMESTAMP_RE, ["integral"]));
        put(2, a, { op: "timestampToMicros", e: col(g) });
        const inRange = and(cmp(">=", col(a), int(MIN_MICROS)), cmp("<=", col(a), int(MAX_MICROS)));
        put(3, okCol(k), isTrue(inRange));
        put(4, f.val, when([[col(okCol(k)), { op: "formatMicros", e: col(a) }]], nullOf("utf8")));
        put(4, typed, when([[col(okCol(k)), { op: "microsToTimestamp", e: col(a) }]]));
        outputs.push({ name: f.name, kind: "text", col: f.val, field: f });
        break;
      }
    }
    if (!keyCol.has(f)) keyCol.set(f, f.val);
    if (!textOf.has(f)) textOf.set(f, V);
  }
  // Errors need every field's final value, so they go one layer after the last value layer.
  const errLayer: Layer = { columns: [] };
  for (const f of fields) {
    if (!f.err) continue;
    const present = cmp("!=", col(f.tag), int(TAG.none));
    // A string field's value may not have been sent (see PlanField.stringText): judge by tag.
    // Decimals and timestamps are judged by their typed value and range flag, which are null /
    // false exactly when the canonical text is null: an engine then need not spell that text.
    const failed =
      f.type === "string"
        ? not(or(...[TAG.string, TAG.integral, TAG.number, TAG.boolean].map((t) => eq(col(f.tag), int(t)))))
        : f.type === "decimal"
          ? isNull(col(f.name))
          : f.type === "timestamp"
            ? not(col(okCol(f.k)))
            : isNull(col(f.val));
    errLayer.columns.push([f.err, and(present, failed)]);
  }

  // ── Checks ──
  const checks: Check[] = [];
  const flagExprs: Array<[string, Expr]> = [];
  const addCheck = (c: Omit<Check, "code" | "flag">, flag: Expr): void => {
    const code = checks.length;
    const name = `__ll_f${code}`;
    checks.push({ ...c, code, flag: name });
    flagExprs.push([name, flag]);
  };
  const passthrough = contract.fields.length === 0;
  const unknownPolicy = contract.schemaPolicy.unknownFields;
  const tracksUnknown = !passthrough && unknownPolicy === "quarantine";
  if (tracksUnknown) {
    addCheck(
      { ruleId: "schema:unknown_fields", severity: "error", kind: "unknown", builtin: true },
      notNull(col(UNKNOWN_COL)),
    );
  }
  for (const f of declared) {
    addCheck({ ruleId: `type:${f.name}`, severity: "error", kind: "type", builtin: true, field: f }, col(f.err!));
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
    const f = fieldFor(rule.field, `rule ${rule.id}`);
    if (rule.kind !== "not_null") f.stringText = true;
    const ok = f.err ? not(col(f.err)) : bool(true);
    const V = col(f.val);
    const present = and(ok, notNull(V));
    switch (rule.kind) {
      case "not_null":
        addCheck({ ...base, field: f }, eq(col(f.tag), int(TAG.none)));
        break;
      case "accepted_values":
        addCheck({ ...base, field: f }, acceptedValuesFlag(f, rule.values, present, textOf.get(f)!));
        break;
      case "regex_match":
        addCheck({ ...base, field: f }, and(present, not(isTrue(matches(textOf.get(f)!, rule.pattern)))));
        break;
      case "range": {
        const x = numericForm(f, rule.id);
        const parts: Expr[] = [];
        if (rule.min !== undefined) parts.push(cmp(rule.inclusive ? ">=" : ">", x, num(rule.min)));
        if (rule.max !== undefined) parts.push(cmp(rule.inclusive ? "<=" : "<", x, num(rule.max)));
        addCheck({ ...base, field: f }, parts.length ? and(present, not(isTrue(and(...parts)))) : bool(false));
        break;
      }
    }
  }

  const errorFlags = checks.filter((c) => c.severity === "error").map((c) => col(c.flag));
  const finalLayer: Layer = {
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

  const nullFlags: Layer = { columns: [] };
  const dataset: DatasetPlan[] = contract.datasetRules.map((rule) => {
    switch (rule.kind) {
      case "unique":
        return {
          rule,
          cols: rule.fields.map((n) => {
            const f = fieldFor(n, `dataset rule ${rule.id}`);
            f.stringText = true;
            return keyCol.get(f)!;
          }),
        };
      case "null_ratio": {
        const f = fieldFor(rule.field, `dataset rule ${rule.id}`);
        nullFlags.columns.push([`__ll_z${f.k}`, eq(col(f.tag), int(TAG.none))]);
        return { rule, cols: [`__ll_z${f.k}`] };
      }
      case "row_count_between":
        return { rule, cols: [] };
    }
  });

  const knownKeys = new Set<string>();
  for (const f of declared) f.keys.forEach((key) => knownKeys.add(key));

  const pkFields = contract.primaryKey.map((n) => byName.get(n) ?? declaredLower.get(n.toLowerCase()));
  const primaryKeyCols =
    pkFields.length > 0 && pkFields.every((f) => f?.spec !== undefined) ? pkFields.map((f) => keyCol.get(f!)!) : undefined;

  return {
    fields,
    passthrough,
    ...(primaryKeyCols ? { primaryKeyCols, primaryKeyFields: pkFields.map((f) => f!.name) } : {}),
    unknownPolicy,
    knownKeys,
    checks,
    layers: [...L.filter((l) => l.columns.length > 0), errLayer].filter((l) => l.columns.length > 0),
    sqlRules,
    postLayers: [{ columns: [...flagExprs, ...nullFlags.columns] }, finalLayer].filter((l) => l.columns.length > 0),
    outputs,
    outputColumns: outputs.flatMap((o) => (o.bigCol ? [o.col, o.bigCol] : [o.col])),
    dataset,
    tracksUnknown,
    keepsExtraKeys: !passthrough && unknownPolicy === "allow",
    tagWords: Array.from({ length: Math.max(1, Math.ceil(fields.length / TAGS_PER_WORD)) }, (_, w) => `__ll_w${w}`),
  };
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
        list = canon.map((v) => String(v));
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
