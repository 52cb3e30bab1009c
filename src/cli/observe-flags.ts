import { createLogger, defaultLogger, LOG_FORMATS, LOG_LEVELS, setDefaultLogger, type LogFormat, type Logger } from "../observe/logger.js";
import { serveMetrics, StreamMetrics } from "../observe/metrics.js";
import { setupOtlpTracing } from "../observe/trace.js";
import { oneOf } from "./args.js";
import { UsageError, type CliIO } from "./types.js";

/** Logging, metrics and tracing flags of the long-running commands (`run`, `worker`). */
export const OBSERVE_FLAGS = {
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  "metrics-port": { type: "string" },
  "metrics-host": { type: "string" },
  "otlp-endpoint": { type: "string" },
} as const;

const OBSERVE_ROWS: ReadonlyArray<readonly [string, ...string[]]> = [
  ["--log-level LEVEL", "error | warn | info | debug (default info); logs go to stderr"],
  ["--log-format FORMAT", "text | json (one JSON object per line) (default text)"],
  ["--metrics-port N", "serve Prometheus metrics at http://HOST:N/metrics"],
  ["--metrics-host HOST", "address the metrics server listens on (default 127.0.0.1)"],
  ["--otlp-endpoint URL", "export OpenTelemetry spans over OTLP/HTTP to URL (/v1/traces is", "added); default: OTEL_EXPORTER_OTLP_ENDPOINT when set"],
];

/** The help lines of OBSERVE_FLAGS, laid out like the command's own: `indent`, flag column `width`. */
export function observeHelp(indent: string, width: number, extra: ReadonlyArray<readonly [string, ...string[]]> = []): string {
  return [...OBSERVE_ROWS, ...extra]
    .flatMap(([flag, first, ...more]) => [`${indent}${flag.padEnd(width)}${first}`, ...more.map((l) => `${indent}${"".padEnd(width)}${l}`)])
    .join("\n");
}

type ObserveValues = { [K in keyof typeof OBSERVE_FLAGS]?: string };

export interface Observability {
  logger: Logger;
  format: LogFormat;
  /** Set when --metrics-port was given. */
  metrics?: StreamMetrics;
  /** Flush spans, stop the metrics server, put the previous process logger back. */
  close(): Promise<void>;
}

/** A TCP port flag: a whole number 0..65535 (0: any free port, logged). */
export function portFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${flag} must be a port number 0..65535 (got "${value}")`);
  return n;
}

/**
 * Set up what the flags ask for: the process logger (also used by connectors, and by the command
 * for process warnings: routeWarnings in main.ts), the metrics server and the OTLP span exporter.
 */
export async function setupObservability(values: ObserveValues, io: CliIO): Promise<Observability> {
  const level = oneOf("--log-level", values["log-level"], LOG_LEVELS, "info");
  const format = oneOf("--log-format", values["log-format"], LOG_FORMATS, "text");
  const port = portFlag("--metrics-port", values["metrics-port"]);
  const logger = createLogger({ level, format, write: (line) => io.stderr(line) });
  const previous = defaultLogger();
  setDefaultLogger(logger);
  const closers: Array<() => Promise<void>> = [
    async () => {
      setDefaultLogger(previous);
    },
  ];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
  };
  try {
    let metrics: StreamMetrics | undefined;
    if (port !== undefined) {
      metrics = new StreamMetrics();
      const host = values["metrics-host"] ?? "127.0.0.1";
      const server = await serveMetrics(metrics.registry, { port, host }).catch((err: Error) => {
        throw new UsageError(`--metrics-port ${port}: cannot listen on ${host}:${port}: ${err.message}`);
      });
      closers.push(() => server.close());
      logger.info("serving metrics", { url: `http://${host.includes(":") ? `[${host}]` : host}:${server.port}/metrics` });
    }
    const endpoint = values["otlp-endpoint"];
    if (endpoint !== undefined || process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
      if (endpoint !== undefined && !/^https?:\/\//.test(endpoint)) throw new UsageError(`--otlp-endpoint must be an http(s) URL (got "${endpoint}")`);
      const tracing = await setupOtlpTracing(endpoint === undefined ? {} : { endpoint });
      closers.push(() => tracing.shutdown());
      logger.debug("exporting traces over OTLP/HTTP", { endpoint: endpoint ?? "from OTEL_EXPORTER_OTLP_*" });
    }
    return { logger, format, ...(metrics ? { metrics } : {}), close };
  } catch (err) {
    await close();
    throw err;
  }
}
