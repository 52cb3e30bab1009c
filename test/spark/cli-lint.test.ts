/**
 * What needs no Spark: the CLI's source and trigger syntax, its exit codes and output on bad input
 * and on a failed run, SPARK-001, the Delta target rules, a contract given as a path, and the
 * Spark SQL dialect's refusals (regex and sql rules Spark would read differently).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseSource, parseTrigger } from "../../src/cli/commands/spark.js";
import { main } from "../../src/cli/main.js";
import { ContractError } from "../../src/contract/errors.js";
import { buildSparkStatement, checkSparkSql, toJavaRegex } from "../../src/engine/spark-sql.js";
import { compilePlan } from "../../src/engine/plan.js";
import { ConfigError } from "../../src/errors.js";
import { lintText } from "../../src/lint/index.js";
import { deltaTargets, SparkStreamSink } from "../../src/spark/stream-sink.js";
import { makeContract } from "../support/contract.js";
import { sparkOrdersContract } from "./events.js";

const tmp = mkdtempSync(join(tmpdir(), "ll-spark-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

/** examples/orders.yaml with `format` as the materialization format, written to `name` in tmp. */
function ordersFile(name: string, format: string): string {
  const file = join(tmp, name);
  writeFileSync(file, readFileSync("examples/orders.yaml", "utf8").replace("format: duckdb", `format: ${format}`).replace("target_path: ./lake", `target_path: ${join(tmp, "lake")}`));
  return file;
}

describe("lakelogic spark run: arguments", () => {
  it("reads kafka, json and delta sources and both triggers", () => {
    expect(parseSource("kafka://a:9092,b:9092/orders")).toEqual({ type: "kafka", bootstrapServers: ["a:9092", "b:9092"], topic: "orders" });
    expect(parseSource("json:/in")).toEqual({ type: "json", path: "/in" });
    expect(parseSource("delta:lake/bronze")).toEqual({ type: "delta", path: "lake/bronze" });
    expect(() => parseSource("s3://x")).toThrow(/--source/);
    expect(parseTrigger(undefined)).toBe("available_now");
    expect(parseTrigger("processing_time=30s")).toEqual({ processingTime: "30 seconds" });
    expect(parseTrigger("processing_time=2m")).toEqual({ processingTime: "2 minutes" });
    expect(() => parseTrigger("continuous")).toThrow(/--trigger/);
  });
});

describe("lakelogic spark run: exit codes and output", () => {
  it("exits 2 with the reason for bad input, naming a contract file it cannot use", async () => {
    const noSource = await cli("spark", "run", ordersFile("a.yaml", "delta"), "--checkpoint-location", join(tmp, "c"));
    expect(noSource).toMatchObject({ code: 2, stdout: "" });
    expect(noSource.stderr).toMatch(/--source is required/);
    const missing = join(tmp, "missing.yaml");
    const notFound = await cli("spark", "run", missing, "--source", "json:in", "--checkpoint-location", join(tmp, "c"));
    expect(notFound.code).toBe(2);
    expect(notFound.stderr).toContain(missing);
    const duck = ordersFile("duck.yaml", "duckdb");
    const refused = await cli("spark", "run", duck, "--source", "json:in", "--checkpoint-location", join(tmp, "c"));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/materialization.format.*"duckdb"/);
    expect(refused.stderr).toContain(duck);
  });

  it("exits 1 when the run fails, printing what was committed: text, or one JSON document with --json", async () => {
    // A "Python" that exits at once: the Spark driver dies before its stream starts.
    const saved = process.env.LAKELOGIC_SPARK_PYTHON;
    process.env.LAKELOGIC_SPARK_PYTHON = "false";
    try {
      const args = ["spark", "run", ordersFile("b.yaml", "delta"), "--source", `json:${tmp}`, "--checkpoint-location", join(tmp, "c")];
      const text = await cli(...args);
      expect(text.code).toBe(1);
      expect(text.stdout).toMatch(/^lakelogic spark run FAILED: orders\n {2}batches {5}0 in /);
      expect(text.stderr).toMatch(/^lakelogic spark: the Spark driver exited/m);
      const json = await cli(...args, "--json");
      expect(json.code).toBe(1);
      const lines = json.stdout.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ dataset: "orders", batches: 0, sourceCount: 0, stoppedBy: "error", error: { name: "SparkDriverError" } });
    } finally {
      if (saved === undefined) delete process.env.LAKELOGIC_SPARK_PYTHON;
      else process.env.LAKELOGIC_SPARK_PYTHON = saved;
    }
  });
});

describe("SparkStreamSink given a contract path", () => {
  it("loads it when run; errors name the file", async () => {
    const missing = join(tmp, "nope.yaml");
    const lost = new SparkStreamSink(missing, { source: { type: "json", path: "x" }, checkpointLocation: "c" });
    await expect(lost.run()).rejects.toBeInstanceOf(ContractError);
    await expect(lost.run()).rejects.toThrow(missing);
    const duck = ordersFile("sink-duck.yaml", "duckdb");
    await expect(new SparkStreamSink(duck, { source: { type: "json", path: "x" }, checkpointLocation: "c" }).run()).rejects.toThrow(
      new RegExp(`materialization.format.*\\(in ${duck}\\)`),
    );
  });
});

describe("SPARK-001", () => {
  const yaml = (trigger: string, format: string) =>
    `dataset: orders\nprimary_key: [order_id]\ntrigger: ${trigger}\nmaterialization:\n  strategy: merge\n  format: ${format}\n  target_path: lake\n`;
  it("flags a continuous trigger on a Delta target, and only that", () => {
    const ids = (text: string) => lintText(text, "c.yaml").map((f) => f.id);
    expect(ids(yaml("continuous", "delta"))).toContain("SPARK-001");
    expect(ids(yaml("available_now", "delta"))).not.toContain("SPARK-001");
    expect(ids(yaml("continuous", "duckdb"))).not.toContain("SPARK-001");
  });
});

describe("Delta targets", () => {
  it("defaults to <target_path>/<table> and refuses a declared duckdb or parquet format", () => {
    expect(deltaTargets(sparkOrdersContract(), {})).toEqual({ target: "lake/orders", quarantine: "lake/orders_quarantine" });
    const duck = { ...sparkOrdersContract(), raw: { materialization: { format: "duckdb" } } };
    expect(() => deltaTargets(duck, {})).toThrow(/materialization.format.*"duckdb".*spark/);
    expect(() => new SparkStreamSink(makeContract({ fields: [] }), { source: { type: "json", path: "x" }, checkpointLocation: "c", targetPath: "t" })).toThrow(/fields/);
  });
});

describe("Spark SQL dialect", () => {
  it("rewrites RE2 escapes to their ASCII meaning and refuses what Java reads differently", () => {
    expect(toJavaRegex("^a.b$")).toBe("^a[^\\n]b\\z");
    expect(toJavaRegex("\\s")).toBe("[\\t\\n\\f\\r ]");
    for (const p of ["[[:alpha:]]", "(?i)x", "a++", "[a&&b]", "\\pL", "\\v"]) expect(() => toJavaRegex(p), p).toThrow();
  });

  it("refuses sql rules with functions or syntax Spark reads differently", () => {
    expect(() => checkSparkSql("log(x) > 1")).toThrow(/log\(\)/);
    expect(() => checkSparkSql("x::INTEGER > 1")).toThrow(/::/);
    expect(() => checkSparkSql("x ^ 2 > 1")).toThrow(/xor/);
    expect(() => checkSparkSql("length(s) < 20 AND abs(x) > 0")).not.toThrow();
    const c = makeContract({ fields: [{ name: "x", type: "double" }], rowRules: [{ kind: "sql", id: "r", sql: "trunc(x) > 0" }] });
    expect(() => buildSparkStatement(compilePlan(c), c)).toThrow(ConfigError);
    expect(() => buildSparkStatement(compilePlan(c), c)).toThrow(/rule r.*trunc/);
  });
});
