import type { ContractRule } from "../types.js";
import { loadOutcome, notAContractReason, writesNoContractKeys } from "./loader.js";

export const load003: ContractRule = {
  id: "LOAD-003",
  severity: "critical",
  name: "NotAContract",
  title: "YAML file that is not a contract",
  description:
    "The file loads (unknown keys are only warnings) but has neither `dataset` nor `model.fields`, so it is " +
    "not a data contract: a compose file or a CI workflow in the linted folder. `run`, `start` and " +
    "`schedule create` refuse it (and any contract without `model.fields`) rather than ingest records " +
    "against an empty model.",
  fix: "Declare the fields under `model.fields`, or keep the file out of the linted paths.",
  tags: ["loader"],
  scope: "contract",
  examples: {
    bad: `services:
  kafka:
    image: apache/kafka
`,
    good: `dataset: orders
model:
  fields:
    - { name: order_id, type: string }
`,
  },
  check(contract) {
    // Nothing a contract writes (examples and partial contracts with a dataset are judged by the other rules).
    if (!writesNoContractKeys(contract)) return [];
    const outcome = loadOutcome(contract);
    const reason = outcome.contract ? notAContractReason(outcome.contract) : undefined;
    if (reason === undefined) return [];
    return [
      {
        message: `This file is not a contract: ${reason}.`,
        suggestion: "Declare model.fields, or move the file out of the linted paths.",
        path: [],
      },
    ];
  },
};
