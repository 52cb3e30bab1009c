export { createLogger, defaultLogger, setDefaultLogger, routeProcessWarnings, silentLogger, LOG_LEVELS, LOG_FORMATS } from "./logger.js";
export type { Logger, LoggerOptions, LogLevel, LogFormat, LogFields } from "./logger.js";
export { StreamMetrics, serveMetrics } from "./metrics.js";
export type { StreamLabels, BatchFacts, StreamMetricsOptions, MetricsServer } from "./metrics.js";
export { SPANS, loadTracing, setupOtlpTracing } from "./trace.js";
export type { OtlpTracing } from "./trace.js";
