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

/** A Logger that writes through whatever `defaultLogger()` is when each line is written. */
export const liveDefaultLogger: Logger = Object.freeze({
  error: (msg: string, fields?: LogFields) => defaultLogger().error(msg, fields),
  warn: (msg: string, fields?: LogFields) => defaultLogger().warn(msg, fields),
  info: (msg: string, fields?: LogFields) => defaultLogger().info(msg, fields),
  debug: (msg: string, fields?: LogFields) => defaultLogger().debug(msg, fields),
  enabled: (level: LogLevel) => defaultLogger().enabled(level),
});

export interface CollapseOptions {
  /**
   * A condition that keeps recurring is said again at its level, with the count of the lines
   * folded since, once this long has passed since it was last said. Default 300 000 (5 min).
   */
  remindAfterMs?: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

/** Conditions remembered at once; the one said longest ago is forgotten first. */
const MAX_CONDITIONS = 64;

interface Condition {
  saidAt: number;
  /** Lines folded into debug since it was last said at its level. */
  folded: number;
}

/**
 * A logger that says each condition once. A line at error, warn or info whose message matches one
 * said before at the same level, digits aside (a retry count, a delay, a port), or wraps it
 * (`context: <that message>`, as a client that retries repeats its connection's error), goes to
 * debug with `repeat` (its count since the condition was last said); after `remindAfterMs` the
 * condition is said again at its level with `repeats` (the lines folded meanwhile). For a client
 * library's retry loop: one line per condition instead of one per attempt.
 */
export function collapseRepeats(logger: Logger, options: CollapseOptions = {}): Logger {
  const remindAfterMs = options.remindAfterMs ?? 300_000;
  const now = options.now ?? Date.now;
  // Per level: a wrapped message matches only a condition of its own level.
  const seen: Record<Exclude<LogLevel, "debug">, Map<string, Condition>> = { error: new Map(), warn: new Map(), info: new Map() };
  const find = (conditions: Map<string, Condition>, key: string): string | undefined => {
    if (conditions.has(key)) return key;
    for (const k of conditions.keys()) if (key.endsWith(`: ${k}`) || k.endsWith(`: ${key}`)) return k;
    return undefined;
  };
  const log = (level: Exclude<LogLevel, "debug">) => (msg: string, fields: LogFields = {}) => {
    const conditions = seen[level];
    const key = msg.replace(/\d+/g, "#");
    const match = find(conditions, key);
    const condition = match === undefined ? undefined : conditions.get(match);
    const at = now();
    if (match === undefined || condition === undefined) {
      if (conditions.size >= MAX_CONDITIONS) conditions.delete(conditions.keys().next().value!);
      conditions.set(key, { saidAt: at, folded: 0 });
      logger[level](msg, fields);
    } else if (at - condition.saidAt >= remindAfterMs) {
      logger[level](msg, { ...fields, repeats: condition.folded });
      // Said again: now the most recent, the last to be forgotten.
      conditions.delete(match);
      conditions.set(match, { saidAt: at, folded: 0 });
    } else {
      condition.folded++;
      logger.debug(msg, { ...fields, repeat: condition.folded });
    }
  };
  return { error: log("error"), warn: log("warn"), info: log("info"), debug: (msg, fields) => logger.debug(msg, fields), enabled: (l) => logger.enabled(l) };
}

/**
 * Notices about a library's own future support, not about this run: logged at debug. The AWS SDK
 * raises one when it loads on a Node.js it will stop supporting (a process warning whose message
 * starts with its name, over several lines).
 */
const QUIET_WARNINGS: ReadonlySet<string> = new Set(["NodeVersionSupportWarning"]);

/** One warning as one log line: its message on one line, its name and code as fields, no stack. */
function warningLine(logger: Logger): (w: Error & { code?: string }) => void {
  return (w) => {
    let name = w.name;
    let message = w.message.replace(/\s+/g, " ").trim();
    // Some libraries put a name of their own in front of the message of a plain Warning.
    const named = /^([A-Z][A-Za-z]+Warning): (.*)$/.exec(message);
    if (named?.[1] !== undefined && named[2] !== undefined && name === "Warning") {
      name = named[1];
      message = named[2];
    }
    // A plain Warning's name says nothing; its code (LAKELOGIC_*) does.
    const fields = { ...(name !== "Warning" ? { name } : {}), ...(w.code !== undefined ? { code: w.code } : {}) };
    if (QUIET_WARNINGS.has(name)) logger.debug(message, fields);
    else logger.warn(message, fields);
  };
}

/**
 * Send the process's warnings (the sources' `process.emitWarning` notices, codes LAKELOGIC_*, and
 * Node's and libraries' own) through `logger` instead of Node's `(node:pid) Warning:` lines: one
 * line each at warn, fields `name` (unless a plain Warning) and `code`; a repeated one at debug
 * (collapseRepeats). `held`: warnings raised before, logged now. For a process that owns its
 * stderr (the `lakelogic` command): a library leaves its host's warnings alone. Returns a function
 * that restores Node's printing.
 */
export function routeProcessWarnings(logger: Logger, held: readonly Error[] = []): () => void {
  const previous = process.listeners("warning");
  process.removeAllListeners("warning");
  const onWarning = warningLine(collapseRepeats(logger));
  process.on("warning", onWarning);
  for (const w of held) onWarning(w);
  return () => {
    process.removeListener("warning", onWarning);
    for (const l of previous) process.on("warning", l);
  };
}
