import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder } from "../../examples/orders.js";
import { main } from "../../src/cli/main.js";
import { writeOrders } from "../temporal/support.js";

const REPO = resolve(".");
const BIN = join(REPO, "bin", "lakelogic.js");
const CONTRACT = join(REPO, "examples", "orders.yaml");
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-run-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function bin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

async function inProcess(...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("lakelogic run", () => {
  it("drains a source off a terminal and with --json prints one JSON summary line; a second run resumes", async () => {
    const events = join(tmp, "events.ndjson");
    writeOrders(events, 0, 1500);
    const args = ["run", CONTRACT, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake"), "--batch-size", "500", "--json"];
    const first = await bin(args);
    expect(first.code).toBe(0);
    // Off a terminal: where it reads and writes, then one info line per committed batch on stderr, nothing else.
    const [started, ...logLines] = first.stderr.trim().split("\n");
    const lake = join(tmp, "lake");
    expect(started).toMatch(/^\S+Z INFO {2}stream started /);
    expect(started).toContain(
      ` key=stream::orders mode=available_now source="file ${events}" cursor=null batch=0 format=duckdb table=orders target=${lake} checkpoint=${join(lake, "_lakelogic", "checkpoints.sqlite")}`,
    );
    expect(logLines).toHaveLength(3);
    for (const [i, line] of logLines.entries()) expect(line).toMatch(new RegExp(`INFO  batch committed key=stream::orders batch=${i + 1} records=500 `));
    const lines = first.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!) as { sourceCount: number; goodCount: number; badCount: number; batches: number; cursor: unknown };
    let bad = 0;
    for (let i = 0; i < 1500; i++) if (isBadOrder(i)) bad++;
    expect(summary).toMatchObject({ sourceCount: 1500, goodCount: 1500 - bad, badCount: bad, batches: 3 });

    writeOrders(events, 1500, 1600, true);
    const again = await bin([...args, "--log-format", "json"]);
    const second = JSON.parse(again.stdout) as { sourceCount: number; resumedFrom: { line: number } };
    expect(second).toMatchObject({ sourceCount: 100, resumedFrom: { line: 1500 } });
    // The start line names the cursor it goes on from, the same as the summary's resumedFrom.
    const start = JSON.parse(again.stderr.split("\n")[0]!) as { msg: string; fields: { cursor: string; batch: number } };
    expect(start).toMatchObject({ msg: "stream started", fields: { batch: 3 } });
    expect(JSON.parse(start.fields.cursor)).toEqual(second.resumedFrom);
  });

  it("exits 2 with the reason for bad input", async () => {
    const badMode = await inProcess("run", CONTRACT, "--mode", "sometimes", "--source", '{"type":"file","path":"x"}');
    expect(badMode.code).toBe(2);
    expect(badMode.stderr).toMatch(/--mode must be one of available_now, continuous/);
    const noContract = await inProcess("run", join(tmp, "missing.yaml"));
    expect(noContract.code).toBe(2);
    expect(noContract.stderr).toMatch(/contract not found/);
    const badSource = await inProcess("run", CONTRACT, "--source", '{"type":"fiel","path":"x"}');
    expect(badSource.code).toBe(2);
    expect(badSource.stderr).toMatch(/unknown source type "fiel"; did you mean "file"/);
    const badBatch = await inProcess("run", CONTRACT, "--source", '{"type":"file","path":"x"}', "--batch-size", "0");
    expect(badBatch.code).toBe(2);
    expect(badBatch.stderr).toMatch(/--batch-size must be a whole number >= 1/);
  });

  it("exits 1 and still prints what was committed when the run fails, with stoppedBy error", async () => {
    const missing = join(tmp, "nope.ndjson");
    const r = await inProcess("run", CONTRACT, "--source", JSON.stringify({ type: "file", path: missing }), "--target-path", join(tmp, "lake2"), "--json");
    expect(r.code).toBe(1);
    const summary = JSON.parse(r.stdout) as { stoppedBy: string; error: { name: string; message: string } };
    expect(summary).toMatchObject({ batches: 0, sourceCount: 0, stoppedBy: "error" });
    expect(summary.error.message).toMatch(/ENOENT.*nope\.ndjson/);
    expect(typeof summary.error.name).toBe("string");
    expect(r.stderr).toMatch(/ENOENT/);
  });
});
