/**
 * Load a YAML data contract into the normalised `Contract` every other layer reads.
 *
 * Compatibility first: a contract written for the Python original loads unchanged. Keys we do
 * not use are ignored (unknown ones get a did-you-mean warning); features we do not perform
 * (transformations, reference-data rules, delta tables…) load with an `unsupported` warning so
 * nothing is dropped silently. Everything wrong is collected and thrown as one `ContractError`.
 */
import { existsSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { ContractError } from "./errors.js";
import { normaliseDocument } from "./normalise/document.js";
import { describe, isObj } from "./normalise/read.js";
import type { Contract } from "./types.js";
import { contractSizeMessage, MAX_CONTRACT_BYTES, parseYaml } from "./yaml.js";

export { regexProblem } from "./normalise/regex.js";

export interface LoadContractOptions {
  /** Directory a relative contract path is resolved against (default: the working directory). */
  baseDir?: string;
}

/** Parse and normalise contract YAML text. `file` is only used in messages and `Contract.file`. */
export function parseContract(text: string, file?: string): Contract {
  const doc = parseYaml(text, file);
  if (doc.errors.length > 0) {
    throw new ContractError(
      doc.errors.map((e) => ({ path: "", message: e.limit ? e.message : `invalid YAML: ${e.message}`, file, line: e.line, column: e.column })),
    );
  }
  return normaliseDocument(doc.data, file, doc);
}

/** Normalise a contract given as a plain object (no positions in messages). */
export function contractFromObject(data: Record<string, unknown>, file?: string): Contract {
  return normaliseDocument(data, file, undefined);
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
  return parseContract(await readContractFile(file), file);
}

/** The file's text; a file over `MAX_CONTRACT_BYTES` is refused before it is read. */
async function readContractFile(file: string): Promise<string> {
  let size: number;
  let text: string;
  try {
    const handle = await open(file, "r");
    try {
      size = (await handle.stat()).size;
      text = size > MAX_CONTRACT_BYTES ? "" : await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message = code === "ENOENT" ? "contract file not found" : `cannot read the contract file (${code ?? String(e)})`;
    throw new ContractError([{ path: "", message, file, expected: "a readable YAML file" }], { cause: e });
  }
  if (size > MAX_CONTRACT_BYTES) {
    throw new ContractError([{ path: "", message: contractSizeMessage(size), file, expected: "a smaller contract" }]);
  }
  return text;
}

/** The checkpoint key a stream uses unless told otherwise: `stream::<dataset>`, as in the original. */
export function defaultCheckpointKey(contract: Pick<Contract, "dataset">): string {
  return `stream::${contract.dataset}`;
}
