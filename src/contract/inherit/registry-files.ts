/**
 * Finding and reading the registry files above a contract: the nearest `_system.yaml` walking up
 * from the contract's directory, and the `_domain.yaml` one directory above that system (as the
 * original's registry finds it). With no `_system.yaml`, the nearest `_domain.yaml` alone applies.
 * Each file goes through the contract's own guards (size, YAML aliases).
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { ContractError } from "../errors.js";
import { isObj, type Obj } from "../normalise/read.js";
import { readContractFile } from "../read-file.js";
import { parseYaml, type YamlDoc } from "../yaml.js";

export const SYSTEM_FILE = "_system.yaml";
export const DOMAIN_FILE = "_domain.yaml";
/**
 * How many directories above the contract are searched (its own included). The original's
 * contract lint walks up 8; a deeper tree is not searched, so a stray file far above a
 * project cannot change its contracts.
 */
export const MAX_REGISTRY_DEPTH = 8;

export interface RegistryFile {
  file: string;
  doc: YamlDoc;
  data: Obj;
}

export interface RegistryFiles {
  system?: RegistryFile;
  domain?: RegistryFile;
}

function isFile(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The registry files that apply to a contract in `contractDir` (none found: both absent). */
export async function findRegistry(contractDir: string): Promise<RegistryFiles> {
  // The real path: a symlinked directory is searched where it really is, and the walk up a real
  // path always ends (no cycles).
  let dir: string;
  try {
    dir = realpathSync(contractDir);
  } catch {
    return {};
  }
  let systemPath: string | undefined;
  let domainPath: string | undefined;
  for (let depth = 0; depth < MAX_REGISTRY_DEPTH; depth++) {
    if (systemPath === undefined && isFile(join(dir, SYSTEM_FILE))) systemPath = join(dir, SYSTEM_FILE);
    if (systemPath === undefined && domainPath === undefined && isFile(join(dir, DOMAIN_FILE))) domainPath = join(dir, DOMAIN_FILE);
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  if (systemPath !== undefined) {
    const candidate = join(dirname(dirname(systemPath)), DOMAIN_FILE);
    domainPath = isFile(candidate) ? candidate : undefined;
  }
  const out: RegistryFiles = {};
  if (systemPath !== undefined) out.system = await readRegistryFile(systemPath);
  if (domainPath !== undefined) out.domain = await readRegistryFile(domainPath);
  return out;
}

async function readRegistryFile(file: string): Promise<RegistryFile> {
  const text = await readContractFile(file, "registry file");
  const doc = parseYaml(text, file);
  if (doc.errors.length > 0) {
    throw new ContractError(
      doc.errors.map((e) => ({ path: "", message: e.limit ? e.message : `invalid YAML: ${e.message}`, file, line: e.line, column: e.column })),
    );
  }
  if (doc.data === undefined || doc.data === null) return { file, doc, data: {} };
  if (!isObj(doc.data)) {
    throw new ContractError([{ path: "", message: "the top level is not a mapping", file, line: 1, column: 1, expected: "a mapping of registry keys (domain, system, storage, environments, …)" }]);
  }
  return { file, doc, data: doc.data };
}
