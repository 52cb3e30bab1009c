/** The stream trigger, wherever the original's lint finds it, in its canonical spelling. */
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asNonEmptyStr, isObj, type Obj } from "./read.js";

const EXPECTED = "available_now, continuous, micro_batch or processing_time";

/** The original's streaming lint accepts these spellings for the same triggers. */
function normaliseTrigger(t: string): string {
  const v = t.trim().toLowerCase();
  const squashed = v.replace(/[_\-\s]/g, "");
  const canonical: Record<string, string> = {
    availablenow: "available_now",
    microbatch: "micro_batch",
    processingtime: "processing_time",
    continuous: "continuous",
    once: "once",
  };
  return canonical[squashed] ?? v;
}

export function readTrigger(cx: NormaliseContext, data: Obj): string | undefined {
  // Top level, then source, then materialization: the first one written wins.
  const holders: Array<[unknown, YamlPath]> = [
    [data, []],
    [data["source"], ["source"]],
    [data["materialization"], ["materialization"]],
  ];
  for (const [holder, base] of holders) {
    if (!isObj(holder) || holder["trigger"] === undefined || holder["trigger"] === null) continue;
    const path: YamlPath = [...base, "trigger"];
    const t = holder["trigger"];
    if (isObj(t)) {
      const key = t["mode"] !== undefined ? "mode" : "type";
      const s = asNonEmptyStr(cx, t[key], [...path, key], EXPECTED);
      return s === undefined ? undefined : normaliseTrigger(s);
    }
    const s = asNonEmptyStr(cx, t, path, EXPECTED);
    return s === undefined ? undefined : normaliseTrigger(s);
  }
  return undefined;
}
