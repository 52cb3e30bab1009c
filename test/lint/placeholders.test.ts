import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lintPaths, lintText, RULES, type Finding } from "../../src/lint/index.js";

const only = (findings: Finding[], id: string): Finding[] => findings.filter((f) => f.id === id);
const lineOf = (yaml: string, needle: string): number => yaml.split("\n").findIndex((l) => l.includes(needle)) + 1;

const CONTRACT = `version: 1.0.0
dataset: orders
primary_key: [order_id]
info:
  description: "Orders of {region}, documentation only"
model:
  fields:
    - { name: order_id, type: string, required: true }
source:
  type: sse
  url: https://example.com/stream
  headers: { Authorization: "Bearer \${ENV:FEED_TOKEN}" }
materialization:
  strategy: merge
  target_path: "{lake_root}/orders"
`;

const dir = mkdtempSync(join(tmpdir(), "lakelogic-lint-ph-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function project(name: string, system: string | undefined): string {
  const root = join(dir, name);
  mkdirSync(join(root, "contracts"), { recursive: true });
  if (system !== undefined) writeFileSync(join(root, "_system.yaml"), system);
  const file = join(root, "contracts", "orders.yaml");
  writeFileSync(file, CONTRACT);
  return file;
}

describe("PLACEHOLDER-001 an unresolved {placeholder}", () => {
  it("fires where the contract uses a placeholder nothing gives a value, naming it and --var", () => {
    const found = only(lintText(CONTRACT, "c.yaml"), "PLACEHOLDER-001");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "critical", line: lineOf(CONTRACT, "target_path"), path: "materialization.target_path" });
    expect(found[0]!.message).toMatch(/\{lake_root\}/);
    expect(found[0]!.suggestion).toMatch(/--var lake_root=/);
  });

  it("is quiet when the value is given, and never judges env references or documentation", () => {
    expect(only(lintText(CONTRACT, "c.yaml", RULES, { vars: { lake_root: "/lake" } }), "PLACEHOLDER-001")).toEqual([]);
  });

  it("reads the _system.yaml above the contract, as the loader does", async () => {
    const resolved = project("resolved", "environments:\n  dev:\n    lake_root: /data/lake\n");
    expect(only((await lintPaths([resolved])).findings, "PLACEHOLDER-001")).toEqual([]);
    const missing = project("missing", "environments:\n  dev:\n    other_root: /data/lake\n");
    expect(only((await lintPaths([missing])).findings, "PLACEHOLDER-001").map((f) => f.line)).toEqual([lineOf(CONTRACT, "target_path")]);
  });

  it("leaves a value the registry takes from the environment to the run (CI has no secrets)", async () => {
    const file = project("from-env", "environments:\n  dev:\n    lake_root: ${LL_TEST_LINT_UNSET_ROOT}\n");
    delete process.env.LL_TEST_LINT_UNSET_ROOT;
    expect(only((await lintPaths([file])).findings, "PLACEHOLDER-001")).toEqual([]);
  });

  it("reports a registry file that does not load, since the run fails on it too", async () => {
    const file = project("broken", "environments: [unclosed\n");
    const found = (await lintPaths([file])).findings.filter((f) => f.severity === "critical");
    expect(found).toHaveLength(1);
    expect(found[0]!.message).toMatch(/_system\.yaml/);
  });
});
