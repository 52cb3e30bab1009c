/**
 * What needs no Spark: the CLI's source and trigger syntax, SPARK-001, the Delta target rules,
 * and the Spark SQL dialect's refusals (regex and sql rules Spark would read differently).
 */
import { describe, expect, it } from "vitest";
import { parseSource, parseTrigger } from "../../src/cli/commands/spark.js";
import { buildSparkStatement, checkSparkSql, toJavaRegex } from "../../src/engine/spark-sql.js";
import { compilePlan } from "../../src/engine/plan.js";
import { ConfigError } from "../../src/errors.js";
import { lintText } from "../../src/lint/index.js";
import { deltaTargets, SparkStreamSink } from "../../src/spark/stream-sink.js";
import { makeContract } from "../support/contract.js";
import { sparkOrdersContract } from "./events.js";

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
