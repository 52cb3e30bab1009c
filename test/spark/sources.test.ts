/**
 * SparkStreamSink from files and from Delta, on a real Spark (local[2]), bronze → silver:
 * - `lakelogic spark run` end to end: a directory of JSON files → a bronze Delta table (append),
 *   text output; then `--json`;
 * - the bronze table → silver (merge on the key) through `new SparkStreamSink("silver.yaml", …)`.
 * Each second run uses the same checkpoint with its last batch's commit removed, as after a crash
 * between the Delta writes and Spark's commit: Spark replays the batch and it changes nothing.
 * Four Spark applications (the runs); the tables are counted from their Delta logs.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { SparkStreamSink } from "../../src/spark/stream-sink.js";
import { requireSpark } from "../support/spark.js";
import { readDeltaFiles } from "./delta-files.js";
import { bronzeOrdersYaml, orderEvents } from "./events.js";

requireSpark();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-sources-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Silver: examples/orders.yaml (merge on order_id, the quality rules) with Delta as the format. */
const silverYaml = (lake: string): string =>
  readFileSync("examples/orders.yaml", "utf8").replace("format: duckdb", "format: delta").replace("target_path: ./lake", `target_path: ${lake}`);

/** Removes the commit of the checkpoint's last batch: the next run replays that batch. */
function uncommitLast(checkpointLocation: string): number {
  const commits = join(checkpointLocation, "commits");
  const last = Math.max(...readdirSync(commits).filter((f) => /^\d+$/.test(f)).map(Number));
  rmSync(join(commits, String(last)));
  rmSync(join(commits, `.${last}.crc`), { force: true });
  return last;
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

async function tables(targetPath: string): Promise<{ good: Array<Record<string, unknown>>; bad: Array<Record<string, unknown>> }> {
  return { good: await readDeltaFiles(targetPath, ["order_id", "created_at"]), bad: await readDeltaFiles(`${targetPath}_quarantine`, ["quarantine_id"]) };
}

const { values, distinctGoodKeys } = orderEvents(120, 5);
const notJson = values.filter((v) => v.includes("not json")).length;
const lake = (): string => join(dir, "lake");
const bronze = (): string => join(lake(), "bronze_orders");

describe("SparkStreamSink: JSON files → bronze → silver", () => {
  it("lakelogic spark run: JSON files → bronze with text output; a replay with --json changes nothing", async () => {
    const input = join(dir, "json-in");
    await mkdir(input);
    await writeFile(join(input, "a.json"), values.slice(0, 60).join("\n") + "\n");
    await writeFile(join(input, "b.json"), values.slice(60).join("\n") + "\n");
    const contract = join(dir, "bronze_orders.yaml");
    await writeFile(contract, bronzeOrdersYaml(lake()));
    const checkpoint = join(dir, "bronze-checkpoint");
    const args = ["spark", "run", contract, "--source", `json:${input}`, "--checkpoint-location", checkpoint];

    const first = await cli(...args);
    expect(first.stderr).not.toMatch(/ERROR|WARN/);
    expect(first.code).toBe(0);
    // Text for people: the summary on stdout, one log line per committed micro-batch on stderr.
    expect(first.stdout).toMatch(/^lakelogic spark run done \(stopped by end\): bronze_orders\n {2}batches {5}\d+ in [\d.]+ s\n/);
    expect(first.stdout).toContain(`  records     ${values.length}: good ${values.length - notJson}, quarantined ${notJson}, superseded 0\n`);
    expect(first.stdout).toContain(`  delta       ${bronze()} (quarantine ${bronze()}_quarantine)\n`);
    const logLines = first.stderr.trim().split("\n");
    for (const [i, line] of logLines.entries()) expect(line).toMatch(new RegExp(`INFO  batch committed key=${checkpoint} batch=${i} records=\\d+ good=\\d+ bad=\\d+`));
    expect(logLines.reduce((t, l) => t + Number(/records=(\d+)/.exec(l)![1]), 0)).toBe(values.length);

    // in = good + quarantined; an append keeps every good record once.
    const written = await tables(bronze());
    expect(written.good.length).toBe(values.length - notJson);
    expect(written.bad.length).toBe(notJson);
    expect(written.bad.every((b) => (b.rule_ids as string[]).includes("record:not_json") && typeof b.raw === "string")).toBe(true);

    // The same checkpoint, its last batch not committed: Spark replays it, Delta skips both writes.
    const replayed = uncommitLast(checkpoint);
    const again = await cli(...args, "--json");
    expect(again.code).toBe(0);
    const lines = again.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(summary).toMatchObject({ dataset: "bronze_orders", batches: 1, stoppedBy: "end", targetPath: bronze(), checkpointLocation: checkpoint });
    expect(summary.sourceCount as number).toBeGreaterThan(0);
    expect(summary.sourceCount).toBe((summary.goodCount as number) + (summary.badCount as number));
    expect(summary).not.toHaveProperty("reports");
    expect(again.stderr).toMatch(new RegExp(`batch committed key=${checkpoint} batch=${replayed} `));
    expect(await tables(bronze())).toEqual(written);
  }, 400_000);

  it("the bronze Delta table → silver, the contract given as a path; a replay changes nothing", async () => {
    const bronzeRows = (await readDeltaFiles(bronze())).length;
    expect(bronzeRows).toBe(values.length - notJson);
    // Every 5th event is bad: a quarter of them not JSON (kept out of bronze), the rest break a rule.
    const badCount = values.length / 5 - notJson;
    const contract = join(dir, "silver_orders.yaml");
    await writeFile(contract, silverYaml(join(dir, "silver")));
    const checkpointLocation = join(dir, "silver-checkpoint");
    const sink = (): SparkStreamSink => new SparkStreamSink(contract, { source: { type: "delta", path: bronze() }, checkpointLocation });
    const first = await sink().run();
    const targetPath = join(dir, "silver", "orders");
    expect(first).toMatchObject({ dataset: "orders", targetPath, sourceCount: bronzeRows, badCount, stoppedBy: "end" });
    expect(first.goodCount + first.badCount + first.supersededCount).toBe(bronzeRows);
    const written = await tables(targetPath);
    const keys = written.good.map((r) => r.order_id);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(distinctGoodKeys);
    expect(written.bad.length).toBe(badCount);
    expect(new Set(written.bad.map((b) => b.quarantine_id)).size).toBe(badCount);

    const replayed = uncommitLast(checkpointLocation);
    const again = await sink().run();
    expect(again.reports.map((r) => r.batchId)).toEqual([replayed]);
    expect(again.reports[0]!.badAlreadyPresent).toBe(again.reports[0]!.badCount);
    expect(await tables(targetPath)).toEqual(written);
  }, 400_000);
});
