import { ConfigError } from "../errors.js";

/** Log levels, most severe first: a logger at `info` writes error, warn and info. */
export const LOG_LEVELS = ["error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** `text`: one line a person reads; `json`: one JSON object per line (time, level, msg, fields). */
export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Structured facts of a log line: numbers, strings, booleans (undefined ones are left out). */
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

/** What LakeLogic logs through. Pass your own to StreamSink (`logger`) to route its lines. */
export interface Logger {
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  /** Whether a line at this level would be written (skip building costly fields). */
  enabled(level: LogLevel): boolean;
}

export interface LoggerOptions {
  /** Lowest level written. Default `info`. */
  level?: LogLevel;
  /** Default `text`. */
  format?: LogFormat;
  /** Where each line goes (with its newline). Default: stderr. */
  write?: (line: string) => void;
  /** Clock for the `time` of each line (tests). */
  now?: () => Date;
}

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/** A logger that writes one line per call, text or JSON, to stderr unless told otherwise. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? "info";
  const format = options.format ?? "text";
  if (!LOG_LEVELS.includes(level)) throw new ConfigError("logger.level", `expected one of ${LOG_LEVELS.join(", ")}; got ${JSON.stringify(level)}`);
  if (!LOG_FORMATS.includes(format)) throw new ConfigError("logger.format", `expected one of ${LOG_FORMATS.join(", ")}; got ${JSON.stringify(format)}`);
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const enabled = (l: LogLevel) => RANK[l] <= RANK[level];
  const log = (l: LogLevel) => (msg: string, fields: LogFields = {}) => {
    if (!enabled(l)) return;
    write(format === "json" ? jsonLine(now(), l, msg, fields) : textLine(now(), l, msg, fields));
  };
  return { error: log("error"), warn: log("warn"), info: log("info"), debug: log("debug"), enabled };
}

/** A logger that writes nothing. */
export const silentLogger: Logger = Object.freeze({
  error: () => undefined,
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
  enabled: () => false,
});

function defined(fields: LogFields): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
  return out;
}

function jsonLine(time: Date, level: LogLevel, msg: string, fields: LogFields): string {
  return JSON.stringify({ time: time.toISOString(), level, msg, fields: defined(fields) }) + "\n";
}

/** `2026-01-01T00:00:00.000Z INFO  batch committed batch=3 records=500` — values with spaces are quoted. */
function textLine(time: Date, level: LogLevel, msg: string, fields: LogFields): string {
  const parts = Object.entries(defined(fields)).map(([k, v]) => {
    const s = String(v);
    return `${k}=${s === "" || /[\s"=]/.test(s) ? JSON.stringify(s) : s}`;
  });
  return `${time.toISOString()} ${level.toUpperCase().padEnd(5)} ${msg.replace(/\n/g, " ")}${parts.length ? " " + parts.join(" ") : ""}\n`;
}

let processLogger: Logger | undefined;

/**
 * The process-wide logger, used where no logger was passed (a connector's reconnect notice, a
 * process warning routed by `routeProcessWarnings`). Default: text at info on stderr.
 */
export function defaultLogger(): Logger {
  processLogger ??= createLogger();
  return processLogger;
}

/** Replace the process-wide logger (the CLI sets it from --log-level / --log-format). */
export function setDefaultLogger(logger: Logger): void {
  processLogger = logger;
}

/**
 * Send the process's warnings (the sources' `process.emitWarning` notices, codes LAKELOGIC_*, and
 * Node's own) through `logger` instead of Node's `(node:pid) Warning:` lines. For a process that
 * owns its stderr (the CLI); returns a function that restores Node's printing.
 */
export function routeProcessWarnings(logger: Logger): () => void {
  const previous = process.listeners("warning");
  process.removeAllListeners("warning");
  const onWarning = (w: Error & { code?: string }) => logger.warn(w.message, { code: w.code ?? w.name });
  process.on("warning", onWarning);
  return () => {
    process.removeListener("warning", onWarning);
    for (const l of previous) process.on("warning", l);
  };
}
