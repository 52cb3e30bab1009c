/** Spark: engine "spark" for validate(), and SparkStreamSink on Structured Streaming (docs/spark.md). */
export { SparkEngine, type SparkEngineOptions } from "../engine/spark.js";
export { SparkStreamSink, SparkRunError, SparkStartError, DeltaReader, deltaTargets } from "./stream-sink.js";
export type { SparkSource, SparkTrigger, SparkStreamSinkOptions, SparkBatchReport, SparkRunSummary } from "./stream-sink.js";
export { SparkDriverError } from "../engine/spark-driver.js";
export { locateSpark, PYSPARK_VERSION, DELTA_VERSION } from "../engine/spark-home.js";
