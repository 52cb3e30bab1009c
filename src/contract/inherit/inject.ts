/**
 * System → contract: the registry's defaults fill the gaps a contract leaves (the contract always
 * wins), per the original's rules — `quarantine` key by key, `materialization` from `_all` then
 * the contract's layer, `server` from the contract's layer (two levels deep), and the extra keys
 * of the contract's entry in the `contracts:` index.
 */
import { isObj, type Obj } from "../normalise/read.js";
import { fillGaps, unset } from "./merge.js";

/** Keys of a `contracts:` index entry that describe the entry itself, not the contract. */
const INDEX_KEYS = new Set(["layer", "entity", "path", "depends_on", "contract_version", "enabled", "active", "resolved_path", "contract_dict"]);

export interface Injected {
  /** Contract key paths that took their value from the registry, with the registry path it came from. */
  filled: Array<{ path: string[]; from: string[] }>;
  notes: Array<{ path: string[]; message: string }>;
}

/** The per-layer block of a registry section: `_all` under `<layer>` (the layer wins). */
export function layerDefaults(section: unknown, layer: string | undefined, name: string, out: Injected): { block: Obj; from: (k: string) => string[] } {
  if (!isObj(section)) return { block: {}, from: (k) => [name, k] };
  for (const [k, v] of Object.entries(section)) {
    if (!isObj(v) && !unset(v)) {
      out.notes.push({ path: [name, k], message: `${name}.${k} is not used: registry ${name} defaults are given per layer (${name}._all, ${name}.bronze, …)` });
    }
  }
  const all = isObj(section["_all"]) ? section["_all"] : {};
  const own = layer !== undefined && isObj(section[layer]) ? section[layer] : {};
  return { block: { ...all, ...own }, from: (k) => [name, k in own ? layer! : "_all", k] };
}

function fillSection(contract: Obj, key: string, defaults: Obj, from: (k: string) => string[], depth: number, out: Injected): void {
  if (Object.keys(defaults).length === 0) return;
  const own = contract[key];
  // `quarantine: false` (or any non-mapping the contract wrote) is the contract's choice.
  if (!unset(own) && !isObj(own)) return;
  const target: Obj = isObj(own) ? { ...own } : {};
  const filled = fillGaps(target, defaults, depth);
  if (filled.length === 0) return;
  contract[key] = target;
  for (const p of filled) out.filled.push({ path: [key, ...p], from: [...from(p[0]!), ...p.slice(1)] });
}

export interface InjectInput {
  registry: Obj;
  layer: string | undefined;
  indexEntry: Obj | undefined;
  indexPath: Array<string | number> | undefined;
}

/** Fill `contract` (a copy the caller owns) from the resolved registry. */
export function injectDefaults(contract: Obj, input: InjectInput, out: Injected): void {
  const { registry, layer } = input;
  const q = registry["quarantine"];
  if (isObj(q)) fillSection(contract, "quarantine", q, (k) => ["quarantine", k], 1, out);

  const mat = layerDefaults(registry["materialization"], layer, "materialization", out);
  fillSection(contract, "materialization", mat.block, mat.from, 1, out);

  const server = layerDefaults(registry["server"], layer, "server", out);
  const block = { ...server.block };
  // A policy the contract writes at the top level is the contract's too: the layer's server
  // defaults fill only what neither place sets.
  const top = contract["schema_policy"];
  if (isObj(block["schema_policy"]) && isObj(top)) {
    const sp = { ...block["schema_policy"] };
    for (const k of Object.keys(top)) if (!unset(top[k])) delete sp[k];
    block["schema_policy"] = sp;
  }
  fillSection(contract, "server", block, server.from, 2, out);

  if (input.indexEntry !== undefined) {
    for (const [k, v] of Object.entries(input.indexEntry)) {
      if (INDEX_KEYS.has(k)) continue;
      const from = [...(input.indexPath ?? []).map(String), k];
      if (unset(contract[k])) {
        contract[k] = structuredClone(v);
        out.filled.push({ path: [k], from });
      } else if (isObj(v) && isObj(contract[k])) {
        fillSection(contract, k, v, (sub) => [...from, sub], 1, out);
      }
    }
  }
}
