/**
 * Load a YAML data contract into the normalised `Contract` every other layer reads.
 *
 * Compatibility first: a contract written for the Python original loads unchanged. Keys we do
 * not use are ignored (an unknown one with a warning; one a typo away from a known key is an
 * error, since its setting would be lost); features we do not perform (transformations,
 * reference-data rules, delta tables…) load with an `unsupported` warning so nothing is dropped
 * silently. Everything wrong is collected and thrown as one `ContractError`.
 * `loadContract` also has DuckDB parse and bind the `sql` rules (sql-bind.ts); the synchronous
 * `parseContract` and `contractFromObject` only guard them, and StreamSink binds what they return.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { ContractError } from "./errors.js";
import { normaliseDocument } from "./normalise/document.js";
import { describe, isObj } from "./normalise/read.js";
import type { Contract } from "./types.js";
import { resolveInheritance, resolveWith, type Inherited } from "./inherit/index.js";
import { readContractFile } from "./read-file.js";
import { checkContractSql } from "./sql-bind.js";
import { parseYaml, type YamlDoc } from "./yaml.js";

export { regexProblem } from "./normalise/regex.js";

export interface LoadContractOptions {
  /** Directory a relative contract path is resolved against (default: the working directory). */
  baseDir?: string;
  /**
   * Values for `{placeholders}` given at run time (`--var name=value`); they win over the values
   * of the registry files (`_system.yaml`, `_domain.yaml`) above the contract.
   */
  vars?: Record<string, string>;
  /** The registry environment (`environments.<name>`) whose values fill placeholders; default `dev`. */
  environment?: string;
}

function parsed(text: string, file: string | undefined): YamlDoc {
  const doc = parseYaml(text, file);
  if (doc.errors.length > 0) {
    throw new ContractError(
      doc.errors.map((e) => ({ path: "", message: e.limit ? e.message : `invalid YAML: ${e.message}`, file, line: e.line, column: e.column })),
    );
  }
  return doc;
}

/**
 * Normalise a document after its placeholders (and, for a file, its registry) are resolved. A
 * placeholder left without a value where it decides what a stream reads or writes is an error.
 */
function normaliseResolved(resolved: Inherited | undefined, data: unknown, file: string | undefined, doc: YamlDoc | undefined): Contract {
  if (resolved === undefined) return normaliseDocument(data, file, doc);
  if (resolved.problems.length > 0) throw new ContractError(resolved.problems);
  return normaliseDocument(resolved.data, file, doc, { origins: resolved.origins, warnings: resolved.warnings });
}

/**
 * Parse and normalise contract YAML text. `file` is only used in messages and `Contract.file`;
 * no registry files are read (`loadContract` reads those), so placeholders resolve from `vars` only.
 * Synchronous, so `sql` rules are guarded but not bound by DuckDB (`loadContract` does that).
 */
export function parseContract(text: string, file?: string, options?: Pick<LoadContractOptions, "vars">): Contract {
  const doc = parsed(text, file);
  const resolved = isObj(doc.data) ? resolveWith({}, doc.data, file, doc, options) : undefined;
  return normaliseResolved(resolved, doc.data, file, doc);
}

/** Normalise a contract given as a plain object (no positions in messages); placeholders resolve from `vars` only. */
export function contractFromObject(data: Record<string, unknown>, file?: string, options?: Pick<LoadContractOptions, "vars">): Contract {
  const resolved = isObj(data) ? resolveWith({}, data, file, undefined, options) : undefined;
  return normaliseResolved(resolved, data, file, undefined);
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
 * from YAML text (any other string), or from a plain object; its `sql` rules parsed and bound.
 */
export async function loadContract(input: string | Record<string, unknown>, options?: LoadContractOptions): Promise<Contract> {
  const contract = await normalised(input, options);
  await checkContractSql(contract);
  return contract;
}

async function normalised(input: string | Record<string, unknown>, options?: LoadContractOptions): Promise<Contract> {
  if (typeof input !== "string") {
    if (!isObj(input)) {
      throw new ContractError([{ path: "", message: `found ${describe(input)}`, expected: "a file path, YAML text or a contract object" }]);
    }
    return contractFromObject(input, undefined, options);
  }
  const trimmed = input.trim();
  const file = options?.baseDir !== undefined && !trimmed.startsWith("/") ? join(options.baseDir, trimmed) : trimmed;
  if (!looksLikePath(input, file)) return parseContract(input, undefined, options);
  const doc = parsed(await readContractFile(file), file);
  // The registry files above the contract (docs/contracts.md, "Domain and system files").
  const resolved = isObj(doc.data) ? await resolveInheritance(doc.data, file, doc, options) : undefined;
  return normaliseResolved(resolved, doc.data, file, doc);
}

/** The checkpoint key a stream uses unless told otherwise: `stream::<dataset>`, as in the original. */
export function defaultCheckpointKey(contract: Pick<Contract, "dataset">): string {
  return `stream::${contract.dataset}`;
}
