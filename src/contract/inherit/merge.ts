/**
 * The merge rules of the original's registry (its "Configuration Resolution & Inheritance"):
 * domain → system folds the domain's defaults under the system's values; system → contract
 * fills only the gaps a contract leaves (the contract always wins).
 */
import { isObj, type Obj } from "../normalise/read.js";

/** Keys merged down from the domain into the system, in the original's order. */
export const INHERITABLE_KEYS = [
  "slo", "ownership", "notifications", "quarantine", "compliance", "lineage", "materialization", "server", "cost",
  "observatory", "retention",
] as const;

/** Scalars the domain locks: when both files set one and they differ, the domain's value wins. */
export const IDENTITY_SCALARS = ["domain", "bronze_layer", "silver_layer", "gold_layer", "notifications_enabled"] as const;

/** Nothing, or blank text: a value that does not count as set (`target_path: ""`). */
export function unset(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === "string" && v.trim() === "");
}

/** `override` over `base`: mappings merge key by key, anything else (lists too) is replaced. */
export function deepMerge(base: Obj, override: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(override)) {
    const b = out[k];
    out[k] = isObj(b) && isObj(v) ? deepMerge(b, v) : v;
  }
  return out;
}

export interface MergeNote {
  key: string;
  message: string;
}

/**
 * The system's configuration with the domain's folded under it. Inheritable keys: absent in the
 * system → the domain's; both mappings → deep merge, system fields win; both lists → domain's
 * then system's; otherwise the system's. Identity scalars: the domain's wins on a mismatch
 * (noted). `cost.currency` is the domain's.
 */
export function mergeDomainSystem(system: Obj, domain: Obj, notes: MergeNote[]): Obj {
  const merged: Obj = { ...system };
  for (const key of INHERITABLE_KEYS) {
    if (!(key in domain)) continue;
    const d = domain[key];
    const s = system[key];
    if (s === undefined || s === null) merged[key] = d;
    else if (isObj(s) && isObj(d)) merged[key] = deepMerge(d, s);
    else if (Array.isArray(s) && Array.isArray(d)) merged[key] = [...(d as unknown[]), ...(s as unknown[])];
  }
  for (const key of IDENTITY_SCALARS) {
    const d = domain[key];
    if (d === undefined || d === null) continue;
    const s = system[key];
    if (s !== undefined && s !== null && s !== d) {
      notes.push({ key, message: `_system.yaml has ${key}=${JSON.stringify(s)} but _domain.yaml has ${key}=${JSON.stringify(d)}; the domain's value is used` });
    }
    merged[key] = d;
  }
  const dCost = domain["cost"];
  const mCost = merged["cost"];
  if (isObj(dCost) && isObj(mCost) && !unset(dCost["currency"]) && mCost["currency"] !== dCost["currency"]) {
    merged["cost"] = { ...mCost, currency: dCost["currency"] };
  }
  return merged;
}

/**
 * Fill the gaps of `own` from `defaults`, key by key (`depth` levels of mappings deep): a key the
 * contract sets — to anything but blank text — keeps its value. Returns the keys filled.
 */
export function fillGaps(own: Obj, defaults: Obj, depth = 1): string[][] {
  const filled: string[][] = [];
  for (const [k, v] of Object.entries(defaults)) {
    const mine = own[k];
    if (unset(mine)) {
      if (unset(v)) continue;
      own[k] = structuredClone(v);
      filled.push([k]);
    } else if (depth > 1 && isObj(mine) && isObj(v)) {
      const copy = { ...mine };
      own[k] = copy;
      for (const sub of fillGaps(copy, v, depth - 1)) filled.push([k, ...sub]);
    }
  }
  return filled;
}
