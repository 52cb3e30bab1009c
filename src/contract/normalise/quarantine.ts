/** The `quarantine` section: where rejected rows go, defaulting from the materialization. */
import type { Materialization, QuarantineSpec } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { readFormat } from "./materialization.js";
import { asBool, asMap, asOptStr, checkKeys, type Obj } from "./read.js";

const QUARANTINE_KEYS = [
  "enabled", "target", "format", "include_error_reason", "table", "location", "strict_notifications",
  "fail_on_quarantine", "notifications_enabled", "write_mode", "notifications",
];

export function readQuarantine(cx: NormaliseContext, data: Obj, mat: Materialization): QuarantineSpec {
  const path: YamlPath = ["quarantine"];
  const rawQ = data["quarantine"];
  const defaults: QuarantineSpec = { enabled: true, target: `${mat.table}_quarantine`, format: mat.format, includeErrorReason: true };
  if (typeof rawQ === "boolean") return { ...defaults, enabled: rawQ };
  const m = asMap(cx, rawQ, path, "a mapping or true/false") ?? {};
  checkKeys(cx, m, path, QUARANTINE_KEYS, "quarantine");
  const fmt = readFormat(cx, m["format"], [...path, "format"], mat.format);
  const out: QuarantineSpec = {
    enabled: asBool(cx, m["enabled"], [...path, "enabled"]) ?? true,
    target:
      asOptStr(cx, m["target"], [...path, "target"]) ??
      asOptStr(cx, m["table"], [...path, "table"]) ??
      asOptStr(cx, m["location"], [...path, "location"]) ??
      defaults.target,
    format: fmt.format,
    includeErrorReason: asBool(cx, m["include_error_reason"], [...path, "include_error_reason"]) ?? true,
  };
  if (fmt.declared !== undefined) out.declaredFormat = fmt.declared;
  return out;
}
