import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lintFiles, RULES, severityRank } from "../../src/lint/index.js";

const FIXTURES = "test/fixtures/contracts";
// Lint fixtures are named after their rule (`stream-001-….yaml`); other files here are not ours.
const fixtureFiles = readdirSync(FIXTURES).filter((f) => /^[a-z]+-\d{3}-.*\.ya?ml$/.test(f)).sort();

/** Each fixture states what it must raise: `# expect: RULE-ID line:col` (one line per finding). */
function expectations(file: string): string[] {
  const text = readFileSync(join(FIXTURES, file), "utf8");
  return [...text.matchAll(/^# expect: (\S+) (\d+):(\d+)$/gm)].map((m) => `${m[1]} ${m[2]}:${m[3]}`);
}

describe("unsafe fixture contracts", () => {
  for (const file of fixtureFiles) {
    it(`${file} raises exactly what it declares, at the declared line`, async () => {
      const expected = expectations(file);
      expect(expected.length, `${file} has no "# expect:" line`).toBeGreaterThan(0);
      const findings = await lintFiles([join(FIXTURES, file)]);
      expect(findings.map((f) => `${f.id} ${f.line}:${f.column}`)).toEqual(expected);
      for (const f of findings) expect(f.file).toBe(join(FIXTURES, file));
    });
  }

  it("has at least one fixture per rule, named after it", () => {
    for (const rule of RULES) {
      const prefix = rule.id.toLowerCase();
      const mine = fixtureFiles.filter((f) => f.startsWith(prefix));
      expect(mine.length, `no fixture for ${rule.id}`).toBeGreaterThan(0);
      for (const f of mine) expect(expectations(f).some((e) => e.startsWith(`${rule.id} `)), f).toBe(true);
    }
    expect(fixtureFiles).toContain("parse-000-syntax.yml");
    expect(fixtureFiles).toContain("parse-000-not-mapping.yaml");
  });
});

describe("example contracts", () => {
  it("lint clean at --fail-on warning (and raise nothing at all)", async () => {
    const findings = await lintFiles(["contracts"]);
    expect(findings.filter((f) => severityRank(f.severity) >= severityRank("warning"))).toEqual([]);
    expect(findings).toEqual([]);
  });

  it("include the bronze and silver orders contracts", () => {
    const names = readdirSync("contracts");
    expect(names).toContain("bronze_orders.yaml");
    expect(names).toContain("silver_orders.yaml");
  });
});
