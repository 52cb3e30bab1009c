/**
 * Load a YAML data contract into the normalised `Contract` every other layer reads.
 *
 * Compatibility first: a contract written for the Python original loads unchanged. Keys we do
 * not use are ignored (unknown ones get a did-you-mean warning); features we do not perform
 * (transformations, reference-data rules, delta tables…) load with an `unsupported` warning so
 * nothing is dropped silently. Everything wrong is collected and thrown as one `ContractError`.
 */
import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { ContractError, type ContractProblem } from "./errors.js";
import { parseFieldType, typeNames } from "./field-types.js";
import { RuleExpressionError, checkRuleExpression } from "./sql-guard.js";
import { didYouMean } from "./suggest.js";
import type {
  Contract,
  ContractWarning,
  DatasetRule,
  FieldSpec,
  LakeFormat,
  Materialization,
  QuarantineSpec,
  RowRule,
  SchemaPolicy,
  Severity,
  SourceLoc,
  Strategy,
  UnknownFieldsPolicy,
} from "./types.js";
import { formatPath, parseYaml, type YamlDoc, type YamlPath } from "./yaml.js";

export interface LoadContractOptions {
  /** Directory a relative contract path is resolved against (default: the working directory). */
  baseDir?: string;
}

// ── Known keys, per section. Unknown ones are warnings, never errors. ─────────────────────────

const TOP_KEYS = [
  "version", "info", "dataset", "primary_key", "model", "quality", "materialization", "quarantine",
  "schema_policy", "source", "trigger", "service_levels",
  // Read by the original, not by this runtime.
  "metadata", "server", "environments", "links", "natural_key", "lineage", "logic", "external_logic",
  "extraction", "upstream", "upstream_contracts", "upstream_sources", "downstream", "schedule",
  "transformations", "compliance", "tier", "layer", "target_layer", "soft_deletes", "ownership",
  "observatory", "streaming", "contract_file_name", "notifications",
  // ODCS spellings the original accepts at the top level.
  "schema", "tables", "columns", "properties", "fields", "kind", "apiVersion", "type", "status",
  "description", "datasetDomain", "quantumName", "datasetName", "driver", "driverVersion", "servers",
  "price", "stakeholders", "roles", "slaDefaultColumn", "slaProperties", "tags", "customProperties",
] as const;
const INFO_KEYS = [
  "title", "table_name", "version", "description", "owner", "contact", "target_layer", "status",
  "classification", "domain", "system",
];
const MODEL_KEYS = ["fields", "grain", "grain_key"];
const FIELD_KEYS = [
  "name", "type", "required", "nullable", "pii", "phi", "sensitive", "classification", "description",
  "rules", "accepted_values", "min", "max", "max_length", "foreign_key", "milestone", "generated",
  "security_groups", "masking", "masking_format", "pii_vault", "extraction_task",
  "extraction_examples", "aliases", "primary_key", "unique", "default", "format", "example",
  "examples", "tags", "enum",
];
const QUALITY_KEYS = ["row_rules", "dataset_rules", "enforce_required", "fail_pipeline_on_dataset_error"];
const RULE_LABEL_KEYS = ["name", "severity", "category", "description", "phase"];
const ROW_KINDS = ["not_null", "accepted_values", "regex_match", "range", "referential_integrity", "lifecycle_window"];
const DATASET_KINDS = ["unique", "null_ratio", "row_count_between"];
const DATASET_SQL_KEYS = ["must_be_between", "must_be_less_than", "must_be_greater_than"];
const MATERIALIZATION_KEYS = [
  "strategy", "target_path", "format", "partition_by", "table", "location", "cluster_by",
  "reprocess_policy", "reprocess_date_column", "scd2", "scd1", "fact", "soft_delete_column",
  "soft_delete_value", "soft_delete_time_column", "soft_delete_reason_column", "deletion",
  "table_properties", "compaction", "unknown_member", "merge_dedup_guard", "secondary_targets",
  "dlt_destination", "dlt_credentials", "dlt_dataset_name", "trigger",
];
const QUARANTINE_KEYS = [
  "enabled", "target", "format", "include_error_reason", "table", "location", "strict_notifications",
  "fail_on_quarantine", "notifications_enabled", "write_mode", "notifications",
];
const SCHEMA_POLICY_KEYS = ["evolution", "unknown_fields"];
const SERVICE_LEVEL_KEYS = ["freshness", "availability", "row_count"];

const STRATEGIES: readonly Strategy[] = ["append", "merge", "overwrite", "scd2"];
const FORMATS: readonly LakeFormat[] = ["duckdb", "parquet"];
const SEVERITIES: readonly Severity[] = ["error", "warning", "info"];
const EVOLUTIONS = ["strict", "append", "merge", "overwrite", "compatible", "allow"];
const UNKNOWN_FIELDS: readonly UnknownFieldsPolicy[] = ["quarantine", "drop", "allow"];

// ── Small value helpers ─────────────────────────────────────────────────────────────────────

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  if (isObj(v)) return "a mapping";
  if (typeof v === "string") return `"${v.length > 40 ? v.slice(0, 40) + "…" : v}"`;
  return String(v);
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function sqlLiteral(v: string | number | boolean): string {
  if (typeof v === "string") return `'${v.replace(/'/g, "''")}'`;
  return String(v);
}

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

/** The original's streaming lint accepts these spellings for the same triggers. */
function normaliseTrigger(t: string): string {
  const v = t.trim().toLowerCase();
  const squashed = v.replace(/[_\-\s]/g, "");
  const canonical: Record<string, string> = {
    availablenow: "available_now",
    microbatch: "micro_batch",
    processingtime: "processing_time",
    continuous: "continuous",
    once: "once",
  };
  return canonical[squashed] ?? v;
}

type Scalar = string | number | boolean;

interface RuleDraft<R> {
  rule: R;
  path: YamlPath;
  /** For rules written as `sql:`, where the expression is (problems point there). */
  sqlPath?: YamlPath;
  /** A range rule that became `sql` (date bounds) still covers its field's own min/max. */
  rangeField?: string;
}

/** What one row rule item said about the field it checks (for "already covered" decisions). */
interface Covered {
  notNull: Set<string>;
  acceptedValues: Set<string>;
  range: Set<string>;
}

const NOT_NULL_SQL = /^\s*\(?\s*(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))\s+IS\s+NOT\s+NULL\s*\)?\s*$/i;

// ── The normaliser ──────────────────────────────────────────────────────────────────────────

class Normaliser {
  readonly problems: ContractProblem[] = [];
  readonly warnings: ContractWarning[] = [];
  private fieldNames: string[] = [];
  private fieldByLower = new Map<string, string>();

  constructor(
    private readonly file: string | undefined,
    private readonly doc: YamlDoc | undefined,
  ) {}

  loc(path: YamlPath): SourceLoc | undefined {
    const pos = this.doc?.locate(path);
    if (!pos) return undefined;
    return { file: this.file, line: pos.line, column: pos.column, path: formatPath(path) };
  }

  error(path: YamlPath, message: string, expected?: string): void {
    // An empty document has no node to point at: its problems are at the start of the file.
    const pos = this.doc ? (this.doc.locate(path) ?? { line: 1, column: 1 }) : undefined;
    this.problems.push({
      path: path.length === 0 ? "" : formatPath(path),
      message,
      expected,
      file: this.file,
      line: pos?.line,
      column: pos?.column,
    });
  }

  warn(path: YamlPath, message: string, code: ContractWarning["code"]): void {
    const loc = this.loc(path);
    const where = path.length === 0 ? "" : `${formatPath(path)}: `;
    this.warnings.push({ message: `${where}${message}`, loc, code });
  }

  // ── readers ──

  map(v: unknown, path: YamlPath, expected = "a mapping"): Obj | undefined {
    if (v === undefined || v === null) return undefined;
    if (isObj(v)) return v;
    this.error(path, `found ${describe(v)}`, expected);
    return undefined;
  }

  list(v: unknown, path: YamlPath, expected = "a list"): unknown[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (Array.isArray(v)) return v;
    this.error(path, `found ${describe(v)}`, expected);
    return undefined;
  }

  str(v: unknown, path: YamlPath, expected = "a string"): string | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v === "string") return v;
    // YAML turns `version: 2` or `name: 2024` into numbers; the text is what was meant.
    if (typeof v === "number" || typeof v === "boolean") return this.doc?.scalarSource?.(path) ?? String(v);
    this.error(path, `found ${describe(v)}`, expected);
    return undefined;
  }

  nonEmptyStr(v: unknown, path: YamlPath, expected = "a non-empty string"): string | undefined {
    const s = this.str(v, path, expected);
    if (s !== undefined && s.trim() === "") {
      this.error(path, "is empty", expected);
      return undefined;
    }
    return s?.trim();
  }

  bool(v: unknown, path: YamlPath): boolean | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v === "boolean") return v;
    // The original (pydantic) also accepts these spellings.
    if (typeof v === "string") {
      const t = v.trim().toLowerCase();
      if (["true", "yes", "on", "1"].includes(t)) return true;
      if (["false", "no", "off", "0"].includes(t)) return false;
    }
    if (v === 1) return true;
    if (v === 0) return false;
    this.error(path, `found ${describe(v)}`, "true or false");
    return undefined;
  }

  num(v: unknown, path: YamlPath, expected = "a number"): number | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v === "number" && Number.isFinite(v)) return v;
    if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
    this.error(path, `found ${describe(v)}`, expected);
    return undefined;
  }

  /** `"a"` or `[a, b]` → string list. */
  strList(v: unknown, path: YamlPath, expected = "a name or a list of names"): string[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v === "string") return v.trim() === "" ? [] : [v.trim()];
    if (!Array.isArray(v)) {
      this.error(path, `found ${describe(v)}`, expected);
      return undefined;
    }
    const out: string[] = [];
    v.forEach((item, i) => {
      const s = this.nonEmptyStr(item, [...path, i], "a name");
      if (s !== undefined) out.push(s);
    });
    return out;
  }

  /**
   * Warn about keys outside `known`. `onlyIfClose` sections (free-form metadata) only get a
   * warning when the key looks like a misspelling of a known one.
   */
  checkKeys(obj: Obj, path: YamlPath, known: readonly string[], section: string, onlyIfClose = false): void {
    for (const key of Object.keys(obj)) {
      if (known.includes(key) || key.startsWith("_") || key.startsWith("x-")) continue;
      const guess = didYouMean(key, known);
      if (guess !== undefined) {
        this.warn([...path, key], `unknown key '${key}' in ${section} is ignored (did you mean ${guess}?)`, "unknown-key");
      } else if (!onlyIfClose) {
        this.warn([...path, key], `unknown key '${key}' in ${section} is ignored`, "unknown-key");
      }
    }
  }

  /** A required key is missing: say so, and point at a misspelling of it when there is one. */
  missing(obj: Obj, path: YamlPath, key: string, expected: string): void {
    const near = Object.keys(obj).find((k) => k !== key && didYouMean(k, [key]) === key);
    if (near !== undefined) {
      this.error([...path, near], `missing required key '${key}' (found '${near}': did you mean ${key}?)`, expected);
    } else {
      this.error([...path, key], `missing required key '${key}'`, expected);
    }
  }

  severity(v: unknown, path: YamlPath): Severity {
    if (v === undefined || v === null) return "error";
    const s = this.str(v, path, "error, warning or info");
    if (s === undefined) return "error";
    const t = s.trim().toLowerCase();
    if ((SEVERITIES as readonly string[]).includes(t)) return t as Severity;
    const synonyms: Record<string, Severity> = { warn: "warning", critical: "error", fatal: "error", err: "error", information: "info" };
    const guess = synonyms[t] ?? didYouMean(t, SEVERITIES);
    this.error(path, `unknown severity '${s}'${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`, "error, warning or info");
    return "error";
  }

  // ── field references ──

  setFields(names: string[]): void {
    this.fieldNames = names;
    this.fieldByLower = new Map(names.map((n) => [n.toLowerCase(), n]));
  }

  /** Resolve a field reference case-insensitively to the declared spelling; error when unknown. */
  fieldRef(name: string, path: YamlPath): string {
    if (this.fieldNames.length === 0) return name;
    const hit = this.fieldByLower.get(name.toLowerCase());
    if (hit !== undefined) return hit;
    const guess = didYouMean(name, this.fieldNames);
    this.error(
      path,
      `'${name}' is not a field of this contract${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`,
      `one of the fields under model.fields: ${this.fieldNames.join(", ")}`,
    );
    return name;
  }

  checkSql(sql: string, path: YamlPath): void {
    try {
      checkRuleExpression(sql, { fields: this.fieldNames });
    } catch (e) {
      if (!(e instanceof RuleExpressionError)) throw e;
      this.error(path, e.reason, "a boolean SQL expression over the contract's fields (see docs/contracts.md, Rule expressions)");
    }
  }

  // ── the document ──

  run(data: Obj, raw: Obj): Contract {
    this.checkOdcs(data);
    this.checkKeys(data, [], TOP_KEYS, "the contract");

    const version = this.str(data["version"], ["version"]);
    const info = this.info(data);
    const fields = this.fields(data);
    this.setFields(fields.map((f) => f.spec.name));
    const dataset = this.dataset(data, info);
    const primaryKey = this.primaryKey(data, fields);

    const quality = this.map(data["quality"], ["quality"]) ?? {};
    this.checkKeys(quality, ["quality"], QUALITY_KEYS, "quality");
    const enforceRequired = this.bool(quality["enforce_required"], ["quality", "enforce_required"]) ?? true;
    const declared = this.rowRules(quality);
    const datasetRules = this.datasetRules(quality);
    const rowRules = this.implicitRules(fields, declared, enforceRequired);
    this.checkUniqueIds(rowRules, datasetRules);

    const materialization = this.materialization(data, dataset, info);
    const quarantine = this.quarantine(data, materialization);
    const schemaPolicy = this.schemaPolicy(data);
    const source = this.source(data);
    const trigger = this.trigger(data);
    const serviceLevels = this.serviceLevels(data);
    this.unsupportedFeatures(data);

    if (this.problems.length > 0) {
      const sorted = [...this.problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
      throw new ContractError(sorted);
    }
    const contract: Contract = {
      info,
      dataset,
      primaryKey,
      fields: fields.map((f) => f.spec),
      rowRules: rowRules.map((d) => d.rule),
      datasetRules: datasetRules.map((d) => d.rule),
      materialization,
      quarantine,
      schemaPolicy,
      // In file order, like the problems, so a reader can walk down the file.
      warnings: [...this.warnings].sort((a, b) => (a.loc?.line ?? 0) - (b.loc?.line ?? 0) || (a.loc?.column ?? 0) - (b.loc?.column ?? 0)),
      raw,
    };
    if (version !== undefined) contract.version = version;
    if (source !== undefined) contract.source = source;
    if (trigger !== undefined) contract.trigger = trigger;
    if (serviceLevels !== undefined) contract.serviceLevels = serviceLevels;
    if (this.file !== undefined) contract.file = this.file;
    return contract;
  }

  checkOdcs(data: Obj): void {
    if (data["kind"] === "DataContract" && data["apiVersion"] !== undefined) {
      this.error(
        ["kind"],
        "this is an Open Data Contract Standard (ODCS) document, which this loader does not convert",
        "a LakeLogic contract (dataset, model.fields, quality, materialization)",
      );
    }
  }

  info(data: Obj): Contract["info"] {
    const info: Contract["info"] = {};
    const m = this.map(data["info"], ["info"]);
    if (m) {
      this.checkKeys(m, ["info"], INFO_KEYS, "info", true);
      for (const [key, value] of Object.entries(m)) {
        const camel = key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
        if (["title", "owner", "domain", "system", "target_layer", "table_name", "status", "classification", "version"].includes(key)) {
          const s = this.str(value, ["info", key]);
          if (s !== undefined) info[camel] = s;
        } else {
          info[camel] = value;
        }
      }
    }
    // The original also reads the layer from a top-level `tier` / `layer` / `target_layer`.
    if (info.targetLayer === undefined) {
      for (const key of ["target_layer", "tier", "layer"]) {
        const s = this.str(data[key], [key]);
        if (s !== undefined) {
          info.targetLayer = s;
          break;
        }
      }
    }
    return info;
  }

  dataset(data: Obj, info: Contract["info"]): string {
    const given = this.nonEmptyStr(data["dataset"], ["dataset"]);
    if (given !== undefined) return given;
    if (data["dataset"] !== undefined && data["dataset"] !== null) return "invalid";
    // A misspelt `dataset:` must not silently fall back to a derived name (a different table and checkpoint).
    if (Object.keys(data).some((k) => k !== "dataset" && didYouMean(k, ["dataset"]) === "dataset")) {
      this.missing(data, [], "dataset", "a dataset name (it names the table and the checkpoint key)");
      return "invalid";
    }
    // The original names streams by dataset, then info.title; then we fall back to the file name.
    const fromTitle = typeof info.title === "string" ? slug(info.title) : "";
    const fromFile = this.file !== undefined ? slug(basename(this.file, extname(this.file))) : "";
    const derived = fromTitle || fromFile;
    if (derived === "") {
      this.missing(data, [], "dataset", "a dataset name (it names the table and the checkpoint key), or an info.title to derive it from");
      return "invalid";
    }
    const from = fromTitle ? "info.title" : "the file name";
    this.warn(
      [],
      `dataset is not set; using '${derived}' from ${from}. The table name and the checkpoint key derive from it: set dataset to keep them stable`,
      "derived",
    );
    return derived;
  }

  primaryKey(data: Obj, fields: ParsedField[]): string[] {
    const pk = this.strList(data["primary_key"], ["primary_key"]) ?? [];
    pk.forEach((k, i) => {
      if (this.fieldNames.length === 0) return;
      const hit = this.fieldByLower.get(k.toLowerCase());
      if (hit !== undefined) {
        pk[i] = hit;
        return;
      }
      const guess = didYouMean(k, this.fieldNames);
      const path = typeof data["primary_key"] === "string" ? ["primary_key"] : ["primary_key", i];
      this.error(
        path,
        `'${k}' is not a field of this contract${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`,
        `one of the fields under model.fields: ${this.fieldNames.join(", ")}`,
      );
    });
    // `primary_key: true` on a field must agree with the top-level list (the original refuses it elsewhere).
    for (const f of fields) {
      if (f.primaryKeyFlag && !pk.some((k) => k.toLowerCase() === f.spec.name.toLowerCase())) {
        this.error(
          [...f.path, "primary_key"],
          `field-level primary_key is not read; list '${f.spec.name}' in the top-level primary_key instead`,
          `primary_key: [${f.spec.name}] at the top level of the contract`,
        );
      }
    }
    return pk;
  }

  fields(data: Obj): ParsedField[] {
    const model = this.map(data["model"], ["model"]);
    if (!model) {
      if (data["fields"] !== undefined) {
        this.warn(["fields"], "top-level fields are not read; declare them under model.fields", "unsupported");
      }
      return [];
    }
    this.checkKeys(model, ["model"], [...MODEL_KEYS, "primary_key"], "model");
    if (model["primary_key"] !== undefined) {
      this.error(["model", "primary_key"], "primary_key belongs at the top level of the contract, not under model", "primary_key: [...] at the top level");
    }
    const items = this.list(model["fields"], ["model", "fields"], "a list of fields ({name, type, …})") ?? [];
    const out: ParsedField[] = [];
    const seen = new Map<string, YamlPath>();
    items.forEach((item, i) => {
      const path: YamlPath = ["model", "fields", i];
      const f = this.field(item, path);
      if (!f) return;
      const lower = f.spec.name.toLowerCase();
      const before = seen.get(lower);
      if (before !== undefined) {
        this.error([...path, "name"], `duplicate field '${f.spec.name}' (also declared at ${formatPath(before)})`, "each field declared once (names compare case-insensitively)");
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
          this.error([...f.path, "aliases"], `alias '${a}' is the name of a declared field (${formatPath(clash)})`, "aliases that are not field names");
        }
      }
    }
    return out;
  }

  field(item: unknown, path: YamlPath): ParsedField | undefined {
    const m = this.map(item, path, "a field mapping ({name, type, …})");
    if (!m) {
      if (item === null || item === undefined) this.error(path, "empty field entry", "a field mapping ({name, type, …})");
      return undefined;
    }
    this.checkKeys(m, path, FIELD_KEYS, "a field");
    if (m["name"] === undefined) {
      this.missing(m, path, "name", "the field's name");
      return undefined;
    }
    const name = this.nonEmptyStr(m["name"], [...path, "name"]);
    if (name === undefined) return undefined;
    // Field names end up quoted inside SQL and in file headers: no control or invisible characters.
    const bad = /[\u0000-\u001f\u007f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/u.exec(name);
    if (bad) {
      const cp = `U+${(bad[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
      this.error([...path, "name"], `field name contains the control or invisible character ${cp}`, "a name of visible characters");
      return undefined;
    }
    let declaredType = "string";
    let parsed: ReturnType<typeof parseFieldType> | undefined;
    if (m["type"] === undefined) {
      this.missing(m, path, "type", "a type: string, integer, double, decimal, boolean, date, timestamp or json");
    } else {
      const t = this.nonEmptyStr(m["type"], [...path, "type"], "a type name");
      if (t !== undefined) {
        declaredType = t;
        parsed = parseFieldType(t);
        if (!parsed.ok) {
          const guess = didYouMean(t.toLowerCase(), typeNames());
          this.error([...path, "type"], parsed.message + (guess !== undefined ? ` (did you mean ${guess}?)` : ""), parsed.expected);
        } else if (parsed.note !== undefined) {
          this.warn([...path, "type"], parsed.note, "unsupported");
        }
      }
    }
    const required = this.bool(m["required"], [...path, "required"]) ?? false;
    const nullableGiven = this.bool(m["nullable"], [...path, "nullable"]);
    if (required && nullableGiven === true) {
      this.warn([...path, "nullable"], `field '${name}' is both required and nullable; required wins (nulls are rejected)`, "suspicious");
    }
    const spec: FieldSpec = {
      name,
      type: parsed?.ok ? parsed.type : "string",
      declaredType,
      required,
      nullable: nullableGiven ?? !required,
      pii: this.bool(m["pii"], [...path, "pii"]) ?? false,
      aliases: this.strList(m["aliases"], [...path, "aliases"], "a name or a list of names") ?? [],
    };
    if (parsed?.ok && parsed.precision !== undefined) {
      spec.precision = parsed.precision;
      spec.scale = parsed.scale;
    }
    const description = this.str(m["description"], [...path, "description"]);
    if (description !== undefined) spec.description = description;
    const loc = this.loc(path);
    if (loc) spec.loc = loc;

    if (m["accepted_values"] !== undefined && m["accepted_values"] !== null) {
      const values = this.scalarList(m["accepted_values"], [...path, "accepted_values"]);
      if (values) spec.acceptedValues = values;
    }
    for (const bound of ["min", "max"] as const) {
      const v = m[bound];
      if (v === undefined || v === null) continue;
      if (typeof v === "number" || typeof v === "string") spec[bound] = v;
      else this.error([...path, bound], `found ${describe(v)}`, "a number (or a date/time string)");
    }
    if (m["max_length"] !== undefined && m["max_length"] !== null) {
      const n = this.num(m["max_length"], [...path, "max_length"], "a whole number of characters");
      if (n !== undefined) {
        if (!Number.isInteger(n) || n < 0) this.error([...path, "max_length"], `found ${n}`, "a whole number of characters");
        else spec.maxLength = n;
      }
    }
    if (m["unique"] === true) {
      this.error([...path, "unique"], `field-level unique is not read`, `a dataset rule: quality.dataset_rules: [{unique: ${name}}]`);
    }
    const primaryKeyFlag = this.bool(m["primary_key"], [...path, "primary_key"]) === true;
    const rules = this.list(m["rules"], [...path, "rules"], "a list of rules") ?? [];
    return { spec, path, primaryKeyFlag, rules };
  }

  scalarList(v: unknown, path: YamlPath): Scalar[] | undefined {
    const items = this.list(v, path, "a non-empty list of values");
    if (!items) return undefined;
    if (items.length === 0) {
      this.error(path, "is empty", "a non-empty list of values");
      return undefined;
    }
    const out: Scalar[] = [];
    items.forEach((x, i) => {
      if (typeof x === "string" || typeof x === "number" || typeof x === "boolean") out.push(x);
      else this.error([...path, i], `found ${describe(x)}`, "a string, number or boolean value");
    });
    return out;
  }

  // ── row rules ──

  rowRules(quality: Obj): Array<RuleDraft<RowRule>> {
    const items = this.list(quality["row_rules"], ["quality", "row_rules"], "a list of rules") ?? [];
    const out: Array<RuleDraft<RowRule>> = [];
    items.forEach((item, i) => {
      out.push(...this.rowRule(item, ["quality", "row_rules", i], { index: i, origin: "declared" }));
    });
    return out;
  }

  rowRule(
    item: unknown,
    path: YamlPath,
    ctx: { index: number; origin: "declared" | "field"; field?: string },
  ): Array<RuleDraft<RowRule>> {
    const m = this.map(item, path, "a rule mapping such as {not_null: field} or {name, sql}");
    if (!m) {
      if (item === null || item === undefined) this.error(path, "empty rule entry", "a rule mapping such as {not_null: field} or {name, sql}");
      return [];
    }
    const kinds = Object.keys(m).filter((k) => ROW_KINDS.includes(k) || k === "sql");
    if (kinds.length > 1) {
      this.error([...path, kinds[1]!], `one rule per list item, found ${kinds.join(" and ")}`, "a separate list item for each rule");
      return [];
    }
    const kind = kinds[0];
    if (kind === undefined) {
      const dsKind = Object.keys(m).find((k) => DATASET_KINDS.includes(k));
      if (dsKind !== undefined) {
        this.error([...path, dsKind], `${dsKind} is a dataset rule`, "it under quality.dataset_rules");
        return [];
      }
      this.unknownKind(m, path, [...ROW_KINDS, "sql"], "a row rule: not_null, accepted_values, regex_match, range, or name + sql");
      return [];
    }
    this.checkKeys(m, path, [...RULE_LABEL_KEYS, kind], "a rule");
    const beside = this.labels(m, path);

    if (kind === "sql") {
      const sql = this.nonEmptyStr(m["sql"], [...path, "sql"], "a SQL boolean expression");
      if (sql === undefined) return [];
      const id = beside.name ?? (ctx.field !== undefined ? `sql:${ctx.field}:${ctx.index}` : `sql:${ctx.index}`);
      return [{ rule: { ...this.base(id, beside, path, ctx.origin), kind: "sql", sql, ...this.sqlLoc(path) }, path, sqlPath: [...path, "sql"] }];
    }
    if (kind === "referential_integrity" || kind === "lifecycle_window") {
      this.warn(path, `${kind} rules check rows against reference data, which this runtime does not load; the rule is not enforced`, "unsupported");
      return [];
    }
    const value = m[kind];
    if (kind === "not_null") return this.notNull(value, [...path, kind], path, beside, ctx);

    // The remaining kinds take a config mapping; inside labels win over the ones beside.
    const cfgPath: YamlPath = [...path, kind];
    let cfg: Obj | undefined;
    if (kind === "accepted_values" && Array.isArray(value) && ctx.field !== undefined) cfg = { values: value };
    else cfg = this.map(value, cfgPath, `a mapping, e.g. ${kind}: {field: …}`);
    if (!cfg) {
      if (value === null || value === undefined) this.error(cfgPath, "is empty", `a mapping, e.g. ${kind}: {field: …}`);
      return [];
    }
    const specific: Record<string, string[]> = {
      accepted_values: ["field", "column", "values"],
      regex_match: ["field", "column", "pattern"],
      range: ["field", "column", "min", "max", "inclusive"],
    };
    this.checkKeys(cfg, cfgPath, [...RULE_LABEL_KEYS, ...(specific[kind] ?? [])], kind);
    const labels = { ...beside, ...this.labels(cfg, cfgPath, beside) };
    const field = this.ruleField(cfg, cfgPath, ctx.field);
    if (field === undefined) return [];

    if (kind === "accepted_values") {
      if (cfg["values"] === undefined) {
        this.missing(cfg, cfgPath, "values", "a non-empty list of accepted values");
        return [];
      }
      const values = this.scalarList(cfg["values"], [...cfgPath, "values"]);
      if (!values) return [];
      const id = labels.name ?? `accepted_values:${field}`;
      return [{ rule: { ...this.base(id, labels, path, ctx.origin), kind, field, values }, path }];
    }
    if (kind === "regex_match") {
      if (cfg["pattern"] === undefined) {
        this.missing(cfg, cfgPath, "pattern", "a regular expression");
        return [];
      }
      const pattern = this.str(cfg["pattern"], [...cfgPath, "pattern"], "a regular expression");
      if (pattern === undefined) return [];
      const bad = regexProblem(pattern);
      if (bad !== undefined) {
        this.error([...cfgPath, "pattern"], bad, "a regular expression in RE2 syntax (no look-around, no backreferences)");
        return [];
      }
      const id = labels.name ?? `regex_match:${field}`;
      return [{ rule: { ...this.base(id, labels, path, ctx.origin), kind, field, pattern }, path }];
    }
    // range
    const inclusive = this.bool(cfg["inclusive"], [...cfgPath, "inclusive"]) ?? true;
    const id = labels.name ?? `range:${field}`;
    const rule = this.rangeRule(id, labels, path, ctx.origin, field, cfg["min"], cfg["max"], inclusive, cfgPath);
    return rule ? [{ rule, path, rangeField: field }] : [];
  }

  /** A range: numeric bounds make a `range` rule; date/time strings (as the original allows) a `sql` rule. */
  rangeRule(
    id: string,
    labels: Labels,
    path: YamlPath,
    origin: NonNullable<RowRule["origin"]>,
    field: string,
    minRaw: unknown,
    maxRaw: unknown,
    inclusive: boolean,
    cfgPath: YamlPath,
  ): RowRule | undefined {
    const bounds: Array<[string, unknown]> = [["min", minRaw], ["max", maxRaw]];
    const given = bounds.filter(([, v]) => v !== undefined && v !== null);
    if (given.length === 0) {
      this.error(cfgPath, "a range needs min, max or both", "min and/or max");
      return undefined;
    }
    for (const [k, v] of given) {
      if (typeof v !== "number" && typeof v !== "string") {
        this.error([...cfgPath, k], `found ${describe(v)}`, "a number (or a date/time string)");
        return undefined;
      }
    }
    const numeric = given.every(([, v]) => typeof v === "number");
    const min = minRaw as number | string | undefined | null;
    const max = maxRaw as number | string | undefined | null;
    if (numeric) {
      if (typeof min === "number" && typeof max === "number" && min > max) {
        this.error(cfgPath, `min ${min} is greater than max ${max}`, "min <= max");
        return undefined;
      }
      const r: RowRule = { ...this.base(id, labels, path, origin), kind: "range", field, inclusive };
      if (typeof min === "number") r.min = min;
      if (typeof max === "number") r.max = max;
      return r;
    }
    const q = quoteIdent(field);
    const parts: string[] = [];
    if (min !== undefined && min !== null) parts.push(`${q} ${inclusive ? ">=" : ">"} ${sqlLiteral(min)}`);
    if (max !== undefined && max !== null) parts.push(`${q} ${inclusive ? "<=" : "<"} ${sqlLiteral(max)}`);
    return { ...this.base(id, labels, path, origin), kind: "sql", sql: parts.join(" AND ") };
  }

  notNull(
    value: unknown,
    valuePath: YamlPath,
    path: YamlPath,
    beside: Labels,
    ctx: { origin: "declared" | "field"; field?: string },
  ): Array<RuleDraft<RowRule>> {
    // Forms: "f" | [f, {field: g, …}] | {field: f, …} | {fields: [f, g], …}; in a field's own rules, nothing (the field itself).
    const targets: Array<{ field: string; labels: Labels; path: YamlPath }> = [];
    const one = (item: unknown, p: YamlPath, inherited: Labels): void => {
      if (typeof item === "string") {
        if (item.trim() === "") this.error(p, "is empty", "a field name");
        else targets.push({ field: this.fieldRef(item.trim(), p), labels: inherited, path: p });
        return;
      }
      const cfg = this.map(item, p, "a field name or {field: …}");
      if (!cfg) return;
      this.checkKeys(cfg, p, [...RULE_LABEL_KEYS, "field", "column"], "not_null");
      const field = this.ruleField(cfg, p, ctx.field);
      if (field !== undefined) targets.push({ field, labels: { ...inherited, ...this.labels(cfg, p, inherited) }, path: p });
    };
    if ((value === null || value === true) && ctx.field !== undefined) {
      targets.push({ field: ctx.field, labels: beside, path: valuePath });
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => one(item, [...valuePath, i], beside));
    } else if (isObj(value) && (value["fields"] !== undefined || value["columns"] !== undefined)) {
      const key = value["fields"] !== undefined ? "fields" : "columns";
      this.checkKeys(value, valuePath, [...RULE_LABEL_KEYS, "fields", "columns"], "not_null");
      const shared = { ...beside, ...this.labels(value, valuePath, beside) };
      const list = this.list(value[key], [...valuePath, key], "a list of field names") ?? [];
      if (list.length === 0) this.error([...valuePath, key], "is empty", "a non-empty list of field names");
      list.forEach((item, i) => one(item, [...valuePath, key, i], shared));
    } else if (value === null || value === undefined) {
      this.error(valuePath, "is empty", "a field name, a list of field names, or {field: …}");
    } else {
      one(value, valuePath, beside);
    }
    const many = targets.length > 1;
    return targets.map((t) => {
      // One name shared by several fields would collide; suffix the field to keep ids unique.
      const id = t.labels.name !== undefined ? (many ? `${t.labels.name}:${t.field}` : t.labels.name) : `not_null:${t.field}`;
      return { rule: { ...this.base(id, t.labels, path, ctx.origin), kind: "not_null", field: t.field }, path: t.path };
    });
  }

  ruleField(cfg: Obj, cfgPath: YamlPath, defaultField: string | undefined): string | undefined {
    const key = cfg["field"] !== undefined ? "field" : cfg["column"] !== undefined ? "column" : undefined;
    if (key === undefined) {
      if (defaultField !== undefined) return defaultField;
      this.missing(cfg, cfgPath, "field", "the name of the field the rule checks");
      return undefined;
    }
    const name = this.nonEmptyStr(cfg[key], [...cfgPath, key], "a field name");
    return name === undefined ? undefined : this.fieldRef(name, [...cfgPath, key]);
  }

  unknownKind(m: Obj, path: YamlPath, kinds: readonly string[], expected: string): void {
    const candidates = Object.keys(m).filter((k) => !RULE_LABEL_KEYS.includes(k));
    for (const k of candidates) {
      const guess = didYouMean(k, kinds);
      if (guess !== undefined) {
        this.error([...path, k], `unknown rule kind '${k}' (did you mean ${guess}?)`, expected);
        return;
      }
    }
    if (candidates.length > 0) this.error([...path, candidates[0]!], `unknown rule kind '${candidates[0]}'`, expected);
    else this.error(path, "the rule says nothing to check", expected);
  }

  labels(m: Obj, path: YamlPath, inherited?: Labels): Labels {
    const out: Labels = {};
    const name = this.nonEmptyStr(m["name"], [...path, "name"], "a rule name");
    if (name !== undefined) out.name = name;
    if (m["severity"] !== undefined) out.severity = this.severity(m["severity"], [...path, "severity"]);
    else if (inherited?.severity !== undefined) out.severity = inherited.severity;
    const category = this.str(m["category"], [...path, "category"]);
    if (category !== undefined) out.category = category.trim().toLowerCase();
    const description = this.str(m["description"], [...path, "description"]);
    if (description !== undefined) out.description = description;
    return out;
  }

  base(id: string, labels: Labels, path: YamlPath, origin: NonNullable<RowRule["origin"]>) {
    const b: { id: string; severity: Severity; origin: NonNullable<RowRule["origin"]>; description?: string; category?: string; loc?: SourceLoc } = {
      id,
      severity: labels.severity ?? "error",
      origin,
    };
    if (labels.description !== undefined) b.description = labels.description;
    if (labels.category !== undefined) b.category = labels.category;
    const loc = this.loc(path);
    if (loc) b.loc = loc;
    return b;
  }

  /** Point a sql rule's location at its `sql` key rather than the list item. */
  sqlLoc(path: YamlPath): { loc?: SourceLoc } {
    const loc = this.loc([...path, "sql"]);
    return loc ? { loc } : {};
  }

  /** Rules implied by field declarations, first (in field order), then the declared ones. */
  implicitRules(fields: ParsedField[], declared: Array<RuleDraft<RowRule>>, enforceRequired: boolean): Array<RuleDraft<RowRule>> {
    const fieldRuleDrafts = new Map<string, Array<RuleDraft<RowRule>>>();
    for (const f of fields) {
      const drafts: Array<RuleDraft<RowRule>> = [];
      f.rules.forEach((item, j) => {
        drafts.push(...this.rowRule(item, [...f.path, "rules", j], { index: j, origin: "field", field: f.spec.name }));
      });
      fieldRuleDrafts.set(f.spec.name, drafts);
    }
    // Guard every sql rule now that the field list is known (generated ones too: they embed field names).
    for (const d of [...declared, ...[...fieldRuleDrafts.values()].flat()]) {
      if (d.rule.kind === "sql") this.checkSql(d.rule.sql, d.sqlPath ?? d.path);
    }
    const covered = coveredFields([...declared, ...[...fieldRuleDrafts.values()].flat()]);
    const out: Array<RuleDraft<RowRule>> = [];
    for (const f of fields) {
      const s = f.spec;
      const lower = s.name.toLowerCase();
      const q = quoteIdent(s.name);
      if (enforceRequired && (s.required || !s.nullable) && !covered.notNull.has(lower)) {
        const why = s.required ? "required" : "not nullable";
        out.push({
          rule: {
            ...this.base(`not_null:${s.name}`, { category: "completeness", description: `${s.name} is ${why}` }, f.path, "required"),
            kind: "not_null",
            field: s.name,
          },
          path: [...f.path, s.required ? "required" : "nullable"],
        });
      }
      out.push(...(fieldRuleDrafts.get(s.name) ?? []));
      if (s.acceptedValues !== undefined && !covered.acceptedValues.has(lower)) {
        out.push({
          rule: {
            ...this.base(`accepted_values:${s.name}`, { category: "validity", description: `${s.name} is one of the accepted values` }, [...f.path, "accepted_values"], "field"),
            kind: "accepted_values",
            field: s.name,
            values: s.acceptedValues,
          },
          path: [...f.path, "accepted_values"],
        });
      }
      if ((s.min !== undefined || s.max !== undefined) && !covered.range.has(lower)) {
        const p: YamlPath = [...f.path, s.min !== undefined ? "min" : "max"];
        const r = this.rangeRule(`range:${s.name}`, { category: "validity" }, p, "field", s.name, s.min, s.max, true, f.path);
        if (r) {
          if (r.kind === "sql") this.checkSql(r.sql, p);
          out.push({ rule: r, path: p });
        }
      }
      if (s.maxLength !== undefined) {
        const p: YamlPath = [...f.path, "max_length"];
        this.checkSql(`${q} IS NULL OR length(${q}) <= ${s.maxLength}`, p);
        out.push({
          rule: {
            ...this.base(`max_length:${s.name}`, { category: "validity", description: `${s.name} is at most ${s.maxLength} characters` }, p, "field"),
            kind: "sql",
            sql: `${q} IS NULL OR length(${q}) <= ${s.maxLength}`,
          },
          path: p,
        });
      }
    }
    out.push(...declared);
    return out;
  }

  // ── dataset rules ──

  datasetRules(quality: Obj): Array<RuleDraft<DatasetRule>> {
    const items = this.list(quality["dataset_rules"], ["quality", "dataset_rules"], "a list of rules") ?? [];
    const out: Array<RuleDraft<DatasetRule>> = [];
    items.forEach((item, i) => {
      const path: YamlPath = ["quality", "dataset_rules", i];
      const r = this.datasetRule(item, path);
      if (r) out.push({ rule: r, path });
    });
    return out;
  }

  datasetRule(item: unknown, path: YamlPath): DatasetRule | undefined {
    const expected = "a dataset rule: unique, null_ratio or row_count_between";
    const m = this.map(item, path, expected);
    if (!m) {
      if (item === null || item === undefined) this.error(path, "empty rule entry", expected);
      return undefined;
    }
    const kinds = Object.keys(m).filter((k) => DATASET_KINDS.includes(k) || k === "sql");
    if (kinds.length > 1) {
      this.error([...path, kinds[1]!], `one rule per list item, found ${kinds.join(" and ")}`, "a separate list item for each rule");
      return undefined;
    }
    const kind = kinds[0];
    if (kind === undefined) {
      const rowKind = Object.keys(m).find((k) => ROW_KINDS.includes(k));
      if (rowKind !== undefined) {
        this.error([...path, rowKind], `${rowKind} is a row rule`, "it under quality.row_rules");
        return undefined;
      }
      this.unknownKind(m, path, DATASET_KINDS, expected);
      return undefined;
    }
    if (kind === "sql") {
      this.checkKeys(m, path, [...RULE_LABEL_KEYS, "sql", ...DATASET_SQL_KEYS], "a rule");
      this.warn(path, "SQL dataset rules (aggregate queries) are not evaluated by this runtime; the rule is not enforced", "unsupported");
      return undefined;
    }
    this.checkKeys(m, path, [...RULE_LABEL_KEYS, kind], "a rule");
    const beside = this.labels(m, path);
    const value = m[kind];
    const vPath: YamlPath = [...path, kind];

    if (kind === "unique") {
      // "f" | [f, g] | {field: f} | {fields: [f, g]}; labels inside or beside.
      let labels = beside;
      let names: string[] | undefined;
      let namesPath: YamlPath = vPath;
      let listed = Array.isArray(value);
      if (isObj(value)) {
        this.checkKeys(value, vPath, [...RULE_LABEL_KEYS, "field", "fields", "columns", "column"], "unique");
        labels = { ...beside, ...this.labels(value, vPath, beside) };
        const key = ["fields", "columns", "field", "column"].find((k) => value[k] !== undefined);
        if (key === undefined) {
          this.missing(value, vPath, "field", "field: name, or fields: [names]");
          return undefined;
        }
        namesPath = [...vPath, key];
        listed = Array.isArray(value[key]);
        names = this.strList(value[key], namesPath);
      } else if (value === null || value === undefined) {
        this.error(vPath, "is empty", "a field name or a list of field names");
        return undefined;
      } else {
        names = this.strList(value, vPath);
      }
      if (!names) return undefined;
      if (names.length === 0) {
        this.error(namesPath, "is empty", "at least one field name");
        return undefined;
      }
      const fields = names.map((n, i) => this.fieldRef(n, listed ? [...namesPath, i] : namesPath));
      return { ...this.base(labels.name ?? `unique:${fields.join(",")}`, labels, path, "declared"), kind: "unique", fields };
    }

    const cfg = this.map(value, vPath, `a mapping, e.g. ${kind}: {…}`);
    if (!cfg) {
      if (value === null || value === undefined) this.error(vPath, "is empty", `a mapping, e.g. ${kind}: {…}`);
      return undefined;
    }
    const labels = { ...beside, ...this.labels(cfg, vPath, beside) };
    if (kind === "null_ratio") {
      this.checkKeys(cfg, vPath, [...RULE_LABEL_KEYS, "field", "column", "max", "threshold"], "null_ratio");
      const field = this.ruleField(cfg, vPath, undefined);
      const key = cfg["max"] !== undefined ? "max" : cfg["threshold"] !== undefined ? "threshold" : undefined;
      if (key === undefined) {
        this.missing(cfg, vPath, "max", "the largest accepted share of nulls, from 0 to 1");
        return undefined;
      }
      let max = this.num(cfg[key], [...vPath, key], "a ratio from 0 to 1");
      if (field === undefined || max === undefined) return undefined;
      if (max > 1 && max <= 100) {
        // The original reads values above 1 as percentages.
        this.warn([...vPath, key], `${max} is read as a percentage (${max / 100}); write ${max / 100} to silence this`, "suspicious");
        max = max / 100;
      } else if (max < 0 || max > 100) {
        this.error([...vPath, key], `found ${max}`, "a ratio from 0 to 1");
        return undefined;
      }
      return { ...this.base(labels.name ?? `null_ratio:${field}`, labels, path, "declared"), kind: "null_ratio", field, max };
    }
    // row_count_between
    this.checkKeys(cfg, vPath, [...RULE_LABEL_KEYS, "min", "max"], "row_count_between");
    const min = this.num(cfg["min"], [...vPath, "min"], "a whole number of rows");
    const max = this.num(cfg["max"], [...vPath, "max"], "a whole number of rows");
    if (min === undefined && max === undefined) {
      if (cfg["min"] === undefined && cfg["max"] === undefined) this.error(vPath, "needs min, max or both", "min and/or max row counts");
      return undefined;
    }
    if (min !== undefined && max !== undefined && min > max) {
      this.error(vPath, `min ${min} is greater than max ${max}`, "min <= max");
      return undefined;
    }
    const r: DatasetRule = { ...this.base(labels.name ?? "row_count_between", labels, path, "declared"), kind: "row_count_between" };
    if (min !== undefined) r.min = min;
    if (max !== undefined) r.max = max;
    return r;
  }

  checkUniqueIds(rowRules: Array<RuleDraft<RowRule>>, datasetRules: Array<RuleDraft<DatasetRule>>): void {
    const seen = new Map<string, YamlPath>();
    for (const d of [...rowRules, ...datasetRules]) {
      const before = seen.get(d.rule.id);
      if (before === undefined) {
        seen.set(d.rule.id, d.path);
        continue;
      }
      this.error(
        d.path,
        `duplicate rule id '${d.rule.id}' (also used by ${formatPath(before)})`,
        "a unique name for each rule: add or change `name`",
      );
    }
  }

  // ── materialization, quarantine, schema policy, source, trigger, service levels ──

  materialization(data: Obj, dataset: string, info: Contract["info"]): Materialization {
    const path: YamlPath = ["materialization"];
    const m = this.map(data["materialization"], path) ?? {};
    this.checkKeys(m, path, MATERIALIZATION_KEYS, "materialization");
    let strategy: Strategy = "append";
    const given = this.str(m["strategy"], [...path, "strategy"]);
    if (given !== undefined) {
      const t = given.trim().toLowerCase();
      if ((STRATEGIES as readonly string[]).includes(t)) strategy = t as Strategy;
      else {
        const guess = didYouMean(t, STRATEGIES);
        this.error([...path, "strategy"], `unknown strategy '${given}'${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`, "append, merge, overwrite or scd2");
      }
    }
    const fmt = this.format(m["format"], [...path, "format"], "duckdb");
    const table = this.nonEmptyStr(m["table"], [...path, "table"]) ?? (typeof info.tableName === "string" && info.tableName.trim() !== "" ? info.tableName.trim() : dataset);
    const out: Materialization = {
      strategy,
      strategyDeclared: given !== undefined,
      format: fmt.format,
      table,
      partitionBy: this.strList(m["partition_by"], [...path, "partition_by"]) ?? [],
    };
    if (fmt.declared !== undefined) out.declaredFormat = fmt.declared;
    const target = this.nonEmptyStr(m["target_path"], [...path, "target_path"]) ?? this.nonEmptyStr(m["location"], [...path, "location"]);
    if (target !== undefined) out.targetPath = target;
    out.partitionBy.forEach((p, i) => {
      if (this.fieldNames.length === 0) return;
      const hit = this.fieldByLower.get(p.toLowerCase());
      if (hit !== undefined) out.partitionBy[i] = hit;
      else {
        const guess = didYouMean(p, this.fieldNames);
        this.warn([...path, "partition_by"], `partition column '${p}' is not a field of this contract${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`, "suspicious");
      }
    });
    return out;
  }

  format(v: unknown, path: YamlPath, fallback: LakeFormat): { format: LakeFormat; declared?: string } {
    const s = this.str(v, path, "duckdb or parquet");
    if (s === undefined) return { format: fallback };
    const t = s.trim().toLowerCase();
    if ((FORMATS as readonly string[]).includes(t)) return { format: t as LakeFormat };
    const guess = didYouMean(t, FORMATS);
    if (guess !== undefined) {
      this.error(path, `unknown format '${s}' (did you mean ${guess}?)`, "duckdb or parquet");
      return { format: fallback };
    }
    // Formats of the original (delta, iceberg, csv…) load, so the contract stays shared; they are not written here.
    this.warn(path, `format '${s}' is not written by this runtime (duckdb, parquet); '${fallback}' is used instead`, "unsupported");
    return { format: fallback, declared: s };
  }

  quarantine(data: Obj, mat: Materialization): QuarantineSpec {
    const path: YamlPath = ["quarantine"];
    const rawQ = data["quarantine"];
    const defaults: QuarantineSpec = { enabled: true, target: `${mat.table}_quarantine`, format: mat.format, includeErrorReason: true };
    if (typeof rawQ === "boolean") return { ...defaults, enabled: rawQ };
    const m = this.map(rawQ, path, "a mapping or true/false") ?? {};
    this.checkKeys(m, path, QUARANTINE_KEYS, "quarantine");
    const fmt = this.format(m["format"], [...path, "format"], mat.format);
    const out: QuarantineSpec = {
      enabled: this.bool(m["enabled"], [...path, "enabled"]) ?? true,
      target:
        this.nonEmptyStr(m["target"], [...path, "target"]) ??
        this.nonEmptyStr(m["table"], [...path, "table"]) ??
        this.nonEmptyStr(m["location"], [...path, "location"]) ??
        defaults.target,
      format: fmt.format,
      includeErrorReason: this.bool(m["include_error_reason"], [...path, "include_error_reason"]) ?? true,
    };
    if (fmt.declared !== undefined) out.declaredFormat = fmt.declared;
    return out;
  }

  schemaPolicy(data: Obj): SchemaPolicy {
    const policy: SchemaPolicy = { evolution: "allow", unknownFields: "allow" };
    const read = (m: Obj, path: YamlPath): void => {
      this.checkKeys(m, path, SCHEMA_POLICY_KEYS, "schema_policy");
      const evo = this.str(m["evolution"], [...path, "evolution"]);
      if (evo !== undefined) {
        const t = evo.trim().toLowerCase();
        if (EVOLUTIONS.includes(t)) policy.evolution = t;
        else {
          const guess = didYouMean(t, EVOLUTIONS);
          this.error([...path, "evolution"], `unknown evolution '${evo}'${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`, EVOLUTIONS.join(", "));
        }
      }
      const uf = this.str(m["unknown_fields"], [...path, "unknown_fields"]);
      if (uf !== undefined) {
        const t = uf.trim().toLowerCase();
        if ((UNKNOWN_FIELDS as readonly string[]).includes(t)) policy.unknownFields = t as UnknownFieldsPolicy;
        else {
          const guess = didYouMean(t, UNKNOWN_FIELDS);
          this.error([...path, "unknown_fields"], `unknown policy '${uf}'${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`, "quarantine, drop or allow");
        }
      }
    };
    const top = this.map(data["schema_policy"], ["schema_policy"]);
    if (top) read(top, ["schema_policy"]);
    // The original also reads server.schema_policy (which wins) and two legacy server keys.
    const server = isObj(data["server"]) ? data["server"] : undefined;
    if (server) {
      const evo = server["schema_evolution"];
      if (typeof evo === "string" && (!top || top["evolution"] === undefined)) {
        read({ evolution: evo }, ["server", "schema_evolution"]);
        if (evo.toLowerCase() === "strict" && (!top || top["unknown_fields"] === undefined)) policy.unknownFields = "quarantine";
      }
      const drift = server["allow_schema_drift"];
      if (typeof drift === "boolean" && (!top || top["unknown_fields"] === undefined)) policy.unknownFields = drift ? "allow" : "quarantine";
      const nested = this.map(server["schema_policy"], ["server", "schema_policy"]);
      if (nested) read(nested, ["server", "schema_policy"]);
    }
    return policy;
  }

  source(data: Obj): Contract["source"] {
    const m = this.map(data["source"], ["source"]);
    if (!m) return undefined;
    if (m["type"] === undefined) {
      this.missing(m, ["source"], "type", "the source type, e.g. kafka, sse, sqs, table");
      return undefined;
    }
    const type = this.nonEmptyStr(m["type"], ["source", "type"], "the source type, e.g. kafka, sse, sqs, table");
    if (type === undefined) return undefined;
    return { ...m, type };
  }

  trigger(data: Obj): string | undefined {
    // Wherever the original's lint finds it: top level, then source, then materialization.
    const holders: Array<[unknown, YamlPath]> = [
      [data, []],
      [data["source"], ["source"]],
      [data["materialization"], ["materialization"]],
    ];
    for (const [holder, base] of holders) {
      if (!isObj(holder) || holder["trigger"] === undefined || holder["trigger"] === null) continue;
      const path: YamlPath = [...base, "trigger"];
      const t = holder["trigger"];
      if (isObj(t)) {
        const key = t["mode"] !== undefined ? "mode" : "type";
        const s = this.nonEmptyStr(t[key], [...path, key], "available_now, continuous, micro_batch or processing_time");
        return s === undefined ? undefined : normaliseTrigger(s);
      }
      const s = this.nonEmptyStr(t, path, "available_now, continuous, micro_batch or processing_time");
      return s === undefined ? undefined : normaliseTrigger(s);
    }
    return undefined;
  }

  serviceLevels(data: Obj): Contract["serviceLevels"] {
    const m = this.map(data["service_levels"], ["service_levels"]);
    if (!m) return undefined;
    this.checkKeys(m, ["service_levels"], SERVICE_LEVEL_KEYS, "service_levels", true);
    const out: NonNullable<Contract["serviceLevels"]> = { ...m };
    delete out.freshness;
    const f = m["freshness"];
    if (f !== undefined && f !== null) {
      // `freshness: 15m` or, as in the original, `freshness: {threshold: 15m, …}`.
      const v = isObj(f) ? f["threshold"] : f;
      const s = this.str(v, isObj(f) ? ["service_levels", "freshness", "threshold"] : ["service_levels", "freshness"], "a duration such as 15m or 1h");
      if (s !== undefined) out.freshness = s;
    }
    return out;
  }

  unsupportedFeatures(data: Obj): void {
    const t = data["transformations"];
    if (Array.isArray(t) && t.length > 0) {
      this.warn(["transformations"], "transformations are not applied by this runtime; rules see records as they arrive", "unsupported");
    }
  }
}

interface Labels {
  name?: string;
  severity?: Severity;
  category?: string;
  description?: string;
}

interface ParsedField {
  spec: FieldSpec;
  path: YamlPath;
  primaryKeyFlag: boolean;
  rules: unknown[];
}

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

/**
 * Why a pattern is unusable, or undefined. Engines evaluate patterns with RE2 (DuckDB) or Rust's
 * regex (Polars), which have no look-around or backreferences: refuse those here, not mid-stream.
 */
export function regexProblem(pattern: string): string | undefined {
  if (/\(\?<?[=!]/.test(pattern)) return "look-around ((?=…), (?!…), (?<=…), (?<!…)) is not supported by the engines";
  if (/(^|[^\\])(\\\\)*\\[1-9]/.test(pattern) || /\\k</.test(pattern)) return "backreferences are not supported by the engines";
  // RE2 spellings JavaScript lacks: (?P<name>…) groups and leading inline flags.
  let js = pattern.replace(/\(\?P</g, "(?<");
  let flags = "";
  const inline = /^\(\?([imsU]+)\)/.exec(js);
  if (inline) {
    js = js.slice(inline[0].length);
    flags = [...new Set(inline[1]!.replace(/U/g, "").split(""))].join("");
  }
  try {
    new RegExp(js, flags);
    return undefined;
  } catch (e) {
    const msg = e instanceof Error ? e.message.replace(/^Invalid regular expression: /, "") : String(e);
    return `invalid regular expression: ${msg}`;
  }
}

// ── Public entry points ───────────────────────────────────────────────────────────────────

/** Normalise an already-parsed contract document. `doc` supplies positions when it came from YAML. */
function normalise(data: unknown, file: string | undefined, doc: YamlDoc | undefined): Contract {
  const n = new Normaliser(file, doc);
  if (data === undefined || data === null) {
    n.error([], "the contract is empty", "a mapping with dataset, model, quality, materialization, …");
    throw new ContractError(n.problems);
  }
  if (!isObj(data)) {
    n.error([], `the top level is ${describe(data)}`, "a mapping of contract keys (dataset, model, quality, …)");
    throw new ContractError(n.problems);
  }
  return n.run(data, data);
}

/** Parse and normalise contract YAML text. `file` is only used in messages and `Contract.file`. */
export function parseContract(text: string, file?: string): Contract {
  const doc = parseYaml(text, file);
  if (doc.errors.length > 0) {
    throw new ContractError(
      doc.errors.map((e) => ({ path: "", message: `invalid YAML: ${e.message}`, file, line: e.line, column: e.column })),
    );
  }
  return normalise(doc.data, file, doc);
}

/** Normalise a contract given as a plain object (no positions in messages). */
export function contractFromObject(data: Record<string, unknown>, file?: string): Contract {
  return normalise(data, file, undefined);
}

function looksLikePath(s: string, resolved: string): boolean {
  if (s.includes("\n")) return false;
  let exists = false;
  try {
    exists = existsSync(resolved) && statSync(resolved).isFile();
  } catch {
    exists = false;
  }
  if (exists) return true;
  // `dataset: orders.yaml` is one line of YAML, not a missing file.
  return /\.ya?ml$/i.test(s.trim()) && !/:\s/.test(s);
}

/**
 * Load a contract from a file path (a string ending in .yaml/.yml, or naming an existing file),
 * from YAML text (any other string), or from a plain object.
 */
export async function loadContract(input: string | Record<string, unknown>, options?: LoadContractOptions): Promise<Contract> {
  if (typeof input !== "string") {
    if (!isObj(input)) {
      throw new ContractError([{ path: "", message: `found ${describe(input)}`, expected: "a file path, YAML text or a contract object" }]);
    }
    return contractFromObject(input);
  }
  const trimmed = input.trim();
  const file = options?.baseDir !== undefined && !trimmed.startsWith("/") ? join(options.baseDir, trimmed) : trimmed;
  if (!looksLikePath(input, file)) return parseContract(input);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message = code === "ENOENT" ? "contract file not found" : `cannot read the contract file (${code ?? String(e)})`;
    throw new ContractError([{ path: "", message, file, expected: "a readable YAML file" }], { cause: e });
  }
  return parseContract(text, file);
}

/** The checkpoint key a stream uses unless told otherwise: `stream::<dataset>`, as in the original. */
export function defaultCheckpointKey(contract: Pick<Contract, "dataset">): string {
  return `stream::${contract.dataset}`;
}
