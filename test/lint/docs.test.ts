import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderLintDocs, renderRuleTable, RULES } from "../../src/lint/index.js";

describe("docs/lint.md", () => {
  const page = readFileSync("docs/lint.md", "utf8");

  it("is what the rule list generates (regenerate: npx tsx src/lint/docs.ts)", () => {
    expect(page).toBe(renderLintDocs());
  });

  it("documents every rule with its severity, description, fix and examples", () => {
    for (const rule of RULES) {
      const start = page.indexOf(`### ${rule.id}: ${rule.title}`);
      expect(start, `${rule.id} has no section`).toBeGreaterThan(0);
      const next = page.indexOf("\n### ", start + 1);
      const section = page.slice(start, next === -1 ? undefined : next);
      expect(section).toContain(`Severity: **${rule.severity}**`);
      expect(section).toContain(rule.description);
      expect(section).toContain(rule.fix);
      expect(section).toContain(rule.examples.bad.trimEnd());
      expect(section).toContain(rule.examples.good.trimEnd());
      expect(page).toContain(`| [${rule.id}](#`);
    }
  });
});

describe("README.md", () => {
  it("lists every lint rule, as the rule list gives them", () => {
    expect(readFileSync("README.md", "utf8")).toContain(renderRuleTable(RULES, "docs/lint.md"));
  });
});
