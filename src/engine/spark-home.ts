/**
 * Where the Spark runtime is: a directory holding `venv/bin/python` (pyspark + delta-spark) and
 * `jars/` (Delta Lake and the Kafka connector), as `scripts/provision-spark.sh` lays it out.
 * `LAKELOGIC_SPARK_HOME` names it; else the provisioning cache's default for the pinned versions.
 * `LAKELOGIC_SPARK_PYTHON` may name another Python with pyspark and delta-spark installed (a
 * cluster's, for instance); the jars are then expected from `packages` or the cluster.
 */
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../errors.js";

export const PYSPARK_VERSION = "3.5.7";
export const DELTA_VERSION = "3.3.2";

export interface SparkRuntime {
  home?: string;
  python: string;
  /** Jar files handed to Spark as `spark.jars`. */
  jars: string[];
  /** spark/driver.py shipped with the package. */
  driver: string;
}

/** spark/driver.py, found from this module both in src/engine and in dist/src/engine. */
export function driverPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "spark", "driver.py");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new ConfigError("spark", "spark/driver.py is missing from the lakelogic package: reinstall it");
}

export function defaultSparkHome(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic");
  return join(cache, `spark-${PYSPARK_VERSION}-delta-${DELTA_VERSION}`);
}

export function locateSpark(env: NodeJS.ProcessEnv = process.env): SparkRuntime {
  const driver = driverPath();
  if (env.LAKELOGIC_SPARK_PYTHON) return { python: env.LAKELOGIC_SPARK_PYTHON, jars: [], driver };
  const home = resolve(env.LAKELOGIC_SPARK_HOME ?? defaultSparkHome(env));
  const python = join(home, "venv", "bin", "python");
  if (!existsSync(python)) {
    throw new ConfigError(
      "LAKELOGIC_SPARK_HOME",
      `no Spark runtime at ${home} (expected venv/bin/python with pyspark ${PYSPARK_VERSION} and delta-spark ${DELTA_VERSION}); run scripts/provision-spark.sh or set LAKELOGIC_SPARK_HOME`,
    );
  }
  const jarDir = join(home, "jars");
  const jars = existsSync(jarDir) ? readdirSync(jarDir).filter((f) => f.endsWith(".jar")).sort().map((f) => join(jarDir, f)) : [];
  return { home, python, jars, driver };
}
