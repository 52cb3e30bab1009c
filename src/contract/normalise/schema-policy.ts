/** The schema policy: `schema_policy`, and the original's `server` spellings of it (which win). */
import { didYouMean } from "../suggest.js";
import type { SchemaPolicy, UnknownFieldsPolicy } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asMap, asOptStr, checkKeys, isObj, unknownChoice, type Obj } from "./read.js";

const SCHEMA_POLICY_KEYS = ["evolution", "unknown_fields"];
const EVOLUTIONS = ["strict", "append", "merge", "overwrite", "compatible", "allow"];
const UNKNOWN_FIELDS: readonly UnknownFieldsPolicy[] = ["quarantine", "drop", "allow"];

export function readSchemaPolicy(cx: NormaliseContext, data: Obj): SchemaPolicy {
  const policy: SchemaPolicy = { evolution: "allow", unknownFields: "allow" };
  const top = asMap(cx, data["schema_policy"], ["schema_policy"]);
  if (top) readInto(cx, policy, top, ["schema_policy"]);
  // The original also reads server.schema_policy (which wins) and two legacy server keys.
  const server = isObj(data["server"]) ? data["server"] : undefined;
  if (server) {
    const evo = server["schema_evolution"];
    if (typeof evo === "string" && evo.trim() !== "" && (!top || top["evolution"] === undefined)) {
      readInto(cx, policy, { evolution: evo }, ["server", "schema_evolution"]);
      if (evo.toLowerCase() === "strict" && (!top || top["unknown_fields"] === undefined)) policy.unknownFields = "quarantine";
    }
    const drift = server["allow_schema_drift"];
    if (typeof drift === "boolean" && (!top || top["unknown_fields"] === undefined)) policy.unknownFields = drift ? "allow" : "quarantine";
    const nested = asMap(cx, server["schema_policy"], ["server", "schema_policy"]);
    if (nested) readInto(cx, policy, nested, ["server", "schema_policy"]);
  }
  return policy;
}

/** Apply one schema-policy mapping over `policy`: what it sets replaces what came before. */
function readInto(cx: NormaliseContext, policy: SchemaPolicy, m: Obj, path: YamlPath): void {
  checkKeys(cx, m, path, SCHEMA_POLICY_KEYS, "schema_policy");
  const evo = asOptStr(cx, m["evolution"], [...path, "evolution"]);
  if (evo !== undefined) {
    const t = evo.trim().toLowerCase();
    if (EVOLUTIONS.includes(t)) policy.evolution = t;
    else cx.error([...path, "evolution"], unknownChoice("evolution", evo, didYouMean(t, EVOLUTIONS)), EVOLUTIONS.join(", "));
  }
  const uf = asOptStr(cx, m["unknown_fields"], [...path, "unknown_fields"]);
  if (uf !== undefined) {
    const t = uf.trim().toLowerCase();
    if ((UNKNOWN_FIELDS as readonly string[]).includes(t)) policy.unknownFields = t as UnknownFieldsPolicy;
    else cx.error([...path, "unknown_fields"], unknownChoice("policy", uf, didYouMean(t, UNKNOWN_FIELDS)), "quarantine, drop or allow");
  }
}
