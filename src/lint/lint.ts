import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { dirname, extname, join, resolve } from "node:path";
import { ContractError } from "../contract/errors.js";
import { findRegistry, type RegistryFiles } from "../contract/inherit/registry-files.js";
import { contractSizeMessage, formatPath, MAX_CONTRACT_BYTES, parseYaml, type YamlDoc } from "../contract/yaml.js";
import { ConfigError } from "../errors.js";
import { isMapping, RawContract, type LintContext } from "./raw.js";
import { RULES } from "./rules/index.js";
import { load001, load001Hits } from "./rules/load-001.js";
import { sqlProblems } from "./rules/loader.js";
import type { Finding, LintRule, RuleHit } from "./types.js";

const CONTRACT_EXTENSIONS: ReadonlySet<string> = new Set([".yaml", ".yml"]);

export interface LintReport {
  /** Every file that was linted, in lint order. */
  files: string[];
  /** Sorted by file, line, column, id. */
  findings: Finding[];
}

function toFinding(rule: LintRule, hit: RuleHit, doc: YamlDoc, file: string): Finding {
  const pos = hit.pos ?? (hit.path ? doc.locate(hit.path) : undefined) ?? { line: 1, column: 1 };
  // Key order here is the JSON output's key order.
  return {
    id: rule.id,
    severity: rule.severity,
    file,
    line: pos.line,
    column: pos.column,
    ...(hit.path && hit.path.length > 0 ? { path: formatPath(hit.path) } : {}),
    message: hit.message,
    suggestion: hit.suggestion,
  };
}

export function compareFindings(a: Finding, b: Finding): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  return a.line - b.line || (a.column ?? 0) - (b.column ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Lint one contract's text. Document rules (PARSE-000) run first; contract rules run only when
 * the file parsed to a mapping, because they read keys and would only add noise otherwise.
 * Synchronous, so `sql` rules are guarded but not bound by DuckDB; `lintPaths` binds them too.
 */
export function lintText(text: string, file: string, rules: readonly LintRule[] = RULES, options: LintOptions = {}): Finding[] {
  return withoutRestatements(linted(text, file, rules, options).findings).sort(compareFindings);
}

interface Linted {
  findings: Finding[];
  doc: YamlDoc;
  /** The document as the contract rules saw it, when they ran. */
  contract?: RawContract;
}

function linted(text: string, file: string, rules: readonly LintRule[], options: LintOptions): Linted {
  const doc = parseYaml(text, file);
  const findings: Finding[] = [];
  for (const rule of rules) {
    if (rule.scope !== "document") continue;
    for (const hit of rule.check(doc)) findings.push(toFinding(rule, hit, doc, file));
  }
  if (findings.length > 0 || doc.errors.length > 0 || !isMapping(doc.data)) return { findings, doc };
  const contract = new RawContract(doc.data, doc, { ...options, file });
  for (const rule of rules) {
    if (rule.scope !== "contract") continue;
    for (const hit of rule.check(contract)) findings.push(toFinding(rule, hit, doc, file));
  }
  return { findings, doc, contract };
}

/** As `lintText`, and the `sql` rules of a contract that loads are parsed and bound by DuckDB (LOAD-001), as the run does. */
async function lintBound(text: string, file: string, options: LintOptions): Promise<Finding[]> {
  const { findings, doc, contract } = linted(text, file, RULES, options);
  if (contract) {
    for (const hit of load001Hits(contract, await sqlProblems(contract))) findings.push(toFinding(load001, hit, doc, file));
  }
  return withoutRestatements(findings).sort(compareFindings);
}

/** LOAD-* findings restate what the loader says; ids of the rules that run the loader. */
const LOADER_IDS = /^LOAD-/;

/**
 * Drops a loader finding where another rule already reports a problem on the same line (FORMAT-001
 * and the loader both refuse `format: delta`): one problem, one finding, the rule's more specific one.
 */
function withoutRestatements(findings: Finding[]): Finding[] {
  const ruleLines = new Set(findings.filter((f) => !LOADER_IDS.test(f.id)).map((f) => `${f.file}\0${f.line}`));
  return findings.filter((f) => !LOADER_IDS.test(f.id) || !ruleLines.has(`${f.file}\0${f.line}`));
}

async function walk(dir: string, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      // Dependencies and VCS/tool folders are never contracts.
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      await walk(full, out);
    } else if (CONTRACT_EXTENSIONS.has(extname(entry.name).toLowerCase())) {
      // Follows symlinked files but not symlinked directories (no cycles).
      if (entry.isFile() || (entry.isSymbolicLink() && (await stat(full).catch(() => undefined))?.isFile())) {
        out.push(full);
      }
    }
  }
}

/**
 * Expand paths into contract files: directories are walked for *.yaml / *.yml (sorted, skipping
 * node_modules and dot-folders); a file named explicitly is linted whatever its extension.
 * Duplicates (same real path) are dropped. A path that does not exist is a ConfigError.
 */
export async function collectContractFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const p of paths) {
    const info = await stat(p).catch(() => undefined);
    if (!info) throw new ConfigError("paths", `${p} does not exist`);
    if (info.isDirectory()) await walk(p, files);
    else files.push(p);
  }
  const seen = new Set<string>();
  const unique: string[] = [];
  for (const f of files) {
    const real = await realpath(f).catch(() => f);
    if (seen.has(real)) continue;
    seen.add(real);
    unique.push(f);
  }
  return unique;
}

function fileProblem(file: string, message: string, suggestion: string): Finding[] {
  return [{ id: "PARSE-000", severity: "critical", file, line: 1, column: 1, message, suggestion }];
}

/** What `lintText` and `lintPaths` take besides the files: what the run would be given. */
export type LintOptions = Pick<LintContext, "vars" | "environment" | "registry">;

/** The registry files above `file`, or the finding that they do not load (the run fails on them too). */
async function registryOf(file: string): Promise<RegistryFiles | Finding[]> {
  try {
    return await findRegistry(dirname(resolve(file)));
  } catch (err) {
    if (!(err instanceof ContractError)) throw err;
    return fileProblem(
      file,
      `A registry file (_system.yaml / _domain.yaml) that applies to this contract does not load: ${err.message}.`,
      "Fix that file: loading this contract fails on it too.",
    );
  }
}

async function lintFile(file: string, options: LintOptions): Promise<Finding[]> {
  let text: string;
  try {
    // A file over the limit is judged by its size, without reading it into memory.
    const size = (await stat(file)).size;
    if (size > MAX_CONTRACT_BYTES) {
      return fileProblem(file, `The file breaks a contract limit: ${contractSizeMessage(size)}.`, "Split the contract; the loader refuses this file too.");
    }
    text = await readFile(file, "utf8");
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return fileProblem(file, `The file could not be read: ${reason}.`, "Check the file's permissions, or leave it out of the linted paths.");
  }
  const registry = await registryOf(file);
  if (Array.isArray(registry)) return registry;
  return lintBound(text, file, { ...options, registry });
}

/** Lint files and directories; each contract is judged with the registry files above it and `options.vars`. */
export async function lintPaths(paths: readonly string[], options: Omit<LintOptions, "registry"> = {}): Promise<LintReport> {
  const files = await collectContractFiles(paths);
  const findings: Finding[] = [];
  for (const file of files) findings.push(...(await lintFile(file, options)));
  return { files, findings: findings.sort(compareFindings) };
}

/** Lint files and directories (walked for *.yaml / *.yml). */
export async function lintFiles(paths: readonly string[], options: Omit<LintOptions, "registry"> = {}): Promise<Finding[]> {
  return (await lintPaths(paths, options)).findings;
}
