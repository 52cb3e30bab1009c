import { loadContract } from "../../contract/index.js";
import { SparkStreamSink, type SparkSource, type SparkTrigger } from "../../spark/index.js";
import { parseCommandArgs } from "../args.js";
import { EXIT, UsageError, type CliCommand, type CliIO } from "../types.js";

const usage = `Usage: lakelogic spark run CONTRACT --source SOURCE --checkpoint-location DIR [options]

Run the contract on Apache Spark Structured Streaming (SparkStreamSink): good rows merged on the
primary key into a Delta table, bad rows appended to a Delta quarantine table, source offsets in
Spark's checkpoint directory. Prints one JSON line per micro-batch and a summary line.

Options:
      --source SOURCE              kafka://HOST:PORT[,HOST:PORT]/TOPIC | json:DIR | delta:DIR
      --checkpoint-location DIR    Spark's checkpointLocation (required)
      --trigger TRIGGER            available_now (default) | processing_time=30s
      --target-path DIR            the Delta table (default: materialization.target_path/<table>)
      --master URL                 Spark master (default local[2]; yarn, k8s://…, spark://…)
      --conf KEY=VALUE             a Spark setting (repeatable)
  -h, --help                       show this help

Example:
  lakelogic spark run contracts/orders.yaml --source kafka://127.0.0.1:9092/orders \\
    --checkpoint-location /checkpoints/orders --trigger processing_time=30s
`;

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
  const contract = await loadContract(file);
  const sink = new SparkStreamSink(contract, {
    source: parseSource(values.source),
    checkpointLocation: values["checkpoint-location"],
    trigger: parseTrigger(values.trigger),
    ...(values["target-path"] !== undefined ? { targetPath: values["target-path"] } : {}),
    ...(values.master !== undefined ? { master: values.master } : {}),
    conf,
    onBatch: (r) => io.stdout(JSON.stringify({ event: "batch", ...r }) + "\n"),
  });
  const stop = (): void => void sink.stop();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    const summary = await sink.run();
    io.stdout(JSON.stringify({ event: "summary", ...summary, reports: undefined }) + "\n");
    return EXIT.ok;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}

export const sparkCommand: CliCommand = { usage, run };
