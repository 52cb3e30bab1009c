import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/** `npm run demo`, the README's main command, must keep proving what it says. */
const demo = fileURLToPath(new URL("../../examples/demo.ts", import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), "ll-demo-"));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe("the demo", () => {
  it("kills, resumes, replays and counts — and says it proved it", async () => {
    const { code, out, err } = await new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), demo], { cwd, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      child.on("error", reject);
      child.on("close", (c) => resolve({ code: c, out, err }));
    });
    expect(out).toMatch(/^1\. Interrupted: SIGKILL after batch \d+/m);
    expect(out).toMatch(/^4\. Counted: .* in = good \+ quarantined = 200,000$/m);
    expect(out).toMatch(/^Proved: /m);
    expect(code, err).toBe(0);
    // Its one notice (the rewind of step 3) is a log line, not a Node.js process warning.
    expect(err).not.toMatch(/Warning:|--trace-warnings/);
    expect(err.trim().split("\n")).toEqual([expect.stringMatching(/^\S+Z WARN {2}checkpoint "stream::orders": starting over .* code=LAKELOGIC_CHECKPOINT_RESET$/)]);
  }, 180_000);
});
