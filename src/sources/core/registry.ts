import { ConfigError } from "../../errors.js";
import { didYouMean } from "../../contract/suggest.js";
import type { Source } from "./types.js";
import { parseOptions, type ComponentSpec, type OptionsOf } from "./spec.js";

/**
 * A JSON-configurable source: `{ "type": "<spec.type>", ...options }` → a Source. `create`
 * receives the options as `parseOptions(spec, …)` returns them: typed by the spec when the spec
 * is declared `as const satisfies ComponentSpec`.
 */
export interface SourceFactory<S extends ComponentSpec = ComponentSpec> {
  spec: S;
  create(options: OptionsOf<S>): Source | Promise<Source>;
}

/**
 * A set of source factories by `type`. The built-in transports are listed explicitly in
 * `sources/registry.ts`; a user may add their own with `register`.
 */
export class SourceRegistry {
  private readonly factories = new Map<string, SourceFactory>();

  constructor(factories: readonly SourceFactory[] = []) {
    for (const f of factories) this.register(f);
  }

  register(factory: SourceFactory): void {
    this.factories.set(factory.spec.type, factory);
  }

  specs(): ComponentSpec[] {
    return [...this.factories.values()].map((f) => f.spec);
  }

  /**
   * Build a source from plain JSON — the form used by `lakelogic run --source`, a contract's
   * `source:` block and the Temporal workflow input.
   */
  async create(config: unknown): Promise<Source> {
    if (typeof config !== "object" || config === null || Array.isArray(config)) {
      throw new ConfigError("source", `expected an object like {"type": "kafka", ...}; got ${JSON.stringify(config)}`);
    }
    const { type } = config as { type?: unknown };
    const known = [...this.factories.keys()];
    if (typeof type !== "string" || type === "") {
      throw new ConfigError("source.type", `is required; one of ${known.join(", ")}`);
    }
    const factory = this.factories.get(type.toLowerCase());
    if (!factory) {
      const hint = didYouMean(type, known);
      throw new ConfigError(
        "source.type",
        `unknown source type "${type}"${hint ? `; did you mean "${hint}"?` : ""} Known: ${known.join(", ")}`,
      );
    }
    return factory.create(parseOptions(factory.spec, config as Record<string, unknown>));
  }
}
