/**
 * The README's "Try it" commands run as written, in order, from a copy of the checkout: each
 * must exit 0. Left out, each for its reason: lines marked "needs Docker" / "needs Kafka" (an
 * external service), and `npm run example:e2e`, which test/examples/e2e.test.ts runs. The two
 * set-up commands are what CI itself runs.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(join(root, "README.md"), "utf8");

/** The command lines of the bash blocks under "## Try it". */
function tryItCommands(text: string): string[] {
  const start = text.indexOf("\n## Try it\n");
  if (start < 0) return [];
  const next = text.indexOf("\n## ", start + 1);
  const section = text.slice(start, next < 0 ? undefined : next);
  const lines: string[] = [];
  for (const block of section.matchAll(/```bash\n([\s\S]*?)```/g)) {
    for (const line of block[1]!.split("\n")) if (line.trim() !== "") lines.push(line);
  }
  return lines;
}

function skipReason(line: string): string | undefined {
  if (/#\s*needs (Docker|Kafka)/.test(line)) return "needs an external service";
  if (/^npm run example:e2e\b/.test(line)) return "test/examples/e2e.test.ts runs it";
  return undefined;
}

// A copy of the checkout in which the commands may write (./lake, events.ndjson, …).
const cwd = mkdtempSync(join(tmpdir(), "ll-readme-"));
for (const entry of readdirSync(root)) {
  if (entry === ".git" || entry === "lake" || entry === "lake-file" || entry === "events.ndjson") continue;
  symlinkSync(join(root, entry), join(cwd, entry));
}
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe("README: Try it", () => {
  const commands = tryItCommands(readme);

  it("has commands, and only the documented ones are left out", () => {
    expect(commands.length).toBeGreaterThanOrEqual(5);
    expect(commands.filter((c) => skipReason(c) === undefined).length).toBeGreaterThanOrEqual(4);
  });

  it("runs every command as written, in order", () => {
    for (const line of commands) {
      if (skipReason(line) !== undefined) continue;
      const r = spawnSync("bash", ["-c", line], { cwd, encoding: "utf8", timeout: 300_000 });
      expect(r.status, `${line}\n${r.stdout.slice(-1500)}\n${r.stderr.slice(-1500)}`).toBe(0);
    }
    // What the text says of them: the file stream landed once, the second run added nothing.
    const table = execFileSync(process.execPath, ["--import", import.meta.resolve("tsx"), "-e", COUNT], { cwd, encoding: "utf8" });
    const counts = JSON.parse(table) as { rows: number; quarantined: number };
    expect(counts.rows + counts.quarantined, JSON.stringify(counts)).toBe(10_000);
  }, 600_000);
});

const COUNT = `
import { loadContract } from "${join(root, "src/contract/index.ts")}";
import { readQuarantine, readTable } from "${join(root, "src/lake/index.ts")}";
const c = await loadContract("examples/orders.yaml");
const rows = (await readTable(c, { targetPath: "lake-file" })).length;
const quarantined = (await readQuarantine(c, { targetPath: "lake-file" })).length;
process.stdout.write(JSON.stringify({ rows, quarantined }));
`;
