import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { shouldFail } from "../../src/cli/commands/lint.js";
import { main } from "../../src/cli/main.js";
import { RULES, lintPaths, type Finding } from "../../src/lint/index.js";

const REPO = resolve(".");
const BIN = join(REPO, "bin", "lakelogic.js");
const TSX = join(REPO, "node_modules", ".bin", "tsx");
const FIXTURES = "test/fixtures/contracts";
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `main` in-process, with output captured. */
async function run(...argv: string[]): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

/** The real command in a child process. */
function spawnCli(command: string, args: string[], cwd = REPO): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolveRun({ code: code ?? -1, stdout, stderr }));
  });
}
const bin = (...args: string[]) => spawnCli(process.execPath, [BIN, ...args]);

describe("lakelogic (in-process)", () => {
  it("prints help and version", async () => {
    const help = await run("--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: lakelogic <command>");
    expect(help.stdout).toMatch(/^\s+lint\s+Check contracts/m);
    expect((await run("-v")).stdout).toBe(`${VERSION}\n`);
    const lintHelp = await run("help", "lint");
    expect(lintHelp.code).toBe(0);
    expect(lintHelp.stdout).toContain("Usage: lakelogic lint PATHS...");
    expect((await run("lint", "--help")).stdout).toBe(lintHelp.stdout);
  });

  it("exits 2 with a message for no command, unknown commands and unknown global options", async () => {
    const none = await run();
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("Usage: lakelogic");
    const unknown = await run("lnit");
    expect(unknown).toMatchObject({ code: 2, stdout: "" });
    expect(unknown.stderr).toContain('unknown command "lnit"');
    expect((await run("help", "nope")).code).toBe(2);
    expect((await run("--frobnicate")).code).toBe(2);
  });

  // The default --fail-on is critical (a contract the run refuses fails CI); `none` only reports.
  it("lint: exits 0 on clean contracts, 1 by default on critical findings, 0 with --fail-on none", async () => {
    const clean = await run("lint", "contracts", "--fail-on", "warning");
    expect(clean).toMatchObject({ code: 0, stderr: "" });
    expect(clean.stdout).toBe("No problems found in 2 files.\n");
    const dirty = await run("lint", FIXTURES);
    expect(dirty.code).toBe(1);
    expect(dirty.stdout).toContain("critical PK-002");
    expect((await run("lint", FIXTURES, "--fail-on", "none")).code).toBe(0);
  });

  it("lint: --fail-on compares against the worst finding", async () => {
    const infoOnly = `${FIXTURES}/stream-002-continuous.yaml`;
    expect((await run("lint", infoOnly, "--fail-on", "info")).code).toBe(1);
    expect((await run("lint", infoOnly, "--fail-on", "warning")).code).toBe(0);
    const warningOnly = `${FIXTURES}/stream-003-no-quarantine.yaml`;
    expect((await run("lint", warningOnly, "--fail-on", "warning")).code).toBe(1);
    expect((await run("lint", warningOnly, "--fail-on", "critical")).code).toBe(0);
    expect((await run("lint", FIXTURES, "--fail-on", "critical")).code).toBe(1);
  });

  it("lint: usage errors exit 2 and name the problem", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["lint"], /no paths given/],
      [["lint", "contracts", "--format", "xml"], /--format must be one of text, json, github, sarif/],
      [["lint", "contracts", "--fail-on", "error"], /--fail-on must be one of none, info, warning, critical/],
      [["lint", "contracts", "--bogus"], /Unknown option '--bogus'/],
      [["lint", "contracts", "--format"], /argument missing/],
      [["lint", "no/such/dir"], /path not found: no\/such\/dir/],
      [["lint", "--list-rules", "--format", "sarif"], /--list-rules prints text or json/],
    ];
    for (const [argv, message] of cases) {
      const r = await run(...argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.stdout, argv.join(" ")).toBe("");
      expect(r.stderr, argv.join(" ")).toMatch(message);
      expect(r.stderr).toContain('Run "lakelogic lint --help" for usage.');
    }
  });

  it("lint: accepts -f, --format=…, -- and several paths", async () => {
    const a = await run("lint", "-f", "json", `${FIXTURES}/pk-002-merge-without-key.yaml`);
    const b = await run("lint", "--format=json", "--", `${FIXTURES}/pk-002-merge-without-key.yaml`);
    expect(a.stdout).toBe(b.stdout);
    expect((JSON.parse(a.stdout) as Finding[]).map((f) => f.id)).toEqual(["PK-002"]);
    const both = await run("lint", "-f", "json", "contracts", `${FIXTURES}/stream-001-append.yaml`);
    expect((JSON.parse(both.stdout) as Finding[]).map((f) => f.id)).toEqual(["STREAM-001"]);
  });

  it("lint: --output writes the report to a file (creating folders) and says so on stderr", async () => {
    const out = join(tmp, "reports", "nested", "lint.json");
    const r = await run("lint", FIXTURES, "--format", "json", "--output", out, "--fail-on", "critical");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const expected = await lintPaths([FIXTURES]);
    expect(r.stderr).toContain(`wrote json report (${expected.findings.length} findings, ${expected.files.length} files)`);
    expect(JSON.parse(readFileSync(out, "utf8"))).toEqual(expected.findings);
  });

  it("lint: --list-rules prints the rule table or JSON", async () => {
    const text = await run("lint", "--list-rules");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^STREAM-001\s+warning\s+Append on a streaming/m);
    const json = JSON.parse((await run("lint", "--list-rules", "-f", "json")).stdout) as Array<{ id: string }>;
    expect(json.map((r) => r.id)).toContain("PK-002");
  });

  // Paths with no contract file are a usage error: a typo'd folder in CI must not pass.
  it("lint: exits 2 when the paths hold no contracts", async () => {
    const empty = mkdtempSync(join(tmp, "empty-"));
    const r = await run("lint", empty);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no contract files (*.yaml or *.yml) found");
  });

  it("lint: --var fills a placeholder the way the run would get it; --env needs a name", async () => {
    const file = `${FIXTURES}/placeholder-001-unresolved.yaml`;
    const without = await run("lint", file, "--format", "json", "--fail-on", "critical");
    expect(without.code).toBe(1);
    expect(without.stdout).toContain("PLACEHOLDER-001");
    const given = await run("lint", file, "--format", "json", "--fail-on", "critical", "--var", "lake_root=/data/lake", "--env", "prod");
    expect(given.stdout).not.toContain("PLACEHOLDER-001");
    expect(given.code).toBe(0);
    expect((await run("lint", file, "--var", "lake_root")).code).toBe(2);
    expect((await run("lint", file, "--env", " ")).code).toBe(2);
  });

  it("shouldFail implements the --fail-on threshold", () => {
    const f = (severity: Finding["severity"]): Finding => ({ id: "X", severity, file: "f", line: 1, message: "", suggestion: "" });
    expect(shouldFail([f("critical")], "none")).toBe(false);
    expect(shouldFail([], "info")).toBe(false);
    expect(shouldFail([f("info")], "info")).toBe(true);
    expect(shouldFail([f("info")], "warning")).toBe(false);
    expect(shouldFail([f("info"), f("warning")], "warning")).toBe(true);
    expect(shouldFail([f("warning")], "critical")).toBe(false);
    expect(shouldFail([f("critical")], "critical")).toBe(true);
  });
});

describe("bin/lakelogic.js (spawned)", () => {
  it("runs lint on the example contracts: exit 0, text summary", async () => {
    const r = await bin("lint", "contracts", "--fail-on", "warning");
    expect(r.stderr).toBe("");
    expect(r).toMatchObject({ code: 0, stdout: "No problems found in 2 files.\n" });
  });

  it("exits 1 at the --fail-on threshold and prints JSON findings", async () => {
    const r = await bin("lint", FIXTURES, "--fail-on", "warning", "--format", "json");
    expect(r.code).toBe(1);
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings).toEqual((await lintPaths([FIXTURES])).findings);
    // Every rule has a fixture, so every rule fires on the fixtures directory.
    expect([...new Set(findings.map((f) => f.id))].sort()).toEqual(RULES.map((r) => r.id).sort());
  });

  it("prints GitHub workflow commands", async () => {
    const r = await bin("lint", `${FIXTURES}/pk-002-merge-without-key.yaml`, "--format", "github");
    // PK-002 is critical, and the default --fail-on is critical.
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^::error file=test\/fixtures\/contracts\/pk-002-merge-without-key\.yaml,line=15,col=3,title=PK-002::/);
  });

  it("writes SARIF to --output", async () => {
    const out = join(tmp, "lint.sarif");
    const r = await bin("lint", FIXTURES, "--format", "sarif", "--output", out, "--fail-on", "none");
    expect(r).toMatchObject({ code: 0, stdout: "" });
    const log = JSON.parse(readFileSync(out, "utf8")) as { version: string; runs: Array<{ results: unknown[] }> };
    expect(log.version).toBe("2.1.0");
    expect(log.runs[0]?.results).toHaveLength((await lintPaths([FIXTURES])).findings.length);
  });

  it("exits 2 on usage errors, with the message on stderr", async () => {
    const badFormat = await bin("lint", "contracts", "--format", "xml");
    expect(badFormat.code).toBe(2);
    expect(badFormat.stderr).toContain("--format must be one of");
    const missing = await bin("lint", "does-not-exist");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("path not found: does-not-exist");
    expect((await bin("lint")).code).toBe(2);
  });

  it("prints --version and --help", async () => {
    expect(await bin("--version")).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
    const help = await bin("--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("lint");
  });

  it("works from another directory (finds its own sources and tsconfig)", async () => {
    const r = await spawnCli(process.execPath, [BIN, "lint", join(REPO, "contracts"), "--fail-on", "warning"], tmp);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });
});

describe("src/cli/main.ts as a script (the npm run lint:contracts form)", () => {
  // tsx is a dev dependency, so this always runs after npm ci.
  it("tsx src/cli/main.ts lint contracts --fail-on warning exits 0", async () => {
    const r = await spawnCli(TSX, ["src/cli/main.ts", "lint", "contracts", "--fail-on", "warning"]);
    expect(r).toMatchObject({ code: 0, stdout: "No problems found in 2 files.\n" });
    const bad = await spawnCli(TSX, ["src/cli/main.ts", "lint", FIXTURES, "--fail-on", "warning"]);
    expect(bad.code).toBe(1);
  });
});
