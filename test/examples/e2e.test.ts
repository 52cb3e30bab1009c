/**
 * `npm run example:e2e`, the streaming guide's walk-through: the full walk on the real servers
 * (PostgreSQL, Kafka, Temporal; required in CI), and the in-process walk a machine with nothing
 * provisioned gets. Each ends by counting: in = good + quarantined, no order twice.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const walk = fileURLToPath(new URL("../../examples/e2e/walk.ts", import.meta.url));

function runWalk(env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), walk], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

describe("npm run example:e2e", () => {
  it("walks SSE (killed and resumed), a file, a PostgreSQL backfill and Kafka through Temporal into bronze, then silver, and the counts add up", async () => {
    const { code, out } = await runWalk({});
    expect(out).toMatch(/^2\. SSE → bronze/m);
    expect(out).toMatch(/SIGKILL after batch \d+ was committed/);
    expect(out).toMatch(/^4\. PostgreSQL backfill → bronze/m);
    expect(out).toMatch(/^5\. Kafka → bronze through a Temporal worker/m);
    expect(out).toMatch(/^6\. bronze → silver/m);
    expect(out).toMatch(/^Proved: in = good \+ quarantined = [\d,]+ \+ [\d,]+ = 15,000, no order twice/m);
    expect(code, out.slice(-3000)).toBe(0);
  }, 600_000);

  it("with nothing provisioned, runs the in-process steps and still proves the count", async () => {
    const { code, out } = await runWalk({ LAKELOGIC_E2E_SERVERS: "none" });
    expect(out).toMatch(/^4\. Keyset backfill → bronze: .* in-memory table/m);
    expect(out).toMatch(/^5\. Kafka → bronze through Temporal: left out/m);
    expect(out).toMatch(/^Proved: in = good \+ quarantined = [\d,]+ \+ [\d,]+ = 12,000, no order twice/m);
    expect(code, out.slice(-3000)).toBe(0);
  }, 600_000);
});
