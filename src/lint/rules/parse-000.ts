import { isMapping } from "../raw.js";
import type { DocumentRule } from "../types.js";

function describe(value: unknown): string {
  if (value === undefined || value === null) return "empty";
  if (Array.isArray(value)) return "a list";
  return `a ${typeof value === "object" ? "non-mapping value" : typeof value}`;
}

export const parse000: DocumentRule = {
  id: "PARSE-000",
  severity: "critical",
  name: "UnparseableContract",
  title: "File is not a YAML mapping",
  description:
    "The file is not valid YAML (syntax error, duplicate key, several documents in one file) or its " +
    "top level is not a mapping (empty, a list, a plain string). No other rule can judge it, and " +
    "loading it fails at run time.",
  fix: "Fix the YAML at the reported position; a contract's top level is a mapping of keys such as `version`, `dataset`, `model`.",
  tags: ["parse"],
  scope: "document",
  examples: {
    bad: `dataset: orders
model:
  fields: [{ name: order_id, type: string }
`,
    good: `dataset: orders
model:
  fields: [{ name: order_id, type: string }]
`,
  },
  check(doc) {
    const [first, ...rest] = doc.errors;
    if (first?.limit) {
      return [
        {
          message: `The file breaks a contract limit: ${first.message}.`,
          suggestion: "Keep a contract under 4 MiB and write repeated values out instead of nesting YAML aliases; the loader refuses this file too.",
          pos: { line: first.line, column: first.column },
        },
      ];
    }
    if (first) {
      const more = rest.length === 0 ? "" : ` (and ${rest.length} more)`;
      return [
        {
          message: `YAML syntax error: ${first.message}${more}.`,
          suggestion: "Fix the YAML here: unclosed brackets or quotes, bad indentation and duplicate keys are the usual causes.",
          pos: { line: first.line, column: first.column },
        },
      ];
    }
    const data = doc.data;
    if (isMapping(data)) return [];
    return [
      {
        message: `The top level is ${describe(data)}, not a mapping, so this is not a contract.`,
        suggestion: "Write the contract as a YAML mapping (version, dataset, model, …), or move this file out of the linted paths.",
        path: [],
      },
    ];
  },
};
