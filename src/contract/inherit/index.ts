/**
 * Resolve a contract against its registry (`_domain.yaml` → `_system.yaml` → environment →
 * contract, docs/contracts.md "Domain and system files") and fill its `{placeholders}`. Returns
 * the contract document as it runs, where each inherited value came from, and what was found.
 */
import { dirname, resolve as resolvePath } from "node:path";
import type { ContractProblem } from "../errors.js";
import { isObj, type Obj } from "../normalise/read.js";
import type { ContractWarning } from "../types.js";
import { formatPath, type YamlDoc, type YamlPath, type YamlPos } from "../yaml.js";
import { injectDefaults, type Injected } from "./inject.js";
import { mergeDomainSystem, unset, type MergeNote } from "./merge.js";
import { MAX_RESOLVED_LENGTH, substitute, type Substitution } from "./placeholders.js";
import { findRegistry, type RegistryFile, type RegistryFiles } from "./registry-files.js";
import { bindVars, DEFAULT_ENVIRONMENT, type BoundVars } from "./vars.js";
import { registryKeyWarnings } from "./keys.js";
import { indexEntryFor, layerOf } from "./layer.js";

export interface InheritOptions {
  /** Values for `{placeholders}` given at run time; they win over the registry's. */
  vars?: Readonly<Record<string, string>>;
  /** Which `environments.<name>` of the registry binds the placeholders (default `dev`, as in the original). */
  environment?: string;
}

/** Where a value of the resolved contract was written, when not in the contract file itself. */
export interface Origin {
  file: string;
  pos?: YamlPos;
}

export interface Inherited {
  data: Obj;
  problems: ContractProblem[];
  warnings: ContractWarning[];
  /** Formatted contract key path → where its (inherited) value was written. */
  origins: Map<string, Origin>;
}

/** Sections whose placeholders must resolve: they decide what a stream reads and writes. */
const OPERATIVE = new Set(["dataset", "materialization", "quarantine", "schema_policy", "server", "source", "trigger", "primary_key", "target_layer", "tier", "layer"]);
const OPERATIVE_INFO = new Set(["table_name", "target_layer", "domain", "system"]);

function operative(path: YamlPath): boolean {
  const [top, second] = path;
  if (typeof top !== "string") return false;
  if (top === "info") return typeof second === "string" && OPERATIVE_INFO.has(second);
  return OPERATIVE.has(top);
}

function where(file: RegistryFile | undefined, path: YamlPath): Origin | undefined {
  if (file === undefined) return undefined;
  const pos = file.doc.locate(path);
  return pos ? { file: file.file, pos } : { file: file.file };
}

/** The registry file that wrote `path` (the system's, else the domain's). */
function writer(files: RegistryFiles, path: YamlPath): RegistryFile | undefined {
  const has = (f: RegistryFile | undefined): boolean => f !== undefined && hasPath(f.data, path);
  if (has(files.system)) return files.system;
  if (has(files.domain)) return files.domain;
  return files.system ?? files.domain;
}

function hasPath(data: unknown, path: YamlPath): boolean {
  let node: unknown = data;
  for (const part of path) {
    if (Array.isArray(node) && typeof part === "number") node = node[part];
    else if (isObj(node)) node = node[String(part)];
    else return false;
    if (node === undefined) return false;
  }
  return true;
}

/** A contract file with the registry files above it (found on disk) and the given values. */
export async function resolveInheritance(data: Obj, file: string | undefined, doc: YamlDoc | undefined, options: InheritOptions = {}): Promise<Inherited> {
  const files: RegistryFiles = file !== undefined ? await findRegistry(dirname(resolvePath(file))) : {};
  return resolveWith(files, data, file, doc, options);
}

/** The same with the registry files given (none: the contract's placeholders resolve from `options.vars` only). */
export function resolveWith(files: RegistryFiles, data: Obj, file: string | undefined, doc: YamlDoc | undefined, options: InheritOptions = {}): Inherited {
  const out: Inherited = { data, problems: [], warnings: [], origins: new Map() };
  const notes: MergeNote[] = [];
  const registry = registryOf(files, notes);
  for (const n of notes) warn(out, where(files.domain, [n.key]), `${formatPath([n.key])}: ${n.message}`, "suspicious");
  for (const w of registryKeyWarnings(files)) warn(out, where(w.file, [w.key]), w.message, "unsupported");

  const bound = bindVars(registry, options.environment ?? DEFAULT_ENVIRONMENT, options.vars);
  for (const n of bound.notes) warn(out, where(files.system ?? files.domain, n.path), `${formatPath(n.path)}: ${n.message}`, "unsupported");

  const own = substitute(data, withContractNames(data, bound.vars));
  report(out, own, bound, (path) => ({ file, pos: doc?.locate(path) }));
  const contract = own.value as Obj;
  if (registry === undefined) {
    out.data = contract;
    return out;
  }
  const index = indexEntryFor(registry, files.system, file);
  const layer = layerOf(contract, index?.entry, bound.vars);
  const resolved = substitute(registry, withContractNames(contract, bound.vars));
  const injected: Injected = { filled: [], notes: [] };
  injectDefaults(contract, { registry: resolved.value as Obj, layer, indexEntry: index?.entry, indexPath: index?.path }, injected);
  // Only what reached the contract must resolve: a default for another layer may stay unresolved.
  const used = new Set(injected.filled.map((f) => formatPath(f.from)));
  const relevant: Substitution = {
    value: resolved.value,
    unresolved: resolved.unresolved.filter((u) => [...used].some((p) => formatPath(u.path).startsWith(p))),
    tooLong: resolved.tooLong.filter((u) => [...used].some((p) => formatPath(u.path).startsWith(p))),
  };
  report(out, relevant, bound, (path) => where(writer(files, path), path) ?? {});
  for (const n of injected.notes) warn(out, where(writer(files, n.path), n.path), n.message, "unsupported");
  for (const f of injected.filled) {
    const origin = where(writer(files, f.from), f.from);
    if (origin) out.origins.set(formatPath(f.path), origin);
  }
  deriveTargetPath(contract, layer, bound, out);
  out.data = contract;
  return out;
}

function registryOf(files: RegistryFiles, notes: MergeNote[]): Obj | undefined {
  if (files.system && files.domain) return mergeDomainSystem(files.system.data, files.domain.data, notes);
  return files.system?.data ?? files.domain?.data;
}

/** `{dataset}` and `{table}` name the contract's own dataset and table when it writes them literally. */
function withContractNames(contract: Obj, vars: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map(vars);
  const literal = (v: unknown): string | undefined => (typeof v === "string" && v.trim() !== "" && !v.includes("{") ? v.trim() : undefined);
  const info = isObj(contract["info"]) ? contract["info"] : {};
  const mat = isObj(contract["materialization"]) ? contract["materialization"] : {};
  const dataset = literal(contract["dataset"]);
  const table = literal(mat["table"]) ?? literal(info["table_name"]) ?? dataset;
  if (dataset !== undefined && !out.has("dataset")) out.set("dataset", dataset);
  if (table !== undefined && !out.has("table")) out.set("table", table);
  return out;
}

function report(out: Inherited, sub: Substitution, bound: BoundVars, at: (path: YamlPath) => { file?: string; pos?: YamlPos }): void {
  for (const u of sub.unresolved) {
    if (!operative(u.path)) continue;
    const { file, pos } = at(u.path);
    const why = bound.why.get(u.name);
    out.problems.push({
      path: formatPath(u.path),
      message: `placeholder {${u.name}} has no value${why !== undefined ? ` (${why})` : ""}`,
      expected: `a value for ${u.name}: give it at run time (--var ${u.name}=<value>, or loadContract's vars), or define it under storage or environments.<env> in _system.yaml / _domain.yaml`,
      file,
      line: pos?.line,
      column: pos?.column,
    });
  }
  for (const t of sub.tooLong) {
    const { file, pos } = at(t.path);
    out.problems.push({ path: formatPath(t.path), message: `its placeholders resolve to more than ${MAX_RESOLVED_LENGTH} characters`, expected: "placeholder values that do not multiply each other", file, line: pos?.line, column: pos?.column });
  }
}

function warn(out: Inherited, origin: Origin | undefined, message: string, code: ContractWarning["code"]): void {
  const w: ContractWarning = { message: origin ? `${origin.file.split(/[\\/]/).pop()}: ${message}` : message, code };
  if (origin?.pos) w.loc = { file: origin.file, line: origin.pos.line, column: origin.pos.column, path: "" };
  out.warnings.push(w);
}

/**
 * No target path in the contract or its defaults: the layer's storage path (`storage.<layer>_path`,
 * else `storage.external_location_root`) is the lake directory, as the original places a
 * layer's tables under it.
 */
function deriveTargetPath(contract: Obj, layer: string | undefined, bound: BoundVars, out: Inherited): void {
  const mat = isObj(contract["materialization"]) ? contract["materialization"] : undefined;
  if (mat && (!unset(mat["target_path"]) || !unset(mat["location"]))) return;
  const key = layer !== undefined && bound.vars.has(`${layer}_path`) ? `${layer}_path` : "external_location_root";
  const root = bound.vars.get(key);
  if (root === undefined || root.trim() === "") return;
  contract["materialization"] = { ...(mat ?? {}), target_path: root };
  out.warnings.push({ message: `materialization.target_path is not set; using {${key}} from the registry (${root})`, code: "derived" });
}
