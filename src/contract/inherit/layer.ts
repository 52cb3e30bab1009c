/** The contract's layer (bronze, silver, gold), which picks the registry's per-layer defaults. */
import { realpathSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { isObj, type Obj } from "../normalise/read.js";
import type { RegistryFile } from "./registry-files.js";

const CANONICAL = ["bronze", "silver", "gold"] as const;

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * The contract's entry in the system's `contracts:` index, matched by path (`{domain}`,
 * `{system}` and `{<layer>_layer}` in it resolve as the original resolves them for files on
 * disk: layers by their canonical names).
 */
export function indexEntryFor(registry: Obj, system: RegistryFile | undefined, contractFile: string | undefined): { entry: Obj; path: Array<string | number> } | undefined {
  const list = registry["contracts"];
  if (system === undefined || contractFile === undefined || !Array.isArray(list)) return undefined;
  const me = real(contractFile);
  for (let i = 0; i < list.length; i++) {
    const entry: unknown = list[i];
    if (!isObj(entry) || typeof entry["path"] !== "string") continue;
    let p = entry["path"];
    for (const key of ["domain", "system"]) if (typeof registry[key] === "string") p = p.split(`{${key}}`).join(registry[key]);
    for (const layer of CANONICAL) p = p.split(`{${layer}_layer}`).join(layer);
    const full = isAbsolute(p) ? p : join(dirname(system.file), p);
    if (real(full) === me) return { entry, path: ["contracts", i] };
  }
  return undefined;
}

/** The index entry's layer, else the contract's `info.target_layer` (or top-level layer keys), as canonical names. */
export function layerOf(contract: Obj, entry: Obj | undefined, vars: ReadonlyMap<string, string>): string | undefined {
  const info = isObj(contract["info"]) ? contract["info"] : {};
  const candidates = [entry?.["layer"], info["target_layer"], contract["target_layer"], contract["tier"], contract["layer"]];
  const given = candidates.find((c): c is string => typeof c === "string" && c.trim() !== "");
  if (given === undefined) return undefined;
  const t = given.trim().toLowerCase();
  // A renamed layer (`gold_layer: curated`) is still the gold layer.
  for (const layer of CANONICAL) if (vars.get(`${layer}_layer`)?.toLowerCase() === t) return layer;
  return t;
}
