import { createLogger, LOG_FORMATS, LOG_LEVELS } from "../../observe/logger.js";
import { SparkRunError, SparkStreamSink, type SparkRunSummary, type SparkSource, type SparkTrigger } from "../../spark/index.js";
import { oneOf, parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { printResult } from "../output.js";
import { batchLogLine } from "../run-output.js";
import { contractLoadOptionsOf } from "../temporal-flags.js";
import { gracefulStop } from "../signals.js";
import { EXIT, UsageError, type CliCommand, type CliIO } from "../types.js";

const usage = `Usage: lakelogic spark run CONTRACT --source SOURCE --checkpoint-location DIR [options]

Run the contract on Apache Spark Structured Streaming (SparkStreamSink): good rows merged on the
primary key into a Delta table, bad rows appended to a Delta quarantine table, source offsets in
Spark's checkpoint directory. A run restarted on the same checkpoint location resumes there.

Options:
      --source SOURCE              kafka://HOST:PORT[,HOST:PORT]/TOPIC | json:DIR | delta:DIR
      --checkpoint-location DIR    Spark's checkpointLocation (required)
      --trigger TRIGGER            available_now (default) | processing_time=30s
      --target-path DIR            the Delta table (default: materialization.target_path/<table>)
      --master URL                 Spark master (default local[2]; yarn, k8s://…, spark://…)
      --conf KEY=VALUE             a Spark setting (repeatable)
      --var NAME=VALUE             a value for the contract's {NAME} placeholders (repeatable)
      --env NAME                   the environments.<NAME> of _system.yaml that binds placeholders (default dev)
      --json                       print the run's summary as one JSON line on stdout (instead of text)
      --log-level LEVEL            error | warn | info | debug (default info); logs go to stderr
      --log-format FORMAT          text | json (one JSON object per line) (default text)
  -h, --help                       show this help

Output: logs go to stderr, one log line per committed micro-batch (info). At the end a text
summary on stdout, or with --json one JSON line ({"stoppedBy":"end"|"stop"|"error", …,
"error":{name,message} on failure}). Spark's own log: LAKELOGIC_SPARK_DEBUG=1.
Exit codes: 0 done, 1 the run failed (the summary of what was committed is printed), 2 bad
input before the stream started (flags, a contract Spark cannot run, a master nothing answers
at or where no SparkSession starts, a source path that does not exist), 130 / 143 stopped by
SIGINT / SIGTERM (after the micro-batch in flight).

Example:
  lakelogic spark run contracts/orders.yaml --source kafka://127.0.0.1:9092/orders \\
    --checkpoint-location /checkpoints/orders --trigger processing_time=30s
`;

const n = (x: number): string => x.toLocaleString("en");

/** The run's summary as a person reads it (stdout, without --json), laid out as `lakelogic run`'s. */
export function sparkSummaryText(s: SparkRunSummary): string {
  const secs = (s.finishedAt.getTime() - s.startedAt.getTime()) / 1000;
  const how = s.stoppedBy === "error" ? "FAILED" : `done (stopped by ${s.stoppedBy})`;
  return [
    `lakelogic spark run ${how}: ${s.dataset}`,
    `  batches     ${n(s.batches)} in ${secs.toFixed(1)} s`,
    `  records     ${n(s.sourceCount)}: good ${n(s.goodCount)}, quarantined ${n(s.badCount)}, superseded ${n(s.supersededCount)}`,
    `  delta       ${s.targetPath} (quarantine ${s.quarantinePath})`,
    `  checkpoint  ${s.checkpointLocation}`,
  ].join("\n") + "\n";
}

/** The summary as `--json` prints it: without the per-batch reports (each was logged), with the failure. */
function summaryDocument(s: SparkRunSummary, error?: Error): Record<string, unknown> {
  const { reports: _reports, ...rest } = s;
  return { ...rest, ...(error ? { error: { name: error.name, message: error.message } } : {}) };
}

/**
 * A Spark micro-batch in the shape of the per-batch log line of `lakelogic run` (batchLogLine
 * reads only these fields; a Spark batch has no lag or progress).
 */
export function parseSource(text: string): SparkSource {
  const kafka = /^kafka:\/\/([^/]+)\/(.+)$/.exec(text);
  if (kafka) return { type: "kafka", bootstrapServers: kafka[1]!.split(","), topic: kafka[2]! };
  if (text.startsWith("json:")) return { type: "json", path: text.slice(5) };
  if (text.startsWith("delta:")) return { type: "delta", path: text.slice(6) };
  throw new UsageError(`--source: expected kafka://HOST:PORT/TOPIC, json:DIR or delta:DIR, got ${JSON.stringify(text)}`);
}

export function parseTrigger(text: string | undefined): SparkTrigger {
  if (text === undefined || text === "available_now") return "available_now";
  const m = /^processing_time=(\d+)\s*(s|sec|seconds|m|min|minutes)?$/.exec(text);
  if (!m) throw new UsageError(`--trigger: expected available_now or processing_time=<N>s, got ${JSON.stringify(text)}`);
  const minutes = m[2] !== undefined && m[2].startsWith("m");
  return { processingTime: `${m[1]} ${minutes ? "minutes" : "seconds"}` };
}

async function run(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, {
    source: { type: "string" },
    "checkpoint-location": { type: "string" },
    trigger: { type: "string" },
    "target-path": { type: "string" },
    master: { type: "string" },
    conf: { type: "string", multiple: true },
    var: { type: "string", multiple: true },
    env: { type: "string" },
    json: { type: "boolean" },
    "log-level": { type: "string" },
    "log-format": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    io.stdout(usage);
    return EXIT.ok;
  }
  const [sub, file, ...rest] = positionals;
  if (sub !== "run" || file === undefined || rest.length > 0) throw new UsageError("expected: lakelogic spark run CONTRACT");
  if (values.source === undefined) throw new UsageError("--source is required");
  if (values["checkpoint-location"] === undefined) throw new UsageError("--checkpoint-location is required");
  const conf: Record<string, string> = {};
  for (const kv of values.conf ?? []) {
    const at = kv.indexOf("=");
    if (at <= 0) throw new UsageError(`--conf: expected KEY=VALUE, got ${JSON.stringify(kv)}`);
    conf[kv.slice(0, at)] = kv.slice(at + 1);
  }
  const source = parseSource(values.source);
  const trigger = parseTrigger(values.trigger);
  const logger = createLogger({
    level: oneOf("--log-level", values["log-level"], LOG_LEVELS, "info"),
    format: oneOf("--log-format", values["log-format"], LOG_FORMATS, "text"),
    write: (line) => io.stderr(line),
  });
  const contract = await loadForCommand(file, contractLoadOptionsOf(values), io, "spark run");
  const checkpointLocation = values["checkpoint-location"];
  const sink = new SparkStreamSink(contract, {
    source,
    checkpointLocation,
    trigger,
    ...(values["target-path"] !== undefined ? { targetPath: values["target-path"] } : {}),
    ...(values.master !== undefined ? { master: values.master } : {}),
    conf,
    onBatch: (r) => logger.info("batch committed", batchLogLine(checkpointLocation, r)),
  });
  const stop = gracefulStop((signal) => {
    logger.info("stopping after the batch in flight", { checkpointLocation, signal });
    void sink.stop();
  });
  try {
    const summary = await sink.run();
    printResult(io, values.json, summaryDocument(summary), () => sparkSummaryText(summary));
    return stop.exitCode();
  } catch (err) {
    // The stream failed after it started: what was committed, then the reason, and exit 1.
    if (!(err instanceof SparkRunError)) throw err;
    const cause = err.cause instanceof Error ? err.cause : err;
    printResult(io, values.json, summaryDocument(err.summary, cause), () => sparkSummaryText(err.summary));
    io.stderr(`lakelogic spark: ${err.message}\n`);
    return EXIT.failed;
  } finally {
    stop.detach();
  }
}

export const sparkCommand: CliCommand = { usage, run };
