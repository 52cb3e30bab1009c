/**
 * `lakelogic lint` loads every contract as the run does: what the loader refuses is LOAD-001
 * (critical), what it warns about is LOAD-002, YAML that is not a contract is LOAD-003; the
 * default --fail-on is critical, and paths without a contract file are a usage error.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { parseContract } from "../../src/contract/index.js";
import { lintPaths, lintText, type Finding } from "../../src/lint/index.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-loader-findings-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function file(name: string, text: string, dir = tmp): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function lint(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(["lint", ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const brief = (f: Finding) => `${f.id} ${f.line}:${f.column}`;

const TYPOS = `dataset: orders
model:
  fields:
    - name: order_id
      type: string
      requried: true
materialisation:
  strategy: merge
quarantine:
  enabeld: false
`;

describe("lint runs the loader", () => {
  it("reports each key one typo away from a known key as LOAD-001 at its line, with the did-you-mean", () => {
    const findings = lintText(TYPOS, "orders.yaml");
    expect(findings.map(brief)).toEqual(["LOAD-001 6:7", "LOAD-001 7:1", "LOAD-001 10:3"]);
    expect(findings.map((f) => f.severity)).toEqual(["critical", "critical", "critical"]);
    expect(findings[0]?.path).toBe("model.fields[0].requried");
    expect(findings[0]?.message).toContain("did you mean required?");
    expect(findings[1]?.message).toContain("did you mean materialization?");
    expect(findings[2]?.message).toContain("did you mean enabled?");
  });

  it("the CLI fails on misspelt sections by default, naming file, line, column and the key meant", async () => {
    const path = file("typos.yaml", TYPOS);
    const r = await lint(path);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${path}:7:1 critical LOAD-001 materialisation: unknown key 'materialisation' in the contract (did you mean materialization?)`);
  });

  it("reports a key far from every known one as LOAD-002 (a warning), and exits 0 by default", async () => {
    const path = file("far.yaml", "dataset: orders\nmodel:\n  fields:\n    - { name: id, type: integer, semantic_type: identifier }\n");
    const r = await lint(path, "--format", "json");
    expect((JSON.parse(r.stdout) as Finding[]).map((f) => `${brief(f)} ${f.severity}`)).toEqual(["LOAD-002 4:34 warning"]);
    expect(r.code).toBe(0);
    expect((await lint(path, "--fail-on", "warning")).code).toBe(1);
  });

  it("reports what the loader refuses as LOAD-001 (critical), and exits 1 by default", async () => {
    const dubble = file(
      "dubble.yaml",
      "dataset: orders\nmodel:\n  fields:\n    - name: amount\n      type: dubble\n",
    );
    const subquery = file(
      "subquery.yaml",
      'dataset: orders\nmodel:\n  fields:\n    - { name: id, type: integer }\nquality:\n  row_rules:\n    - sql: "id IN (SELECT id FROM other)"\n',
    );
    const report = await lintPaths([dubble, subquery]);
    expect(report.findings.map((f) => `${f.file === dubble ? "dubble" : "subquery"} ${brief(f)} ${f.severity}`)).toEqual([
      "dubble LOAD-001 5:7 critical",
      "subquery LOAD-001 7:7 critical",
    ]);
    expect(report.findings[0]?.message).toContain("dubble");
    expect(report.findings[1]?.message).toMatch(/subquer/i);
    const r = await lint(dubble);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("critical LOAD-001");
  });

  it("has DuckDB parse and bind sql rules: one that does not parse is LOAD-001 at its sql key, and lint exits 1", async () => {
    const path = file(
      "sql-syntax.yaml",
      "dataset: calls\nmodel:\n  fields:\n    - { name: duration_ms, type: long }\nquality:\n  row_rules:\n    - name: duration_not_negative\n      sql: duration_ms >= 0 AND\n",
    );
    const r = await lint(path);
    expect(r.stdout).toContain(`${path}:8:7 critical LOAD-001 quality.row_rules[0].sql: Parser Error: syntax error at end of input`);
    expect(r.code).toBe(1);
  });

  it("reports a YAML file that is not a contract (a compose file) as LOAD-003", async () => {
    const compose = file("docker-compose.yml", "services:\n  kafka:\n    image: apache/kafka\n    ports: ['9092:9092']\n");
    const r = await lint(compose, "--format", "json");
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings.map(brief)).toEqual(["LOAD-003 1:1"]);
    expect(findings[0]?.message).toContain("not a contract");
    expect(r.code).toBe(1);
  });

  it("adds no second finding where a rule already reports the loader's refusal", () => {
    const placeholder = 'dataset: orders\nmodel:\n  fields:\n    - { name: id, type: integer }\nmaterialization:\n  target_path: "{lake_root}/orders"\n';
    // The loader refuses it too …
    expect(() => parseContract(placeholder, "p.yaml")).toThrow(/placeholder \{lake_root\} has no value/);
    // … but one problem is one finding: PLACEHOLDER-001's.
    expect(lintText(placeholder, "p.yaml").map(brief)).toEqual(["PLACEHOLDER-001 6:3"]);
    expect(() => parseContract("dataset: orders\nmodel: [\n", "broken.yaml")).toThrow(/invalid YAML/);
    const unparseable = "dataset: orders\nmodel: [\n";
    expect(lintText(unparseable, "broken.yaml").map((f) => f.id)).toEqual(["PARSE-000"]);
  });

  it("loads with the registry above the contract and the --var values, as the run does", async () => {
    const dir = join(tmp, "registry");
    file("_system.yaml", "environments:\n  dev:\n    lake_root: /tmp/lake\n", dir);
    const path = file(
      "orders.yaml",
      'dataset: orders\nmodel:\n  fields:\n    - { name: id, type: integer }\nmaterialization:\n  target_path: "{lake_root}/orders/{suffix}"\n',
      dir,
    );
    const without = await lint(path, "--format", "json");
    expect((JSON.parse(without.stdout) as Finding[]).map((f) => f.id)).toEqual(["PLACEHOLDER-001"]);
    const withVar = await lint(path, "--format", "json", "--var", "suffix=v1");
    expect(JSON.parse(withVar.stdout)).toEqual([]);
    expect(withVar.code).toBe(0);
  });
});

describe("lint exit codes", () => {
  it("exits 2 for a directory with no contract file (and names it)", async () => {
    const empty = mkdtempSync(join(tmp, "empty-"));
    file("notes.txt", "not yaml", empty);
    const r = await lint(empty);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no contract files");
    expect(r.stderr).toContain(empty);
  });

  it("exits 1 by default when a critical finding exists; --fail-on none reports without failing", async () => {
    const path = file("merge-no-key.yaml", "dataset: orders\nmodel:\n  fields:\n    - { name: id, type: integer }\nmaterialization:\n  strategy: merge\n");
    const r = await lint(path);
    expect(r.stdout).toContain("critical");
    expect(r.code).toBe(1);
    expect((await lint(path, "--fail-on", "none")).code).toBe(0);
  });

  it("lint --help states the default", async () => {
    const r = await lint("--help");
    expect(r.stdout).toMatch(/\(default: critical\)/);
  });
});
