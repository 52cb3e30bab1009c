import { basename } from "node:path";
import type { ContractRule, RuleHit } from "../types.js";
import { loadOutcome, notAContractReason, parsePath, writesNoContractKeys } from "./loader.js";

export const load002: ContractRule = {
  id: "LOAD-002",
  severity: "warning",
  name: "LoaderWarning",
  title: "Key the loader ignores or does not enforce",
  description:
    "The loader accepts the contract but warns: an unknown key that is not close to any key it reads (a key " +
    "for another tool; one a typo away from a known key, such as `materialisation`, is LOAD-001), a feature of " +
    "the Python original this runtime does not enforce, or a value derived from elsewhere (a dataset name " +
    "taken from the file name). `run`, `start` and `schedule create` print the same warnings on stderr.",
  fix: "Remove the key, or start it with `x-` to say it is for another tool.",
  tags: ["loader"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
model:
  fields:
    - { name: order_id, type: string, semantic_type: identifier }
`,
    good: `dataset: orders
model:
  fields:
    - { name: order_id, type: string, x-semantic_type: identifier }
`,
  },
  check(contract) {
    const outcome = loadOutcome(contract);
    // A file that is not a contract is LOAD-003's; its unknown keys would only add noise.
    if (!outcome.contract || (writesNoContractKeys(contract) && notAContractReason(outcome.contract) !== undefined)) return [];
    const file = contract.context.file;
    const hits: RuleHit[] = [];
    for (const w of outcome.contract.warnings) {
      const loc = w.loc;
      const elsewhere = loc?.file !== undefined && file !== undefined && loc.file !== file;
      const where = elsewhere ? ` (in ${basename(loc.file!)}:${loc.line})` : "";
      hits.push({
        message: `${w.message}${where}.`.replace(/\.\.$/, "."),
        suggestion:
          w.code === "unknown-key"
            ? "Remove the key or start it with x-: an ignored key's setting does not apply."
            : "Check that the contract means what the run will do; the run prints this warning too.",
        pos: !elsewhere && loc ? { line: loc.line, column: loc.column } : { line: 1, column: 1 },
        ...(!elsewhere && loc?.path ? { path: parsePath(loc.path) } : {}),
      });
    }
    return hits;
  },
};
