/**
 * `{name}` placeholders, as the original writes them (`{gold_path}`, `{bronze_layer}`): replaced
 * in every string of a document from a map of values. `${NAME}` (an environment reference) and
 * `{{ … }}` (templates) are not placeholders and are left alone.
 */
import { isObj } from "../normalise/read.js";
import type { YamlPath } from "../yaml.js";

const PLACEHOLDER = /(?<![${])\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})/g;

/** The longest a string may grow to by substitution (values referring to values can multiply). */
export const MAX_RESOLVED_LENGTH = 64 * 1024;

export interface Unresolved {
  path: YamlPath;
  name: string;
}

export interface TooLong {
  path: YamlPath;
}

export interface Substitution {
  value: unknown;
  unresolved: Unresolved[];
  tooLong: TooLong[];
}

/** The placeholder names in `s`, in order. */
export function placeholdersIn(s: string): string[] {
  return [...s.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** One string with the known placeholders replaced; unknown ones stay as written. */
export function substituteString(s: string, vars: ReadonlyMap<string, string>): { text: string; missing: string[] } {
  const missing: string[] = [];
  const text = s.replace(PLACEHOLDER, (whole, name: string) => {
    const v = vars.get(name);
    if (v === undefined) {
      missing.push(name);
      return whole;
    }
    return v;
  });
  return { text, missing };
}

/** A copy of `value` with placeholders replaced in every string (keys are left as written). */
export function substitute(value: unknown, vars: ReadonlyMap<string, string>, path: YamlPath = []): Substitution {
  const unresolved: Unresolved[] = [];
  const tooLong: TooLong[] = [];
  const walk = (v: unknown, p: YamlPath): unknown => {
    if (typeof v === "string") {
      if (!v.includes("{")) return v;
      const { text, missing } = substituteString(v, vars);
      for (const name of missing) unresolved.push({ path: p, name });
      if (text.length > MAX_RESOLVED_LENGTH) {
        tooLong.push({ path: p });
        return v;
      }
      return text;
    }
    if (Array.isArray(v)) return v.map((item, i) => walk(item, [...p, i]));
    if (isObj(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) out[k] = walk(item, [...p, k]);
      return out;
    }
    return v;
  };
  return { value: walk(value, path), unresolved, tooLong };
}
