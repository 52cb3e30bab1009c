import { hasPrimaryKey, strategyOf } from "../facts.js";
import { isMapping, type RawContract } from "../raw.js";
import type { ContractRule } from "../types.js";

/** Strategies that match incoming rows to stored ones by key. */
const KEYED_STRATEGIES: ReadonlySet<string> = new Set(["merge", "upsert", "scd2"]);

/** A likely key to name in the suggestion: a required `id` / `*_id` field. */
function likelyKey(contract: RawContract): string | undefined {
  const fields = contract.get(["model", "fields"]);
  if (!Array.isArray(fields)) return undefined;
  for (const f of fields) {
    if (!isMapping(f) || typeof f["name"] !== "string") continue;
    const name = f["name"];
    if (f["required"] === true && (name === "id" || name.endsWith("_id"))) return name;
  }
  return undefined;
}

export const pk002: ContractRule = {
  id: "PK-002",
  severity: "critical",
  name: "KeyedStrategyWithoutPrimaryKey",
  title: "Merge without a primary key",
  description:
    "`materialization.strategy` is merge (or upsert, scd2) but `primary_key` is missing or empty. " +
    "These strategies match incoming rows to stored rows by key; without one there is nothing to " +
    "match on, so the result depends on row order and a replayed batch is not absorbed.",
  fix: "Declare `primary_key: [<column>, …]` naming the column(s) that identify a row.",
  tags: ["keys", "materialization"],
  scope: "contract",
  examples: {
    bad: `dataset: customers
model:
  fields:
    - { name: customer_id, type: string, required: true }
materialization:
  strategy: merge
`,
    good: `dataset: customers
primary_key: [customer_id]
model:
  fields:
    - { name: customer_id, type: string, required: true }
materialization:
  strategy: merge
`,
  },
  check(contract) {
    const strategy = strategyOf(contract);
    if (!KEYED_STRATEGIES.has(strategy.value) || hasPrimaryKey(contract)) return [];
    const key = likelyKey(contract);
    return [
      {
        message:
          `materialization.strategy is "${strategy.value}" but no primary_key is declared: rows cannot be ` +
          `matched, so the result depends on row order and replays add duplicates.`,
        suggestion: key
          ? `Declare primary_key: [${key}] (or the columns that identify a row).`
          : "Declare primary_key: [<column>] naming the column(s) that identify a row.",
        path: contract.has(["primary_key"]) ? ["primary_key"] : strategy.path,
      },
    ];
  },
};
