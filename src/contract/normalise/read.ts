/**
 * Readers for the values of a contract document: each returns the value in the shape asked for,
 * or records a problem (found X, expected Y) at its path and returns undefined.
 */
import { didYouMean } from "../suggest.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";

export type Obj = Record<string, unknown>;
export type Scalar = string | number | boolean;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `Array.isArray` narrows to `any[]`; the items of a parsed document are unknown. */
function isList(v: unknown): v is unknown[] {
  return Array.isArray(v);
}

/** How a value that has the wrong shape is named in a message. */
export function describe(v: unknown): string {
  if (Array.isArray(v)) return "a list";
  switch (typeof v) {
    case "undefined":
      return "nothing";
    case "object":
      return v === null ? "nothing" : "a mapping";
    case "string":
      return `"${v.length > 40 ? v.slice(0, 40) + "…" : v}"`;
    // Numbers, booleans and bigints come from YAML; symbols and functions only from code.
    case "number":
    case "boolean":
    case "bigint":
    case "symbol":
    case "function":
      return String(v);
  }
}

export function asMap(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a mapping"): Obj | undefined {
  if (v === undefined || v === null) return undefined;
  if (isObj(v)) return v;
  cx.error(path, `found ${describe(v)}`, expected);
  return undefined;
}

export function asList(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a list"): unknown[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (isList(v)) return v;
  cx.error(path, `found ${describe(v)}`, expected);
  return undefined;
}

export function asStr(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a string"): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v;
  // YAML turns `version: 2` or `name: 2024` into numbers; the text is what was meant.
  if (typeof v === "number" || typeof v === "boolean") return cx.doc?.scalarSource?.(path) ?? String(v);
  cx.error(path, `found ${describe(v)}`, expected);
  return undefined;
}

export function asNonEmptyStr(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a non-empty string"): string | undefined {
  const s = asStr(cx, v, path, expected);
  if (s !== undefined && s.trim() === "") {
    cx.error(path, "is empty", expected);
    return undefined;
  }
  return s?.trim();
}

export function asBool(cx: NormaliseContext, v: unknown, path: YamlPath): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "boolean") return v;
  // The original (pydantic) also accepts these spellings.
  if (typeof v === "string") {
    const t = v.trim().toLowerCase();
    if (["true", "yes", "on", "1"].includes(t)) return true;
    if (["false", "no", "off", "0"].includes(t)) return false;
  }
  if (v === 1) return true;
  if (v === 0) return false;
  cx.error(path, `found ${describe(v)}`, "true or false");
  return undefined;
}

export function asNum(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a number"): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  cx.error(path, `found ${describe(v)}`, expected);
  return undefined;
}

/**
 * An optional string: absent, null and blank text all mean "not set", as in the original (which
 * reads `target_path: ""` as no target path). Other values are read as `asStr` reads them.
 */
export function asOptStr(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a string"): string | undefined {
  if (typeof v === "string" && v.trim() === "") return undefined;
  return asStr(cx, v, path, expected)?.trim();
}

/** `"a"` or `[a, b]` → string list. */
export function asStrList(cx: NormaliseContext, v: unknown, path: YamlPath, expected = "a name or a list of names"): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v.trim() === "" ? [] : [v.trim()];
  if (!Array.isArray(v)) {
    cx.error(path, `found ${describe(v)}`, expected);
    return undefined;
  }
  const out: string[] = [];
  v.forEach((item, i) => {
    const s = asNonEmptyStr(cx, item, [...path, i], "a name");
    if (s !== undefined) out.push(s);
  });
  return out;
}

/** A non-empty list of strings, numbers or booleans (accepted values). */
export function asScalarList(cx: NormaliseContext, v: unknown, path: YamlPath): Scalar[] | undefined {
  const items = asList(cx, v, path, "a non-empty list of values");
  if (!items) return undefined;
  if (items.length === 0) {
    cx.error(path, "is empty", "a non-empty list of values");
    return undefined;
  }
  const out: Scalar[] = [];
  items.forEach((x, i) => {
    if (typeof x === "string" || typeof x === "number" || typeof x === "boolean") out.push(x);
    else cx.error([...path, i], `found ${describe(x)}`, "a string, number or boolean value");
  });
  return out;
}

/**
 * Keys outside `known`. A key within a typo's distance of a known one is an error: its setting
 * would otherwise be ignored while the author believes it applies (`materialisation:` running as
 * append). Any other unknown key is a warning, except in `onlyIfClose` sections (free-form
 * metadata), where it is said nothing about. Keys starting with `_` or `x-` are the author's own.
 * `nearMiss: "warning"` is for YAML that is not a contract at all, whose keys are no misspellings.
 */
export function checkKeys(
  cx: NormaliseContext,
  obj: Obj,
  path: YamlPath,
  known: readonly string[],
  section: string,
  onlyIfClose = false,
  nearMiss: "error" | "warning" = "error",
): void {
  for (const key of Object.keys(obj)) {
    if (known.includes(key) || key.startsWith("_") || key.startsWith("x-")) continue;
    const guess = didYouMean(key, known);
    if (guess !== undefined && nearMiss === "error") {
      cx.error([...path, key], `unknown key '${key}' in ${section} (did you mean ${guess}?)`, `${guess}, or x-${key} for a key of another tool`);
    } else if (guess !== undefined) {
      cx.warn([...path, key], `unknown key '${key}' in ${section} is ignored (did you mean ${guess}?)`, "unknown-key");
    } else if (!onlyIfClose) {
      cx.warn([...path, key], `unknown key '${key}' in ${section} is ignored`, "unknown-key");
    }
  }
}

/** A required key is missing: say so, and point at a misspelling of it when there is one. */
export function missing(cx: NormaliseContext, obj: Obj, path: YamlPath, key: string, expected: string): void {
  const near = Object.keys(obj).find((k) => k !== key && didYouMean(k, [key]) === key);
  if (near !== undefined) {
    // checkKeys may have refused the same key as unknown: one problem, said as the missing key.
    cx.dropProblems([...path, near], "unknown key ");
    cx.error([...path, near], `missing required key '${key}' (found '${near}': did you mean ${key}?)`, expected);
  } else {
    cx.error([...path, key], `missing required key '${key}'`, expected);
  }
}

/** `unknown <what> '<given>' (did you mean <guess>?)`, the guess only when one is close. */
export function unknownChoice(what: string, given: string, guess: string | undefined): string {
  return `unknown ${what} '${given}'${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`;
}
