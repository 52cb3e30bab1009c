import type { RegistryFiles } from "../contract/inherit/registry-files.js";
import type { YamlDoc, YamlPath } from "../contract/yaml.js";

/** What the run would also know about a contract: its file, the registry files above it, run-time values. */
export interface LintContext {
  file?: string;
  /** `_system.yaml` / `_domain.yaml` that apply (read by `lintPaths`; none for `lintText`). */
  registry?: RegistryFiles;
  /** `{placeholder}` values given at run time (`--var name=value`). */
  vars?: Readonly<Record<string, string>>;
  /** The registry's `environments.<name>` that binds placeholders (the loader's default when absent). */
  environment?: string;
}

/**
 * Read-only access to a contract exactly as written. Lint deliberately does not use the
 * normalising loader: it must also judge contracts the loader would reject, and it must be
 * able to tell "absent" from "explicitly set".
 */
export class RawContract {
  constructor(
    readonly data: Readonly<Record<string, unknown>>,
    readonly doc: YamlDoc,
    readonly context: LintContext = {},
  ) {}

  /** Value at `path`, or undefined when any step is missing or not a container. */
  get(path: YamlPath): unknown {
    let node: unknown = this.data;
    for (const part of path) {
      if (Array.isArray(node) && typeof part === "number") node = node[part];
      else if (isMapping(node) && Object.hasOwn(node, String(part))) node = node[String(part)];
      else return undefined;
    }
    return node;
  }

  /** True when the last key of `path` is written, even with a null value. */
  has(path: YamlPath): boolean {
    if (path.length === 0) return true;
    const parent = this.get(path.slice(0, -1));
    const last = path[path.length - 1];
    if (Array.isArray(parent)) return typeof last === "number" && last < parent.length;
    return isMapping(parent) && Object.hasOwn(parent, String(last));
  }

  /** Scalar at `path` as a string (numbers and booleans too), or undefined. */
  text(path: YamlPath): string | undefined {
    const v = this.get(path);
    if (typeof v === "string") return v;
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    return undefined;
  }
}

export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** `Available-Now`, `available_now` and `availableNow` all compare equal. */
export function normalizeToken(value: string): string {
  return value.trim().toLowerCase().replace(/[\s_-]+/g, "");
}
