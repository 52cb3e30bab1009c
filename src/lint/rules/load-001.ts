import { basename } from "node:path";
import type { ContractProblem } from "../../contract/errors.js";
import type { RawContract } from "../raw.js";
import type { ContractRule, RuleHit } from "../types.js";
import { loadOutcome, parsePath } from "./loader.js";
import { FROM_ENVIRONMENT, UNRESOLVED } from "./placeholder-001.js";

export const load001: ContractRule = {
  id: "LOAD-001",
  severity: "critical",
  name: "ContractDoesNotLoad",
  title: "Contract the loader refuses",
  description:
    "Lint loads every contract as the run does (with the `_system.yaml` / `_domain.yaml` above it and the " +
    "`--var` / `--env` values given) and reports each problem the loader finds: an unknown field type, a key one " +
    "typo away from a known one (`materialisation`, `requird`, whose setting would otherwise be ignored), a rule " +
    "expression that is not allowed, a field a rule names that the model does not declare, a `sql` rule DuckDB " +
    "does not parse or bind over the contract's typed fields, a value of the wrong kind. `run`, `start` and " +
    "`schedule create` refuse such a contract. When another rule already reports a " +
    "problem on the same line, only that rule's finding is shown; a registry value read from an environment " +
    "variable that lint's process lacks is left to the run.",
  fix: "Correct the key or value at the reported position; the message says what was expected.",
  tags: ["loader"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
primary_key: [order_id]
model:
  fields:
    - { name: order_id, type: string }
    - { name: amount, type: dubble }
materialization:
  strategy: merge
`,
    good: `dataset: orders
primary_key: [order_id]
model:
  fields:
    - { name: order_id, type: string }
    - { name: amount, type: double }
materialization:
  strategy: merge
`,
  },
  check(contract) {
    const outcome = loadOutcome(contract);
    return outcome.problems ? load001Hits(contract, outcome.problems) : [];
  },
};

/** One hit per problem the loader finds (its normalising, or DuckDB binding the sql rules). */
export function load001Hits(contract: RawContract, problems: readonly ContractProblem[]): RuleHit[] {
  const file = contract.context.file;
  const hits: RuleHit[] = [];
  for (const p of problems) {
    // PLACEHOLDER-001 reports placeholders; values from the run's environment are the run's to judge.
    if (UNRESOLVED.test(p.message) || FROM_ENVIRONMENT.test(p.message)) continue;
    const body = p.expected ? `${p.message}; expected ${p.expected}` : p.message;
    // A problem in a registry file: point at the contract's top and say where it is.
    const elsewhere = p.file !== undefined && file !== undefined && p.file !== file;
    const where = elsewhere ? ` (in ${basename(p.file!)}${p.line !== undefined ? `:${p.line}` : ""})` : "";
    hits.push({
      message: `${p.path ? `${p.path}: ` : ""}${body}${where}. The run refuses this contract.`,
      suggestion: "Correct it as the message says; the run loads the contract the same way.",
      ...(!elsewhere && p.line !== undefined ? { pos: { line: p.line, column: p.column ?? 1 } } : { pos: { line: 1, column: 1 } }),
      ...(!elsewhere && p.path ? { path: parsePath(p.path) } : {}),
    });
  }
  return hits;
}
