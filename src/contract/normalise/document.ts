/**
 * The whole document: reads each section in turn, then throws every problem found as one
 * `ContractError`, or returns the normalised `Contract` with its warnings in file order.
 */
import { ContractError } from "../errors.js";
import type { Contract, ContractWarning } from "../types.js";
import type { YamlDoc, YamlPos } from "../yaml.js";
import { NormaliseContext } from "./context.js";
import { readDataset, readInfo } from "./info.js";
import { readMaterialization } from "./materialization.js";
import { readFields, readPrimaryKey } from "./model.js";
import { readQuality } from "./quality.js";
import { readQuarantine } from "./quarantine.js";
import { asStr, checkKeys, describe, isObj, type Obj } from "./read.js";
import { readSchemaPolicy } from "./schema-policy.js";
import { readServiceLevels } from "./service-levels.js";
import { readSource } from "./source.js";
import { readTrigger } from "./trigger.js";

// An unknown top-level key close to one of these is an error (a misspelt section), any other a warning.
const TOP_KEYS = [
  "version", "info", "dataset", "primary_key", "model", "quality", "materialization", "quarantine",
  "schema_policy", "source", "trigger", "service_levels",
  // Read by the original, not by this runtime.
  "metadata", "server", "environments", "links", "natural_key", "lineage", "logic", "external_logic",
  "extraction", "upstream", "upstream_contracts", "upstream_sources", "downstream", "schedule",
  "transformations", "compliance", "tier", "layer", "target_layer", "soft_deletes", "ownership",
  "observatory", "streaming", "contract_file_name", "notifications", "extensions",
  // ODCS spellings the original accepts at the top level.
  "schema", "tables", "columns", "properties", "fields", "kind", "apiVersion", "type", "status",
  "description", "datasetDomain", "quantumName", "datasetName", "driver", "driverVersion", "servers",
  "price", "stakeholders", "roles", "slaDefaultColumn", "slaProperties", "tags", "customProperties",
] as const;

/**
 * The sections only a contract writes. YAML with none of them (a compose file, a CI workflow) is
 * not a misspelt contract: its keys are warned about, never errors, and callers refuse it as not
 * a contract (it declares no fields).
 */
const CONTRACT_SECTIONS = ["dataset", "model", "quality", "materialization", "quarantine", "schema_policy", "primary_key", "source", "trigger", "info"];

/** What resolving the registry and placeholders (inherit/) adds to a document's normalisation. */
export interface Resolution {
  /** Values taken from the registry: formatted key path → where they were written. */
  origins?: ReadonlyMap<string, { file: string; pos?: YamlPos }>;
  /** Findings made while resolving (registry keys not used, derived values, …). */
  warnings?: readonly ContractWarning[];
}

/** Normalise an already-parsed contract document. `doc` supplies positions when it came from YAML. */
export function normaliseDocument(data: unknown, file: string | undefined, doc: YamlDoc | undefined, resolution?: Resolution): Contract {
  const cx = new NormaliseContext(file, doc, resolution?.origins);
  if (resolution?.warnings) cx.warnings.push(...resolution.warnings);
  if (data === undefined || data === null) {
    cx.error([], "the contract is empty", "a mapping with dataset, model, quality, materialization, …");
    throw new ContractError(cx.problems);
  }
  if (!isObj(data)) {
    cx.error([], `the top level is ${describe(data)}`, "a mapping of contract keys (dataset, model, quality, …)");
    throw new ContractError(cx.problems);
  }
  return buildContract(cx, data);
}

function buildContract(cx: NormaliseContext, data: Obj): Contract {
  checkOdcs(cx, data);
  const contractLike = CONTRACT_SECTIONS.some((k) => k in data);
  checkKeys(cx, data, [], TOP_KEYS, "the contract", false, contractLike ? "error" : "warning");

  const version = asStr(cx, data["version"], ["version"]);
  const info = readInfo(cx, data);
  const fields = readFields(cx, data);
  cx.setFields(fields.map((f) => f.spec.name));
  const dataset = readDataset(cx, data, info);
  const primaryKey = readPrimaryKey(cx, data, fields);
  const { rowRules, datasetRules } = readQuality(cx, data, fields);
  const materialization = readMaterialization(cx, data, dataset, info);
  const quarantine = readQuarantine(cx, data, materialization);
  const schemaPolicy = readSchemaPolicy(cx, data);
  const source = readSource(cx, data);
  const trigger = readTrigger(cx, data);
  const serviceLevels = readServiceLevels(cx, data);
  unsupportedFeatures(cx, data);

  if (cx.problems.length > 0) {
    const sorted = [...cx.problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
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
    warnings: [...cx.warnings].sort((a, b) => (a.loc?.line ?? 0) - (b.loc?.line ?? 0) || (a.loc?.column ?? 0) - (b.loc?.column ?? 0)),
    raw: data,
  };
  if (version !== undefined) contract.version = version;
  if (source !== undefined) contract.source = source;
  if (trigger !== undefined) contract.trigger = trigger;
  if (serviceLevels !== undefined) contract.serviceLevels = serviceLevels;
  if (cx.file !== undefined) contract.file = cx.file;
  return contract;
}

function checkOdcs(cx: NormaliseContext, data: Obj): void {
  if (data["kind"] === "DataContract" && data["apiVersion"] !== undefined) {
    cx.error(
      ["kind"],
      "this is an Open Data Contract Standard (ODCS) document, which this loader does not convert",
      "a LakeLogic contract (dataset, model.fields, quality, materialization)",
    );
  }
}

function unsupportedFeatures(cx: NormaliseContext, data: Obj): void {
  const t = data["transformations"];
  if (Array.isArray(t) && t.length > 0) {
    cx.warn(["transformations"], "transformations are not applied by this runtime; rules see records as they arrive", "unsupported");
  }
}
