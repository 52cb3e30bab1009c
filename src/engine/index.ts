/**
 * Batch validation engines. `duckdb` (default), `polars` and `spark` execute the same plan and
 * give the same results; see docs/contracts.md, "Validation semantics".
 */
import { ConfigError } from "../errors.js";
import { DuckDBEngine } from "./duckdb.js";
import type { Engine, EngineName } from "./types.js";

export type { BadRow, DatasetRuleResult, Engine, EngineName, Row, RuleCount, RuleFailure, ValidationResult } from "./types.js";

export async function createEngine(name: EngineName = "duckdb"): Promise<Engine> {
  switch (name) {
    case "duckdb":
      return DuckDBEngine.create();
    case "polars": {
      // Loaded on demand: nodejs-polars is an optional peer dependency.
      const { PolarsEngine } = await import("./polars.js");
      return PolarsEngine.create();
    }
    case "spark": {
      // Loaded on demand: starts a Spark driver process (see docs/spark.md).
      const { SparkEngine } = await import("./spark.js");
      return SparkEngine.create();
    }
    default:
      throw new ConfigError("engine", `unknown engine ${JSON.stringify(name)}; expected "duckdb", "polars" or "spark"`);
  }
}
