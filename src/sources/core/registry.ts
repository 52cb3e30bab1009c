import { ConfigError } from "../../errors.js";
import { didYouMean } from "../../contract/suggest.js";
import type { Source } from "./types.js";
import { literalSecrets } from "./secret-literal.js";
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
   * Refuse, as `create` would, a secret written as a literal into `config` — without resolving
   * references or opening anything. For a client that hands the config to a worker (a Temporal
   * workflow input): the refusal must come before the config is stored in a history. Other
   * problems (an unknown type, a missing option) are left to `create`.
   */
  assertNoLiteralSecrets(config: unknown): void {
    if (typeof config !== "object" || config === null || Array.isArray(config)) return;
    const { type } = config as { type?: unknown };
    const factory = typeof type === "string" ? this.factories.get(type.toLowerCase()) : undefined;
    if (!factory) return;
    const [literal] = literalSecrets(factory.spec, config as Record<string, unknown>);
    if (literal) throw new ConfigError(`source ${factory.spec.type}: ${literal.option}`, literal.message);
  }

  /**
   * Build a source from plain JSON — the form used by `lakelogic run --source`, a contract's
   * `source:` block and the Temporal workflow input. These are stored and shared, so a secret
   * written into one as a literal is refused: it must be `env:NAME` or hold `${ENV:NAME}`.
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
    return factory.create(parseOptions(factory.spec, config as Record<string, unknown>, process.env, { origin: "config" }));
  }
}
