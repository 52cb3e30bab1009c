/**
 * The provisioned Spark runtime for tests (scripts/provision-spark.sh: pyspark, delta-spark and
 * the Delta / Kafka connector jars in the cache). Missing → an Error that says how to provision
 * it: the Spark tests fail, they never skip.
 *
 * Lookup: `$LAKELOGIC_SPARK_HOME`, else `${LAKELOGIC_CACHE:-~/.cache/lakelogic}/spark-<pyspark>-delta-<delta>`.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { locateSpark, type SparkRuntime } from "../../src/engine/spark-home.js";

export function requireSpark(env: NodeJS.ProcessEnv = process.env): SparkRuntime {
  let rt: SparkRuntime;
  try {
    rt = locateSpark(env);
  } catch (err) {
    throw new Error(`Spark is not provisioned: run scripts/provision-spark.sh (${(err as Error).message})`, { cause: err });
  }
  if (rt.home && !existsSync(join(rt.home, ".complete"))) {
    throw new Error(`Spark at ${rt.home} is incomplete: run scripts/provision-spark.sh`);
  }
  if (rt.home && !rt.jars.some((j) => /delta-spark_/.test(j))) {
    throw new Error(`Spark at ${rt.home} has no Delta jars: run scripts/provision-spark.sh`);
  }
  return rt;
}
