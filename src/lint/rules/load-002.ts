import { basename } from "node:path";
import type { ContractRule, RuleHit } from "../types.js";
import { loadOutcome, notAContractReason, parsePath, writesNoContractKeys } from "./loader.js";

export const load002: ContractRule = {
  id: "LOAD-002",
  severity: "warning",
  name: "LoaderWarning",
  title: "Key the loader ignores or does not enforce",
  description:
    "The loader accepts the contract but warns: an unknown key (usually a typo such as `materialisation` or " +
    "`requried`, which is then ignored, so its setting silently does not apply), a feature of the Python " +
    "original this runtime does not enforce, or a value derived from elsewhere (a dataset name taken from " +
    "the file name). `run`, `start` and `schedule create` print the same warnings on stderr.",
  fix: "Fix the spelling (the message says the key it probably means), or remove the key.",
  tags: ["loader"],
  scope: "contract",
  examples: {
    bad: `dataset: orders
model:
  fields:
    - { name: order_id, type: string, requried: true }
`,
    good: `dataset: orders
model:
  fields:
    - { name: order_id, type: string, required: true }
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
            ? "Fix the key's spelling or remove it: an ignored key's setting does not apply."
            : "Check that the contract means what the run will do; the run prints this warning too.",
        pos: !elsewhere && loc ? { line: loc.line, column: loc.column } : { line: 1, column: 1 },
        ...(!elsewhere && loc?.path ? { path: parsePath(loc.path) } : {}),
      });
    }
    return hits;
  },
};
