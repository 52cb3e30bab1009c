import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { MAX_CONTRACT_BYTES } from "../../src/contract/yaml.js";
import { lintPaths, lintText, type Finding } from "../../src/lint/index.js";

/** Nine levels of nine aliases: 9^9 strings once expanded. */
function aliasBomb(): string {
  const lines = ["dataset: lol", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  const names = "abcdefghi";
  for (let i = 1; i < names.length; i++) {
    lines.push(`${names[i]}: &${names[i]} [${Array.from({ length: 9 }, () => `*${names[i - 1]}`).join(",")}]`);
  }
  return lines.join("\n") + "\n";
}

let dir: string;
const GOOD = readFileSync("contracts/bronze_orders.yaml", "utf8");

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "lakelogic-lint-hostile-"));
  writeFileSync(join(dir, "a_bomb.yaml"), aliasBomb());
  writeFileSync(join(dir, "b_big.yaml"), "dataset: big\ninfo:\n  description: " + "x".repeat(4 * 1024 * 1024) + "\n");
  writeFileSync(join(dir, "c_good.yaml"), GOOD);
  writeFileSync(join(dir, "d_unresolved.yaml"), "dataset: x\nmodel: *nowhere\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(...argv: string[]): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("lint on hostile YAML", () => {
  it("reports an alias bomb as PARSE-000 at the first alias", () => {
    const findings = lintText(aliasBomb(), "bomb.yaml");
    expect(findings.map((f) => [f.id, f.line])).toEqual([["PARSE-000", 3]]);
    expect(findings[0]!.message).toMatch(/alias/);
  });

  it("reports a file over the size limit as PARSE-000, naming the limit", () => {
    const findings = lintText("dataset: x\n# " + "x".repeat(MAX_CONTRACT_BYTES) + "\n", "big.yaml");
    expect(findings.map((f) => f.id)).toEqual(["PARSE-000"]);
    expect(findings[0]!.message).toContain(`${MAX_CONTRACT_BYTES} bytes`);
  });

  it("reports every file of a directory, the hostile ones as PARSE-000, and lints the others", async () => {
    const report = await lintPaths([dir]);
    expect(report.files.map((f) => f.slice(dir.length + 1))).toEqual(["a_bomb.yaml", "b_big.yaml", "c_good.yaml", "d_unresolved.yaml"]);
    const byFile = (name: string): Finding[] => report.findings.filter((f) => f.file === join(dir, name));
    expect(byFile("a_bomb.yaml").map((f) => f.id)).toEqual(["PARSE-000"]);
    expect(byFile("b_big.yaml").map((f) => f.id)).toEqual(["PARSE-000"]);
    expect(byFile("c_good.yaml")).toEqual([]);
    expect(byFile("d_unresolved.yaml").map((f) => [f.id, f.line, f.column])).toEqual([["PARSE-000", 2, 8]]);
  });

  it("lakelogic lint exits per --fail-on and never with an internal error", async () => {
    for (const [failOn, expected] of [
      ["critical", 1],
      ["none", 0],
    ] as const) {
      const r = await run("lint", dir, "--format", "json", "--fail-on", failOn);
      expect(r.stderr).not.toContain("internal error");
      expect(r.code).toBe(expected);
      const findings = JSON.parse(r.stdout) as Finding[];
      expect(findings.map((f) => [f.file.slice(dir.length + 1), f.id])).toEqual([
        ["a_bomb.yaml", "PARSE-000"],
        ["b_big.yaml", "PARSE-000"],
        ["d_unresolved.yaml", "PARSE-000"],
      ]);
    }
  });
});
