import { ConfigError } from "../../errors.js";
import { parseOptions, type Environment, type OptionsOf } from "../../sources/core/spec.js";
import { streamOptionsSpec, type StreamOptions, type streamSpec } from "./spec.js";

/**
 * The options of a parsed `type: stream` config in one object: those beside `type` (already
 * validated, references resolved, by the registry) and those under `options:` (validated and
 * resolved here, once). An option given in both places is refused rather than one silently
 * winning.
 */
export function mergeStreamOptions(parsed: OptionsOf<typeof streamSpec>, env: Environment = process.env): StreamOptions {
  const { options: nested, path, ...flat } = parsed;
  // The block under `options:` is stored and shared like the rest of the config: a secret must be a reference.
  // streamSpec's check made `options` a mapping.
  const inner: Partial<StreamOptions> = nested === undefined ? {} : parseOptions(streamOptionsSpec, nested as Record<string, unknown>, env, { origin: "config" });
  const merged: Record<string, unknown> = { ...flat };
  for (const [key, value] of Object.entries(inner)) {
    if (value === undefined) continue;
    if (merged[key] !== undefined) {
      throw new ConfigError(`source stream: ${key}`, "is given both beside `type` and under `options:`; give it once");
    }
    merged[key] = value;
  }
  if (path !== undefined) merged["path"] = path;
  // Both halves were checked against STREAM_OPTIONS, which is what StreamOptions spells.
  return merged;
}

/** The snake_case or camelCase key of a stream option, as parseOptions matches it. */
export const camelKey = (key: string): string => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
