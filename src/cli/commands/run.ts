import { existsSync, readFileSync } from "node:fs";
import { createSource } from "../../sources/registry.js";
import { loadContract } from "../../contract/index.js";
import { loadForCommand } from "../contract-load.js";
import { ConfigError } from "../../errors.js";
import { PIPELINE_DEFAULTS, type StreamOverrides, type StreamSettings } from "../../pipeline/settings.js";
import { StreamRunError, StreamSink, type BatchReport, type StreamRunSummary } from "../../sink/index.js";
import { oneOf, parseCommandArgs } from "../args.js";
import type { CommitHooks } from "../../pipeline/commit.js";
import { CONTRACT_SETTINGS_HELP, STREAM_FLAGS, checkInterval, commandSettings, contractLoadOptionsOf, streamOverridesOf } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand, type CliIO } from "../types.js";
import { gracefulStop } from "../signals.js";
import { startFields } from "../../pipeline/start.js";
import { OBSERVE_FLAGS, observeHelp, setupObservability, type Observability } from "../observe-flags.js";
import { batchLogLine, eta, summaryText } from "../run-output.js";
import { toJson } from "../output.js";

const usage = `Usage: lakelogic run CONTRACT [options]

Run a stream in this process (StreamSink): read the source, validate every record against
CONTRACT, write good rows to the lake and bad rows to quarantine, and commit the cursor after
each batch. A killed run resumes where it stopped.

Options:
  -s, --source JSON|FILE      source config, e.g. '{"type":"file","path":"events.ndjson"}'
                              (default: the contract's source: block)
  -m, --mode MODE             available_now | continuous | processing_time (default: the
                              contract's trigger, else available_now)
      --interval TIME         processing_time: a batch every TIME, e.g. 30s or "30 seconds"
                              (default: the contract's processing_time)
      --engine ENGINE         duckdb | polars (default: duckdb)
      --checkpoint PATH       SQLite file, object-store URI, "target" or "memory" (default: a
                              type: stream contract's, else <target>/_lakelogic/checkpoints.sqlite)
      --checkpoint-key KEY    default: stream::<dataset>
      --reset-checkpoint      start over from the checkpoint's position even though the lake
                              already holds later batches of this stream (a lost checkpoint)
      --target-path DIR       the lake directory (default: the contract's, else ./lake)
      --batch-size N          records per batch, a hard cap (default: ${PIPELINE_DEFAULTS.batchSize}, growing while the source is behind)
      --max-wait-ms N         cut a batch this long after its first record (default ${PIPELINE_DEFAULTS.maxWaitMs})
      --max-record-bytes N    quarantine records larger than this (default ${PIPELINE_DEFAULTS.maxRecordBytes})
      --max-batches N         stop after N batches
      --var NAME=VALUE        a value for the contract's {NAME} placeholders (repeatable)
      --env NAME              the environments.<NAME> of _system.yaml that binds placeholders (default dev)
      --json                  print the run's summary as one JSON line on stdout (instead of text)
${observeHelp("      ", 24)}
  -h, --help                  show this help

${CONTRACT_SETTINGS_HELP}

Output: logs go to stderr; on a terminal a progress line, otherwise one log line per committed
batch (info). At the end a text summary on stdout, or with --json one JSON line
({"stoppedBy":"end"|"signal"|"max-batches"|"error", …, "error":{name,message} on failure}).
Exit codes: 0 done, 1 the run failed (the summary of what was committed is printed), 2 usage,
130 / 143 stopped by SIGINT / SIGTERM (continuous, processing_time: after the batch in flight).
`;

function positive(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number >= 1 (got "${value}")`);
  return n;
}

/** `--source` is inline JSON, or the path of a JSON file. */
function parseSource(text: string): Record<string, unknown> {
  const raw = text.trim().startsWith("{") ? text : existsSync(text) ? readFileSync(text, "utf8") : undefined;
  if (raw === undefined) throw new UsageError(`--source: "${text}" is neither JSON nor an existing file`);
  try {
    const value = JSON.parse(raw) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
    return value as Record<string, unknown>;
  } catch (err) {
    throw new UsageError(`--source: expected a JSON object like {"type":"file","path":"x.ndjson"}: ${(err as Error).message}`);
  }
}

/** One line, redrawn in place: records, rate, and percent of the end snapshot when known. */
class Progress {
  private records = 0;
  private drawn = false;
  private readonly started = Date.now();
  constructor(private readonly io: CliIO) {}

  update(b: BatchReport): void {
    this.records += b.sourceCount;
    this.drawn = true;
    const secs = Math.max(0.001, (Date.now() - this.started) / 1000);
    const rate = Math.round(this.records / secs);
    const pct = b.progress === undefined ? "" : ` ${(b.progress * 100).toFixed(1).padStart(5)}% ${bar(b.progress)}${eta(b.progress, Date.now() - this.started)}`;
    this.io.stderr(
      `\r${pct} ${this.records.toLocaleString("en")} records · ${rate.toLocaleString("en")}/s · ` +
        `good ${b.totals.goodCount.toLocaleString("en")} · quarantined ${b.totals.badCount.toLocaleString("en")}` +
        (b.totals.supersededCount > 0 ? ` · superseded ${b.totals.supersededCount.toLocaleString("en")}` : "") +
        ` · batch ${b.batchId}   `,
    );
  }

  /** End the line drawn so far, so that what follows starts on its own line. */
  done(): void {
    if (this.drawn) this.io.stderr("\n");
    this.drawn = false;
  }
}

function bar(fraction: number, width = 24): string {
  const full = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `[${"#".repeat(full)}${".".repeat(width - full)}]`;
}

function summaryLine(summary: StreamRunSummary, error?: unknown): string {
  const failure = error === undefined ? {} : { error: errorOf(error) };
  return toJson({ ...summary, ...failure }) + "\n";
}

/** What failed: the run's cause (its message is the connector's, already free of secrets). */
function errorOf(error: unknown): { name: string; message: string } {
  const cause = error instanceof StreamRunError && error.cause instanceof Error ? error.cause : error;
  return cause instanceof Error ? { name: cause.name, message: cause.message } : { name: "Error", message: String(cause) };
}

export const runCommand: CliCommand = {
  usage,
  run: (args, io) => runStream(args, io),
};

/**
 * `lakelogic run`. `internal.hooks` lets the crash tests stop the command between a batch's
 * write and its commit; nothing else passes it.
 */
export async function runStream(args: string[], io: CliIO, internal: { hooks?: CommitHooks } = {}): Promise<number> {
  const { values, positionals } = parseRunArgs(args);
  if (values.help) {
    io.stdout(usage);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError("expected exactly one CONTRACT path");
  const contractPath = positionals[0]!;
  if (!existsSync(contractPath)) throw new UsageError(`contract not found: ${contractPath}`);
  const engine = oneOf("--engine", values.engine, ["duckdb", "polars"] as const, "duckdb");

  const contract = await loadForCommand(contractPath, contractLoadOptionsOf(values), io, "run");
  // The flags override what the contract declares (trigger, batch size, checkpoint, …): resolved
  // here as StreamSink and the workers resolve them.
  const overrides = streamOverridesOf(values);
  const settings = commandSettings(contract, overrides);
  checkInterval(values, settings.mode);
  const sourceConfig = values.source ? parseSource(values.source) : settings.source;
  if (!sourceConfig) {
    throw new ConfigError("source", "give --source, or a source: block in the contract");
  }
  const observe = await setupObservability(values, io);
  try {
    return await drain(values, io, { contract, source: await createSource(sourceConfig), engine, overrides, settings, observe }, internal);
  } finally {
    await observe.close();
  }
}

type RunValues = ReturnType<typeof parseRunArgs>["values"];

function parseRunArgs(args: string[]) {
  return parseCommandArgs(args, {
    ...STREAM_FLAGS,
    "max-batches": { type: "string" },
    json: { type: "boolean" },
    ...OBSERVE_FLAGS,
    help: { type: "boolean", short: "h" },
  });
}

interface Prepared {
  contract: Awaited<ReturnType<typeof loadContract>>;
  source: Awaited<ReturnType<typeof createSource>>;
  engine: "duckdb" | "polars";
  /** What the flags say; the sink resolves them with the contract as `settings` shows. */
  overrides: StreamOverrides;
  settings: StreamSettings;
  observe: Observability;
}

/** Run the sink and print its summary: text, or one JSON line with --json. */
async function drain(values: RunValues, io: CliIO, p: Prepared, internal: { hooks?: CommitHooks }): Promise<number> {
  const { contract, source, engine, overrides, settings, observe } = p;
  const { logger } = observe;
  const tty = process.stderr.isTTY === true;
  const progress = tty ? new Progress(io) : undefined;
  const { key } = settings;
  const onBatch = (b: BatchReport) => {
    if (progress) progress.update(b);
    else logger.info("batch committed", batchLogLine(key, b));
  };
  const stop = gracefulStop((signal) => {
    progress?.done();
    logger.info("stopping after the batch in flight", { key, signal });
  }, settings.mode !== "available_now");
  // The mode and interval go to run(), as settled above.
  const { mode: _mode, intervalMs: _interval, ...options } = overrides;
  const sink = new StreamSink(contract, source, {
    engine,
    ...options,
    onStart: (start) => logger.info("stream started", startFields(start)),
    onBatch,
    logger,
    // The command takes SIGINT / SIGTERM itself, to say it is stopping and exit with the signal's code.
    signal: stop.abort,
    handleSignals: false,
    ...(observe.metrics ? { metrics: observe.metrics } : {}),
    ...(internal.hooks ? { hooks: internal.hooks } : {}),
  });
  try {
    const interval = settings.intervalMs;
    const summary = await sink.run(settings.mode, { maxBatches: positive("--max-batches", values["max-batches"]), ...(interval !== undefined ? { interval } : {}) });
    progress?.done();
    io.stdout(values.json ? summaryLine(summary) : summaryText(summary));
    return summary.stoppedBy === "signal" ? stop.exitCode() : EXIT.ok;
  } catch (err) {
    progress?.done();
    const summary = (err as { summary?: StreamRunSummary }).summary;
    if (summary) io.stdout(values.json ? summaryLine(summary, err) : summaryText(summary));
    // The command's last word is a plain line on stderr; JSON logs get the failure as a line too.
    if (observe.format === "json") logger.error("run failed", { key, ...errorOf(err) });
    throw err;
  } finally {
    stop.detach();
  }
}
