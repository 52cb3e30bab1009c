/**
 * The values `{placeholders}` resolve to, built as the original binds a registry to an
 * environment: the environment's values (`${ENV}` read from the process environment), the
 * registry's identity (domain, system, layer names), then its `storage` paths resolved from
 * those; values given at run time win over all of them.
 */
import { isObj, type Obj } from "../normalise/read.js";
import { substituteString } from "./placeholders.js";

export const DEFAULT_ENVIRONMENT = "dev";
const LAYERS = { bronze_layer: "bronze", silver_layer: "silver", gold_layer: "gold" } as const;
/** The `<x>_root` names that mean `<x>_path` when the registry gives that path (the original's list). */
const ROOTS = ["landing", "contract", "bronze", "silver", "gold", "log"];
/** Placeholders the original fills per contract (kept as written in storage paths). */
const PER_CONTRACT = new Set(["table", "entity", "dataset"]);

export interface BoundVars {
  vars: Map<string, string>;
  /** Why a name has no value, when the registry says (an unset `${ENV}`, a storage path missing a value). */
  why: Map<string, string>;
  notes: Array<{ path: string[]; message: string }>;
}

function text(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return undefined;
}

/** `environments.<env>`: each value, with a whole-value `${NAME}` read from the process environment. */
function environmentValues(registry: Obj, environment: string, out: BoundVars): Map<string, string> {
  const values = new Map<string, string>();
  const envs = registry["environments"];
  if (!isObj(envs)) return values;
  const chosen = envs[environment];
  if (!isObj(chosen)) {
    const known = Object.keys(envs).join(", ");
    out.notes.push({ path: ["environments"], message: `environment '${environment}' is not defined (defined: ${known || "none"}); its values are not used` });
    return values;
  }
  for (const [k, v] of Object.entries(chosen)) {
    const s = text(v);
    if (s === undefined) continue;
    const ref = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(s.trim());
    if (ref) {
      // Unset or empty is not a value: a placeholder using it is an error, never a blank.
      const fromEnv = process.env[ref[1]!];
      if (fromEnv === undefined || fromEnv === "") out.why.set(k, `environments.${environment}.${k} reads \${${ref[1]}}, which is not set in the process environment`);
      else values.set(k, fromEnv);
    } else if (s.trim() !== "") {
      values.set(k, s);
    }
  }
  return values;
}

/** Values that refer to each other (`data_root: "{storage_root}/x"`): two passes, as the original makes. */
function selfResolve(values: Map<string, string>): void {
  for (let pass = 0; pass < 2; pass++) {
    for (const [k, v] of values) if (v.includes("{")) values.set(k, substituteString(v, values).text);
  }
}

export function bindVars(registry: Obj | undefined, environment: string, runtime: Readonly<Record<string, string>> | undefined): BoundVars {
  const out: BoundVars = { vars: new Map(), why: new Map(), notes: [] };
  const given = Object.entries(runtime ?? {});
  if (registry === undefined) {
    for (const [k, v] of given) out.vars.set(k, v);
    return out;
  }
  const sub = environmentValues(registry, environment, out);
  for (const key of ["domain", "system"] as const) {
    const s = text(registry[key]);
    if (s !== undefined && !sub.has(key)) sub.set(key, s);
  }
  for (const [key, dflt] of Object.entries(LAYERS)) if (!sub.has(key)) sub.set(key, text(registry[key]) ?? dflt);
  for (const [k, v] of given) sub.set(k, v);
  selfResolve(sub);

  const storage = new Map<string, string>();
  const rawStorage = registry["storage"];
  if (isObj(rawStorage)) {
    for (const [k, v] of Object.entries(rawStorage)) {
      const s = text(v);
      if (s === undefined || s.trim() === "") continue;
      const { text: resolved, missing } = substituteString(s, sub);
      const blocking = missing.filter((m) => !PER_CONTRACT.has(m));
      if (blocking.length > 0) out.why.set(k, `storage.${k} needs {${blocking.join("}, {")}}`);
      else storage.set(k, resolved);
    }
  }
  const vars = new Map(storage);
  const lineage = registry["lineage"];
  if (isObj(lineage)) for (const [k, v] of Object.entries(lineage)) if (typeof v === "string" && !vars.has(k)) vars.set(k, v);
  for (const [k, v] of sub) vars.set(k, v);
  // This runtime writes to paths: `{bronze_root}` means the layer's path when one is given (the
  // original's path storage mode).
  for (const base of ROOTS) {
    const path = storage.get(`${base}_path`);
    if (path !== undefined && !given.some(([g]) => g === `${base}_root`)) vars.set(`${base}_root`, path);
  }
  for (const [k, v] of given) vars.set(k, v);
  for (const k of vars.keys()) out.why.delete(k);
  out.vars = vars;
  return out;
}
