/** The stream trigger, wherever the original's lint finds it, in its canonical spelling. */
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asNonEmptyStr, isObj, type Obj } from "./read.js";

function blank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === "string" && v.trim() === "");
}

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
  // Top level, then source, then the Python `type: stream` options, then materialization: the
  // first one written wins.
  const source = data["source"];
  const holders: Array<[unknown, YamlPath]> = [
    [data, []],
    [source, ["source"]],
    [isObj(source) ? source["options"] : undefined, ["source", "options"]],
    [data["materialization"], ["materialization"]],
  ];
  for (const [holder, base] of holders) {
    if (!isObj(holder) || blank(holder["trigger"])) continue;
    checkProcessingTime(cx, holder["processing_time"], [...base, "processing_time"]);
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

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1, millisecond: 1, milliseconds: 1,
  s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
  m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
  h: 3_600_000, hr: 3_600_000, hour: 3_600_000, hours: 3_600_000,
};

/**
 * A `processing_time` interval in milliseconds: `"30 seconds"` as the Python package (and Spark)
 * writes it, or `30s`; undefined when it is not a positive number with a unit.
 */
export function parseProcessingTime(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = UNIT_MS[m[2]!.toLowerCase()];
  const ms = unit === undefined ? NaN : Number(m[1]) * unit;
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : undefined;
}

/** `processing_time` beside a trigger (how often a continuous run cuts a batch) must be an interval. */
function checkProcessingTime(cx: NormaliseContext, v: unknown, path: YamlPath): void {
  if (blank(v)) return;
  if (typeof v === "string" && parseProcessingTime(v) !== undefined) return;
  cx.error(path, `found ${JSON.stringify(v)}`, 'an interval such as "30 seconds" or 30s');
}

/**
 * The run a contract's trigger asks for: `available_now` and `once` drain and stop;
 * `continuous`, `processing_time` and `micro_batch` keep running. No trigger, or one this runtime
 * does not know (lint names it), drains, as in the Python package: a run that ends is the safer
 * guess than one that never does.
 */
export function runModeOfTrigger(trigger: string | undefined): "available_now" | "continuous" {
  switch (trigger) {
    case "continuous":
    case "processing_time":
    case "micro_batch":
      return "continuous";
    default:
      return "available_now";
  }
}

/** How a stream runs (src/pipeline/modes.ts: StreamMode), named here where contracts are read. */
export type TriggerRunMode = "available_now" | "continuous" | "processing_time";

/**
 * The run a contract's trigger asks for, processing_time kept: a batch every interval (the
 * interval is `processing_time` beside the trigger, or `interval` inside a trigger mapping).
 * `runModeOfTrigger` says how such a run reads its source (continuous).
 */
export function streamModeOfTrigger(trigger: string | undefined): TriggerRunMode {
  return trigger === "processing_time" ? "processing_time" : runModeOfTrigger(trigger);
}
