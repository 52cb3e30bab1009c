import { ConfigError } from "../errors.js";
import { didYouMean } from "../contract/suggest.js";
import type { Source } from "../sources/types.js";
import { parseOptions, type ComponentSpec } from "./spec.js";

/** A JSON-configurable source: `{ "type": "<spec.type>", ...options }` → a Source. */
export interface SourceFactory {
  spec: ComponentSpec;
  create(options: Record<string, unknown>): Source | Promise<Source>;
}

const factories = new Map<string, SourceFactory>();

export function registerSource(factory: SourceFactory): void {
  factories.set(factory.spec.type, factory);
}

export function sourceSpecs(): ComponentSpec[] {
  return [...factories.values()].map((f) => f.spec);
}

/**
 * Build a source from plain JSON — the form used by `lakelogic run --source`, a contract's
 * `source:` block and the Temporal workflow input.
 */
export async function createSource(config: unknown): Promise<Source> {
  if (typeof config !== "object" || config === null || Array.isArray(config)) {
    throw new ConfigError("source", `expected an object like {"type": "kafka", ...}; got ${JSON.stringify(config)}`);
  }
  const { type } = config as { type?: unknown };
  if (typeof type !== "string" || type === "") {
    throw new ConfigError("source.type", `is required; one of ${[...factories.keys()].join(", ")}`);
  }
  const factory = factories.get(type.toLowerCase());
  if (!factory) {
    const hint = didYouMean(type, factories.keys());
    throw new ConfigError(
      "source.type",
      `unknown source type "${type}"${hint ? `; did you mean "${hint}"?` : ""} Known: ${[...factories.keys()].join(", ")}`,
    );
  }
  return factory.create(parseOptions(factory.spec, config as Record<string, unknown>));
}
