/**
 * The contract loader run from lint: the same steps as `loadContract` for a file (resolve the
 * registry files above it and the placeholders, normalise, then have DuckDB bind the sql rules),
 * with the registry lint has already read. LOAD-001 and LOAD-002 report what it refuses and what
 * it warns about, so lint passes nothing the run then refuses.
 */
import { ContractError, type ContractProblem } from "../../contract/errors.js";
import { resolveWith } from "../../contract/inherit/index.js";
import { normaliseDocument } from "../../contract/normalise/document.js";
import { contractSqlProblems } from "../../contract/sql-bind.js";
import type { Contract } from "../../contract/types.js";
import type { YamlPath } from "../../contract/yaml.js";
import type { RawContract } from "../raw.js";

export type LoadOutcome = { contract: Contract; problems?: undefined } | { contract?: undefined; problems: readonly ContractProblem[] };

const cache = new WeakMap<RawContract, LoadOutcome>();

/** Load `raw` as the run would (memoised per contract: both LOAD rules read it). */
export function loadOutcome(raw: RawContract): LoadOutcome {
  const hit = cache.get(raw);
  if (hit) return hit;
  const outcome = load(raw);
  cache.set(raw, outcome);
  return outcome;
}

function load(raw: RawContract): LoadOutcome {
  const { registry, vars, environment, file } = raw.context;
  // The resolver fills defaults into the document it is given: never into the one other rules read.
  const data = structuredClone(raw.data) as Record<string, unknown>;
  try {
    const resolved = resolveWith(registry ?? {}, data, file, raw.doc, {
      ...(vars !== undefined ? { vars } : {}),
      ...(environment !== undefined ? { environment } : {}),
    });
    if (resolved.problems.length > 0) return { problems: resolved.problems };
    return { contract: normaliseDocument(resolved.data, file, raw.doc, { origins: resolved.origins, warnings: resolved.warnings }) };
  } catch (err) {
    if (err instanceof ContractError) return { problems: err.problems };
    throw err;
  }
}

/** What DuckDB says about the sql rules of `raw`, once it loads (nothing when it does not: LOAD-001 has said why). */
export async function sqlProblems(raw: RawContract): Promise<readonly ContractProblem[]> {
  const outcome = loadOutcome(raw);
  return outcome.contract ? contractSqlProblems(outcome.contract) : [];
}

/**
 * Why a loaded document is not a contract, or undefined when it is one. A contract declares the
 * fields it validates (`model.fields`); YAML without them (a compose file, a CI workflow) loads,
 * because unknown keys are only warnings, but there is nothing to validate records against.
 */
export function notAContractReason(contract: Pick<Contract, "fields" | "raw">): string | undefined {
  if (contract.fields.length > 0) return undefined;
  const model = contract.raw["model"];
  const declared = typeof model === "object" && model !== null && "fields" in model;
  return declared
    ? "it declares no fields: model.fields is empty, so there is nothing to validate records against"
    : "it has no model.fields, the list of fields a contract validates records against";
}

/** True when the file writes neither `dataset` nor `model`: nothing a contract has (a compose file, a CI workflow). */
export function writesNoContractKeys(raw: RawContract): boolean {
  return !raw.has(["dataset"]) && !raw.has(["model"]);
}

/** `model.fields[0].name` → `["model", "fields", 0, "name"]` (the loader's formatted paths). */
export function parsePath(path: string): YamlPath {
  if (path === "" || path === "<root>") return [];
  const out: Array<string | number> = [];
  for (const part of path.split(".")) {
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) return out.concat(part);
    if (m[1] !== "") out.push(m[1]!);
    for (const index of m[2]!.matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  return out;
}
