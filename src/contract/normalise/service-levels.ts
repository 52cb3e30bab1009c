/** The `service_levels` section: free-form, except `freshness`, which the runtime reads. */
import type { Contract } from "../types.js";
import type { NormaliseContext } from "./context.js";
import { asMap, asStr, checkKeys, isObj, type Obj } from "./read.js";

const SERVICE_LEVEL_KEYS = ["freshness", "availability", "row_count"];

export function readServiceLevels(cx: NormaliseContext, data: Obj): Contract["serviceLevels"] {
  const m = asMap(cx, data["service_levels"], ["service_levels"]);
  if (!m) return undefined;
  checkKeys(cx, m, ["service_levels"], SERVICE_LEVEL_KEYS, "service_levels", true);
  const out: NonNullable<Contract["serviceLevels"]> = { ...m };
  delete out.freshness;
  const f = m["freshness"];
  if (f !== undefined && f !== null) {
    // `freshness: 15m` or, as in the original, `freshness: {threshold: 15m, …}`.
    const v = isObj(f) ? f["threshold"] : f;
    const path = isObj(f) ? ["service_levels", "freshness", "threshold"] : ["service_levels", "freshness"];
    const s = asStr(cx, v, path, "a duration such as 15m or 1h");
    if (s !== undefined) out.freshness = s;
  }
  return out;
}
