import { basename } from "node:path";
import { resolveWith } from "../../contract/inherit/index.js";
import type { ContractRule, RuleHit } from "../types.js";

/** The loader's words for a placeholder without a value (src/contract/inherit/index.ts). */
export const UNRESOLVED = /^placeholder \{([A-Za-z_][A-Za-z0-9_]*)\} has no value/;
/**
 * A registry value read from an environment variable that lint's process lacks: the run's
 * process may well have it (CI seldom holds a deployment's settings), so lint leaves it to the run.
 */
export const FROM_ENVIRONMENT = /which is not set in the process environment/;

export const placeholder001: ContractRule = {
  id: "PLACEHOLDER-001",
  severity: "critical",
  name: "UnresolvedPlaceholder",
  title: "Placeholder without a value",
  description:
    "A `{name}` placeholder in a section that decides what a stream reads and writes (dataset, source, " +
    "materialization, quarantine, schema_policy, server, trigger, primary_key, info.table_name, …) that " +
    "the `_system.yaml` / `_domain.yaml` above the contract (its `environments.<env>` and `storage`) does not " +
    "fill; lint sees those files and the `vars` given to `lintPaths`, not a run's `--var`. Loading the contract fails on it, so the run never starts; a value kept as " +
    "`{name}` would have written to a literal `{name}` directory. A registry value taken from an unset " +
    "environment variable is left to the run.",
  fix:
    "Define the name under `environments.<env>` (or `storage`) in `_system.yaml` / `_domain.yaml`, or give it " +
    "at run time with `--var name=value`; or write the value itself.",
  tags: ["placeholders", "registry"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  target_path: "{lake_root}/orders"
`,
    good: `dataset: orders
primary_key: [order_id]
materialization:
  strategy: merge
  target_path: lake/orders
`,
  },
  check(contract) {
    const { registry, vars, environment, file } = contract.context;
    const resolved = resolveWith(registry ?? {}, { ...contract.data }, file, contract.doc, {
      ...(vars !== undefined ? { vars } : {}),
      ...(environment !== undefined ? { environment } : {}),
    });
    const hits: RuleHit[] = [];
    for (const p of resolved.problems) {
      const name = UNRESOLVED.exec(p.message)?.[1];
      if (name === undefined || FROM_ENVIRONMENT.test(p.message)) continue;
      // A default inherited from a registry file: point at the contract's top, and say where it was written.
      const elsewhere = p.file !== undefined && p.file !== file;
      const written = elsewhere ? ` (inherited from ${basename(p.file!)}${p.line !== undefined ? `:${p.line}` : ""})` : "";
      hits.push({
        message: `${p.path || "The contract"} uses the placeholder {${name}}${written}, which has no value: loading the contract fails.`,
        suggestion: `Give it at run time (--var ${name}=<value>), or define ${name} under environments.<env> or storage in _system.yaml / _domain.yaml.`,
        pos: !elsewhere && p.line !== undefined ? { line: p.line, column: p.column ?? 1 } : { line: 1, column: 1 },
        ...(!elsewhere && p.path ? { path: p.path.split(".") } : {}),
      });
    }
    return hits;
  },
};
