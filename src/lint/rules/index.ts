import type { LintRule } from "../types.js";
import { checkpoint001 } from "./checkpoint-001.js";
import { format001 } from "./format-001.js";
import { load001 } from "./load-001.js";
import { load002 } from "./load-002.js";
import { load003 } from "./load-003.js";
import { name001 } from "./name-001.js";
import { name002 } from "./name-002.js";
import { parse000 } from "./parse-000.js";
import { pk002 } from "./pk-002.js";
import { placeholder001 } from "./placeholder-001.js";
import { secret001 } from "./secret-001.js";
import { stream001 } from "./stream-001.js";
import { stream002 } from "./stream-002.js";
import { stream003 } from "./stream-003.js";
import { stream004 } from "./stream-004.js";
import { spark001 } from "./spark-001.js";

/**
 * Every rule, in documentation order. Adding a rule: write a module beside this one and list
 * it here; the docs test then fails until docs/lint.md is regenerated.
 */
export const RULES: readonly LintRule[] = [
  parse000,
  pk002,
  stream001,
  stream002,
  stream003,
  stream004,
  spark001,
  name001,
  name002,
  secret001,
  placeholder001,
  checkpoint001,
  format001,
  load001,
  load002,
  load003,
];

export function findRule(id: string): LintRule | undefined {
  return RULES.find((r) => r.id === id);
}
