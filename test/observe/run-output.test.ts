import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder } from "../../examples/orders.js";
import { main } from "../../src/cli/main.js";
import { writeOrders } from "../temporal/support.js";
import { ORDERS_CONTRACT, jsonLines } from "./support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-output-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function run(...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(["run", ORDERS_CONTRACT, ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const badIn = (from: number, to: number) => {
  let bad = 0;
  for (let i = from; i < to; i++) if (isBadOrder(i)) bad++;
  return bad;
};

describe("lakelogic run output", () => {
  it("prints a text summary by default and one JSON line with --json", async () => {
    const events = join(tmp, "a.ndjson");
    writeOrders(events, 0, 700);
    const source = JSON.stringify({ type: "file", path: events });
    const text = await run("--source", source, "--target-path", join(tmp, "lake-a"), "--batch-size", "300");
    expect(text.code).toBe(0);
    expect(() => JSON.parse(text.stdout) as unknown).toThrow();
    expect(text.stdout).toMatch(/^lakelogic run done \(stopped by end\): stream::orders\n/);
    expect(text.stdout).toContain(`records     700: good ${(700 - badIn(0, 700)).toLocaleString("en")}, quarantined ${badIn(0, 700)}`);

    writeOrders(events, 700, 800, true);
    const json = await run("--source", source, "--target-path", join(tmp, "lake-a"), "--batch-size", "300", "--json");
    expect(json.code).toBe(0);
    const lines = json.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ sourceCount: 100, badCount: badIn(700, 800), stoppedBy: "end", resumedFrom: { line: 700 } });
  });

  it("--log-format json writes one JSON object per stderr line, one per committed batch", async () => {
    const events = join(tmp, "b.ndjson");
    writeOrders(events, 0, 1000);
    const r = await run("--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake-b"), "--batch-size", "400", "--log-format", "json", "--json");
    expect(r.code).toBe(0);
    const logs = jsonLines(r.stderr);
    const batches = logs.filter((l) => l.msg === "batch committed");
    expect(batches.map((l) => l.level)).toEqual(["info", "info", "info"]);
    expect(batches.map((l) => l.fields.records)).toEqual([400, 400, 200]);
    expect(batches.map((l) => l.fields.batch)).toEqual([1, 2, 3]);
    for (const l of batches) {
      expect(l.fields).toMatchObject({ key: "stream::orders", superseded: 0 });
      expect((l.fields.good as number) + (l.fields.bad as number)).toBe(l.fields.records);
      expect(typeof l.fields.durationMs).toBe("number");
      expect(Number.isNaN(Date.parse(l.time))).toBe(false);
    }
    // The last batch reaches the end snapshot: the file source reports no bytes left.
    expect(batches.at(-1)!.fields).toMatchObject({ lagBytes: 0, progress: 1 });
  });

  it("reports each rule's failed rows: per batch in the log line, per run in the summary (text and JSON)", async () => {
    const events = join(tmp, "rules.ndjson");
    writeOrders(events, 0, 1000);
    const r = await run("--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake-rules"), "--batch-size", "400", "--log-format", "json", "--json");
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout) as { badCount: number; batches: number; rules: { rows: Array<{ ruleId: string; failed: number; passed: number }>; dataset: Array<{ ruleId: string; passedBatches: number }> } };
    // Each bad order breaks one rule (examples/orders.ts): the rules' failures add up to the quarantine.
    expect(summary.rules.rows.reduce((n, x) => n + x.failed, 0)).toBe(summary.badCount);
    expect(summary.rules.rows.find((x) => x.ruleId === "not_null:order_id")).toEqual({ ruleId: "not_null:order_id", severity: "error", failed: 0, passed: 1000 });
    expect(summary.rules.dataset).toEqual([expect.objectContaining({ ruleId: "unique:order_id", passedBatches: summary.batches, failedBatches: 0 })]);
    // The log lines' failedRules, summed over the batches, give the same counts.
    const perRule = new Map<string, number>();
    for (const l of jsonLines(r.stderr).filter((x) => x.msg === "batch committed")) {
      for (const part of ((l.fields.failedRules as string | undefined) ?? "").split(",").filter(Boolean)) {
        const [rule, n] = part.split("=");
        perRule.set(rule!, (perRule.get(rule!) ?? 0) + Number(n));
      }
    }
    expect(Object.fromEntries(perRule)).toEqual(Object.fromEntries(summary.rules.rows.filter((x) => x.failed > 0).map((x) => [x.ruleId, x.failed])));

    const text = await run("--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake-rules-text"), "--batch-size", "400");
    const failing = summary.rules.rows.filter((x) => x.failed > 0);
    expect(failing.length).toBeGreaterThan(1);
    for (const x of failing) expect(text.stdout).toContain(`    ${x.ruleId} (error)  failed ${x.failed}, passed ${x.passed.toLocaleString("en")}`);
    expect(text.stdout).toContain(`    unique:order_id (dataset, error)  passed in ${summary.batches} batches`);
  });

  it("--log-level warn drops the batch lines; a bad level is a usage error", async () => {
    const events = join(tmp, "c.ndjson");
    writeOrders(events, 0, 50);
    const quiet = await run("--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake-c"), "--log-level", "warn");
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
    const bad = await run("--source", JSON.stringify({ type: "file", path: events }), "--log-level", "loud");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--log-level must be one of error, warn, info, debug/);
  });

  it("a failed run says so: stoppedBy error with the error in JSON, FAILED in text, exit 1", async () => {
    const source = JSON.stringify({ type: "file", path: join(tmp, "missing.ndjson") });
    const json = await run("--source", source, "--target-path", join(tmp, "lake-d"), "--json");
    expect(json.code).toBe(1);
    const summary = JSON.parse(json.stdout) as { stoppedBy: string; error: { name: string; message: string } };
    expect(summary.stoppedBy).toBe("error");
    expect(summary.error.message).toMatch(/ENOENT.*missing\.ndjson/);
    const text = await run("--source", source, "--target-path", join(tmp, "lake-d"));
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^lakelogic run FAILED: stream::orders\n/);
    expect(text.stdout).not.toContain('"stoppedBy"');
  });
});
