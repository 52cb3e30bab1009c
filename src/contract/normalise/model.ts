/** `model.fields` (each field's name, type, flags and constraints) and the top-level `primary_key`. */
import { parseFieldType, typeNames } from "../field-types.js";
import { didYouMean } from "../suggest.js";
import type { FieldSpec } from "../types.js";
import { formatPath, type YamlPath } from "../yaml.js";
import { notAFieldMessage, type NormaliseContext } from "./context.js";
import { asBool, asList, asMap, asNonEmptyStr, asNum, asScalarList, asStr, asStrList, checkKeys, describe, missing, type Obj } from "./read.js";

const MODEL_KEYS = ["fields", "grain", "grain_key"];
const FIELD_KEYS = [
  "name", "type", "required", "nullable", "pii", "phi", "sensitive", "classification", "description",
  "rules", "accepted_values", "min", "max", "max_length", "foreign_key", "milestone", "generated",
  "security_groups", "masking", "masking_format", "pii_vault", "extraction_task",
  "extraction_examples", "aliases", "primary_key", "unique", "default", "format", "example",
  "examples", "tags", "enum", "precision", "scale",
];

export interface ParsedField {
  spec: FieldSpec;
  path: YamlPath;
  primaryKeyFlag: boolean;
  /** The field's own `rules`, read once the whole field list is known. */
  rules: unknown[];
}

type ParsedType = ReturnType<typeof parseFieldType>;

export function readFields(cx: NormaliseContext, data: Obj): ParsedField[] {
  const model = asMap(cx, data["model"], ["model"]);
  if (!model) {
    if (data["fields"] !== undefined) {
      cx.warn(["fields"], "top-level fields are not read; declare them under model.fields", "unsupported");
    }
    return [];
  }
  checkKeys(cx, model, ["model"], [...MODEL_KEYS, "primary_key"], "model");
  if (model["primary_key"] !== undefined) {
    cx.error(["model", "primary_key"], "primary_key belongs at the top level of the contract, not under model", "primary_key: [...] at the top level");
  }
  const items = asList(cx, model["fields"], ["model", "fields"], "a list of fields ({name, type, …})") ?? [];
  const out: ParsedField[] = [];
  const seen = new Map<string, YamlPath>();
  items.forEach((item, i) => {
    const path: YamlPath = ["model", "fields", i];
    const f = readField(cx, item, path);
    if (!f) return;
    const lower = f.spec.name.toLowerCase();
    const before = seen.get(lower);
    if (before !== undefined) {
      cx.error([...path, "name"], `duplicate field '${f.spec.name}' (also declared at ${formatPath(before)})`, "each field declared once (names compare case-insensitively)");
      return;
    }
    seen.set(lower, path);
    out.push(f);
  });
  // An alias may not shadow another field: the record's own value must win unambiguously.
  for (const f of out) {
    for (const a of f.spec.aliases) {
      const clash = seen.get(a.toLowerCase());
      if (clash !== undefined) {
        cx.error([...f.path, "aliases"], `alias '${a}' is the name of a declared field (${formatPath(clash)})`, "aliases that are not field names");
      }
    }
  }
  return out;
}

function readField(cx: NormaliseContext, item: unknown, path: YamlPath): ParsedField | undefined {
  const m = asMap(cx, item, path, "a field mapping ({name, type, …})");
  if (!m) {
    if (item === null || item === undefined) cx.error(path, "empty field entry", "a field mapping ({name, type, …})");
    return undefined;
  }
  checkKeys(cx, m, path, FIELD_KEYS, "a field");
  const name = fieldName(cx, m, path);
  if (name === undefined) return undefined;
  const { declaredType, parsed } = fieldType(cx, m, path);
  const required = asBool(cx, m["required"], [...path, "required"]) ?? false;
  const nullableGiven = asBool(cx, m["nullable"], [...path, "nullable"]);
  if (required && nullableGiven === true) {
    cx.warn([...path, "nullable"], `field '${name}' is both required and nullable; required wins (nulls are rejected)`, "suspicious");
  }
  const spec: FieldSpec = {
    name,
    type: parsed?.ok ? parsed.type : "string",
    declaredType,
    required,
    nullable: nullableGiven ?? !required,
    pii: asBool(cx, m["pii"], [...path, "pii"]) ?? false,
    aliases: asStrList(cx, m["aliases"], [...path, "aliases"], "a name or a list of names") ?? [],
  };
  if (parsed?.ok && parsed.precision !== undefined) {
    spec.precision = parsed.precision;
    spec.scale = parsed.scale;
  }
  decimalKeys(cx, m, path, spec);
  const description = asStr(cx, m["description"], [...path, "description"]);
  if (description !== undefined) spec.description = description;
  const loc = cx.loc(path);
  if (loc) spec.loc = loc;
  fieldConstraints(cx, m, path, spec);
  if (m["unique"] === true) {
    cx.error([...path, "unique"], `field-level unique is not read`, `a dataset rule: quality.dataset_rules: [{unique: ${name}}]`);
  }
  const primaryKeyFlag = asBool(cx, m["primary_key"], [...path, "primary_key"]) === true;
  const rules = asList(cx, m["rules"], [...path, "rules"], "a list of rules") ?? [];
  return { spec, path, primaryKeyFlag, rules };
}

function fieldName(cx: NormaliseContext, m: Obj, path: YamlPath): string | undefined {
  if (m["name"] === undefined) {
    missing(cx, m, path, "name", "the field's name");
    return undefined;
  }
  const name = asNonEmptyStr(cx, m["name"], [...path, "name"]);
  if (name === undefined) return undefined;
  // Field names end up quoted inside SQL and in file headers: no control or invisible characters.
  // eslint-disable-next-line no-control-regex -- the check is for control characters
  const bad = /[\u0000-\u001f\u007f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/u.exec(name);
  if (bad) {
    const cp = `U+${(bad[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
    cx.error([...path, "name"], `field name contains the control or invisible character ${cp}`, "a name of visible characters");
    return undefined;
  }
  return name;
}

/** The type as written and as parsed; a missing or unknown type is reported and reads as `string`. */
function fieldType(cx: NormaliseContext, m: Obj, path: YamlPath): { declaredType: string; parsed?: ParsedType } {
  if (m["type"] === undefined) {
    missing(cx, m, path, "type", "a type: string, integer, double, decimal, boolean, date, timestamp or json");
    return { declaredType: "string" };
  }
  const t = asNonEmptyStr(cx, m["type"], [...path, "type"], "a type name");
  if (t === undefined) return { declaredType: "string" };
  const parsed = parseFieldType(t);
  if (!parsed.ok) {
    const guess = didYouMean(t.toLowerCase(), typeNames());
    cx.error([...path, "type"], parsed.message + (guess !== undefined ? ` (did you mean ${guess}?)` : ""), parsed.expected);
  } else if (parsed.note !== undefined) {
    cx.warn([...path, "type"], parsed.note, "unsupported");
  }
  return { declaredType: t, parsed };
}

/**
 * `precision:` / `scale:` written as keys beside `type: decimal` (as some contracts spell it) set
 * what `decimal(p,s)` sets; never ignored: on another type, or beside a type that already gives
 * them, they are an error.
 */
function decimalKeys(cx: NormaliseContext, m: Obj, path: YamlPath, spec: FieldSpec): void {
  const given = (["precision", "scale"] as const).filter((k) => m[k] !== undefined && m[k] !== null);
  if (given.length === 0) return;
  const at = [...path, given[0]!];
  if (spec.type !== "decimal") {
    cx.error(at, `only a decimal field has a precision and scale; this field is ${spec.declaredType}`, "type: decimal, or no precision/scale");
    return;
  }
  if (spec.declaredType.includes("(")) {
    cx.error(at, `the type ${spec.declaredType} already gives the precision and scale`, "either decimal(p,s) or the precision/scale keys");
    return;
  }
  const whole = (k: "precision" | "scale"): number | undefined => {
    if (m[k] === undefined || m[k] === null) return spec[k];
    const n = asNum(cx, m[k], [...path, k], "a whole number");
    if (n !== undefined && Number.isInteger(n)) return n;
    if (n !== undefined) cx.error([...path, k], `found ${n}`, "a whole number");
    return undefined;
  };
  const precision = whole("precision");
  const scale = whole("scale");
  if (precision === undefined || scale === undefined) return;
  const checked = parseFieldType(`decimal(${precision},${scale})`);
  if (!checked.ok) {
    cx.error(at, checked.message, checked.expected);
    return;
  }
  spec.precision = checked.precision;
  spec.scale = checked.scale;
}

/** accepted_values, min, max and max_length as written on the field (each becomes a rule later). */
function fieldConstraints(cx: NormaliseContext, m: Obj, path: YamlPath, spec: FieldSpec): void {
  if (m["accepted_values"] !== undefined && m["accepted_values"] !== null) {
    const values = asScalarList(cx, m["accepted_values"], [...path, "accepted_values"]);
    if (values) spec.acceptedValues = values;
  }
  for (const bound of ["min", "max"] as const) {
    const v = m[bound];
    if (v === undefined || v === null) continue;
    if (typeof v === "number" || typeof v === "string") spec[bound] = v;
    else cx.error([...path, bound], `found ${describe(v)}`, "a number (or a date/time string)");
  }
  if (m["max_length"] !== undefined && m["max_length"] !== null) {
    const n = asNum(cx, m["max_length"], [...path, "max_length"], "a whole number of characters");
    if (n !== undefined) {
      if (!Number.isInteger(n) || n < 0) cx.error([...path, "max_length"], `found ${n}`, "a whole number of characters");
      else spec.maxLength = n;
    }
  }
}

export function readPrimaryKey(cx: NormaliseContext, data: Obj, fields: ParsedField[]): string[] {
  const pk = asStrList(cx, data["primary_key"], ["primary_key"]) ?? [];
  pk.forEach((k, i) => {
    if (cx.fieldNames.length === 0) return;
    const hit = cx.declaredField(k);
    if (hit !== undefined) {
      pk[i] = hit;
      return;
    }
    const path = typeof data["primary_key"] === "string" ? ["primary_key"] : ["primary_key", i];
    cx.error(path, notAFieldMessage(k, cx.fieldNames), `one of the fields under model.fields: ${cx.fieldNames.join(", ")}`);
  });
  // `primary_key: true` on a field must agree with the top-level list (the original refuses it elsewhere).
  for (const f of fields) {
    if (f.primaryKeyFlag && !pk.some((k) => k.toLowerCase() === f.spec.name.toLowerCase())) {
      cx.error(
        [...f.path, "primary_key"],
        `field-level primary_key is not read; list '${f.spec.name}' in the top-level primary_key instead`,
        `primary_key: [${f.spec.name}] at the top level of the contract`,
      );
    }
  }
  return pk;
}
