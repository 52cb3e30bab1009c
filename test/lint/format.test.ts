import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  formatFindings,
  lintText,
  RULES,
  toSarif,
  type Finding,
  type SarifLog,
} from "../../src/lint/index.js";

const ROOT = resolve("/repo");
const file = "contracts/orders.yaml";
// One finding of each severity, from real rules.
const findings: Finding[] = lintText(
  [
    "dataset: orders",
    "source:",
    "  type: kafka",
    "materialization:",
    "  strategy: merge",
    "  format: duckdb",
    "trigger: continuous",
  ].join("\n") + "\n",
  file,
).concat(lintText("dataset: x\nsource:\n  type: sqs\nmaterialization:\n  strategy: append\n", "contracts/q.yaml"));

const opts = { toolVersion: "1.2.3", root: ROOT, filesScanned: 2 };

describe("findings under test", () => {
  it("cover all three severities", () => {
    expect(findings.map((f) => `${f.id}:${f.severity}`)).toEqual([
      "PK-002:critical",
      "STREAM-002:info",
      "STREAM-001:warning",
    ]);
  });
});

describe("text format", () => {
  it("prints file:line:col severity ID message, the suggestion under it, and a summary", () => {
    const out = formatFindings(findings, "text", opts);
    const lines = out.split("\n");
    expect(lines[0]).toBe(`contracts/orders.yaml:5:3 critical PK-002 ${findings[0]?.message}`);
    expect(lines[1]).toBe(`  → ${findings[0]?.suggestion}`);
    expect(lines[2]).toMatch(/^contracts\/orders\.yaml:7:1 info STREAM-002 /);
    expect(lines[4]).toMatch(/^contracts\/q\.yaml:5:3 warning STREAM-001 /);
    expect(out.trimEnd().split("\n").at(-1)).toBe("3 problems in 2 files (1 critical, 1 warning, 1 info).");
    expect(out.endsWith("\n")).toBe(true);
  });

  it("says so when there is nothing to report", () => {
    expect(formatFindings([], "text", opts)).toBe("No problems found in 2 files.\n");
  });
});

describe("json format", () => {
  it("is an array of findings with a stable key order", () => {
    const parsed = JSON.parse(formatFindings(findings, "json", opts)) as Array<Record<string, unknown>>;
    expect(parsed).toHaveLength(3);
    for (const f of parsed) {
      expect(Object.keys(f)).toEqual(["id", "severity", "file", "line", "column", "path", "message", "suggestion"]);
    }
    expect(parsed[0]).toMatchObject({ id: "PK-002", severity: "critical", file, line: 5, column: 3, path: "materialization.strategy" });
  });

  it("keeps the order even for findings built in another order, and omits absent optional keys", () => {
    const scrambled = { suggestion: "s", message: "m", line: 2, file: "f.yaml", severity: "info", id: "X-1" } as Finding;
    const [f] = JSON.parse(formatFindings([scrambled], "json", opts)) as Array<Record<string, unknown>>;
    expect(Object.keys(f ?? {})).toEqual(["id", "severity", "file", "line", "message", "suggestion"]);
    expect(formatFindings([], "json", opts)).toBe("[]\n");
  });
});

describe("github format", () => {
  it("emits one workflow command per finding: critical → error, warning → warning, info → notice", () => {
    const lines = formatFindings(findings, "github", opts).trimEnd().split("\n");
    expect(lines[0]).toMatch(/^::error file=contracts\/orders\.yaml,line=5,col=3,title=PK-002::materialization\.strategy is "merge"/);
    expect(lines[1]).toMatch(/^::notice file=contracts\/orders\.yaml,line=7,col=1,title=STREAM-002::/);
    expect(lines[2]).toMatch(/^::warning file=contracts\/q\.yaml,line=5,col=3,title=STREAM-001::/);
    // The suggestion rides in the same annotation, on its own line (encoded newline).
    expect(lines[0]).toContain(`%0A→ ${findings[0]?.suggestion}`);
    expect(lines.at(-1)).toBe("lakelogic lint: 3 findings in 2 files (1 critical, 1 warning, 1 info)");
  });

  it("escapes data and property values as the runner decodes them", () => {
    const tricky: Finding = {
      id: "X-1",
      severity: "warning",
      file: "dir,with:odd/100%.yaml",
      line: 3,
      message: "50% done\r\nnext",
      suggestion: "a, b: c",
    };
    const [line] = formatFindings([tricky], "github", opts).split("\n");
    expect(line).toBe("::warning file=dir%2Cwith%3Aodd/100%25.yaml,line=3,title=X-1::50%25 done%0D%0Anext%0A→ a, b: c");
  });

  it("makes absolute paths inside the root relative, so annotations attach", () => {
    const abs = { ...findings[0]!, file: join(ROOT, "contracts", "orders.yaml") };
    expect(formatFindings([abs], "github", opts)).toMatch(/^::error file=contracts\/orders\.yaml,/);
  });
});

describe("sarif format", () => {
  const log = JSON.parse(formatFindings(findings, "sarif", opts)) as SarifLog;
  const run = log.runs[0]!;

  it("has the SARIF 2.1.0 envelope and the tool driver with every rule", () => {
    expect(log.$schema).toMatch(/sarif-2\.1\.0/);
    expect(log.version).toBe("2.1.0");
    expect(log.runs).toHaveLength(1);
    const driver = run.tool.driver;
    expect(driver).toMatchObject({ name: "lakelogic", version: "1.2.3", semanticVersion: "1.2.3" });
    // No homepage is declared, so no informationUri (optional in SARIF 2.1.0).
    expect(driver.informationUri).toBeUndefined();
    expect(driver.rules.map((r) => r.id)).toEqual(RULES.map((r) => r.id));
    for (const [i, rule] of driver.rules.entries()) {
      const src = RULES[i]!;
      expect(rule.name).toBe(src.name);
      expect(rule.shortDescription.text).toBe(src.title);
      expect(rule.fullDescription.text).toBe(src.description);
      expect(rule.help.text).toContain(src.fix);
      expect(rule.help.markdown).toContain("```yaml");
      expect(rule.defaultConfiguration.level).toBe({ critical: "error", warning: "warning", info: "note" }[src.severity]);
      expect(rule.properties.tags.length).toBeGreaterThan(0);
    }
  });

  it("maps each finding to a result with rule index, level, message, location and fingerprint", () => {
    expect(run.results).toHaveLength(3);
    expect(run.results.map((r) => r.level)).toEqual(["error", "note", "warning"]);
    for (const [i, result] of run.results.entries()) {
      const f = findings[i]!;
      expect(result.ruleId).toBe(f.id);
      expect(run.tool.driver.rules[result.ruleIndex]?.id).toBe(f.id);
      expect(result.message.text).toContain(f.message);
      expect(result.message.text).toContain(f.suggestion);
      const loc = result.locations[0]!.physicalLocation;
      expect(loc.artifactLocation).toEqual({ uri: f.file, uriBaseId: "%SRCROOT%" });
      expect(loc.region).toEqual({ startLine: f.line, startColumn: f.column });
      expect(Object.values(result.partialFingerprints)[0]).toMatch(/^[0-9a-f]{32}$/);
    }
  });

  it("keeps fingerprints stable when a finding moves to another line", () => {
    const moved = findings.map((f) => ({ ...f, line: f.line + 10 }));
    const a = toSarif(findings, opts).runs[0]!.results.map((r) => r.partialFingerprints);
    const b = toSarif(moved, opts).runs[0]!.results.map((r) => r.partialFingerprints);
    expect(b).toEqual(a);
    expect(new Set(a.map((p) => JSON.stringify(p))).size).toBe(3);
  });

  it("writes relative, forward-slash, percent-encoded URIs; files outside the root get file: URIs", () => {
    const odd: Finding = { ...findings[0]!, file: join(ROOT, "my contracts", "ä.yaml") };
    const outside: Finding = { ...findings[0]!, file: resolve("/elsewhere/x.yaml") };
    const [a, b] = toSarif([odd, outside], opts).runs[0]!.results.map((r) => r.locations[0]!.physicalLocation.artifactLocation);
    expect(a).toEqual({ uri: "my%20contracts/%C3%A4.yaml", uriBaseId: "%SRCROOT%" });
    expect(b?.uri).toBe("file:///elsewhere/x.yaml");
    expect(b?.uriBaseId).toBeUndefined();
  });

  it("never writes a line or column below 1", () => {
    const zero: Finding = { ...findings[0]!, line: 0, column: 0 };
    const region = toSarif([zero], opts).runs[0]!.results[0]!.locations[0]!.physicalLocation.region;
    expect(region).toEqual({ startLine: 1, startColumn: 1 });
  });

  it("is a valid log with no results when there are no findings", () => {
    const empty = toSarif([], opts);
    expect(empty.runs[0]!.results).toEqual([]);
    expect(empty.runs[0]!.tool.driver.rules).toHaveLength(RULES.length);
  });

  // The official SARIF 2.1.0 schema (shipped by @microsoft/jest-sarif), checked with a
  // draft-04 JSON Schema validator: both are dev dependencies.
  it("validates against the SARIF 2.1.0 JSON schema", () => {
    const validate = loadSchemaKit();
    expect(validate(JSON.parse(formatFindings(findings, "sarif", opts)))).toEqual([]);
    expect(validate(JSON.parse(formatFindings([], "sarif", opts)))).toEqual([]);
    // And the check itself can fail: a result without a message is not SARIF.
    const broken = JSON.parse(formatFindings(findings, "sarif", opts)) as { runs: Array<{ results: Array<Record<string, unknown>> }> };
    delete broken.runs[0]!.results[0]!.message;
    expect(validate(broken)).not.toEqual([]);
  });
});

type Validate = (doc: unknown) => unknown[];

function loadSchemaKit(): Validate {
  const require = createRequire(import.meta.url);
  const schemaPath = require.resolve("@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json");
  const Ajv = require("ajv-draft-04") as new (opts: object) => {
    compile(schema: unknown): ((doc: unknown) => boolean) & { errors?: unknown[] | null };
  };
  // The published schema has a pattern that is invalid under the `u` flag.
  const ajv = new Ajv({ allErrors: true, strict: false, unicodeRegExp: false, validateFormats: false });
  const check = ajv.compile(JSON.parse(readFileSync(schemaPath, "utf8")));
  return (doc) => (check(doc) ? [] : (check.errors ?? ["invalid"]));
}
