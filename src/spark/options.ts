/**
 * SparkStreamSink's options, checked before anything starts (the constructor), and the master
 * checked before the driver starts (run()): each refusal is a ConfigError naming the option and
 * what was expected, as StreamSink and the connectors refuse theirs. What only the running Spark
 * can tell (a source path on HDFS or object storage) is checked by the driver (spark/driver.py).
 */
import { Socket } from "node:net";
import { ConfigError } from "../errors.js";
import { showValue } from "../sources/core/field-cursor.js";
import { optionNames, refuseUnknownOptions } from "../sources/core/unknown-options.js";
import type { SparkSource, SparkStreamSinkOptions, SparkTrigger } from "./types.js";

const SINK_OPTIONS = optionNames<SparkStreamSinkOptions>()([
  "source", "checkpointLocation", "trigger", "targetPath", "quarantinePath", "master", "conf", "packages", "onBatch",
]);
type KafkaSource = Extract<SparkSource, { type: "kafka" }>;
type JsonSource = Extract<SparkSource, { type: "json" }>;
type DeltaSource = Extract<SparkSource, { type: "delta" }>;
const SOURCE_OPTIONS: Record<SparkSource["type"], readonly string[]> = {
  kafka: optionNames<KafkaSource>()(["type", "bootstrapServers", "topic", "startingOffsets", "maxOffsetsPerTrigger"]),
  json: optionNames<JsonSource>()(["type", "path", "maxFilesPerTrigger"]),
  delta: optionNames<DeltaSource>()(["type", "path", "readChangeFeed", "startingVersion", "maxFilesPerTrigger"]),
};

/** A value as an error message shows it (a function by its kind). */
const shown = (v: unknown): string => (typeof v === "function" ? "a function" : showValue(v));

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A path or URI Spark is to read or write: a non-empty string without NUL or line breaks. */
function location(option: string, v: unknown, what: string): void {
  if (typeof v !== "string" || v.trim() === "" || /[\0\r\n]/.test(v)) throw new ConfigError(option, `expected ${what}; got ${shown(v)}`);
}

function positiveInt(option: string, v: unknown): void {
  if (v !== undefined && !(typeof v === "number" && Number.isSafeInteger(v) && v > 0)) throw new ConfigError(option, `expected a positive integer; got ${shown(v)}`);
}

/**
 * The masters Spark 3.5 takes (SparkContext.createTaskScheduler): local, local[N], local[*],
 * local[N,F], local-cluster[N,C,M], yarn, spark://, k8s://, mesos://. Anything else Spark
 * refuses only once its JVM is up ("Could not parse Master URL").
 */
const MASTER = /^(local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]|yarn|(spark|k8s|mesos):\/\/\S+)$/;

/**
 * An interval as Spark's Trigger.ProcessingTime reads it: one or more `<number> <unit>` pairs
 * (`30 seconds`, `1 minute 30 seconds`, `500 milliseconds`), optionally after `interval`.
 */
const PROCESSING_TIME = /^\s*(interval\s+)?(\d+(\.\d+)?\s*(microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$/i;

/** Maven coordinates as `spark.jars.packages` takes them: group:artifact:version. */
const PACKAGE = /^[^:\s,]+:[^:\s,]+:[^:\s,]+$/;

function checkSource(source: unknown): void {
  const kinds = Object.keys(SOURCE_OPTIONS);
  if (!isObject(source)) throw new ConfigError("source", `expected { type: "kafka" | "json" | "delta", … }; got ${shown(source)}`);
  const type = source.type;
  if (typeof type !== "string" || !kinds.includes(type)) throw new ConfigError("source.type", `expected one of ${kinds.map((k) => `"${k}"`).join(", ")}; got ${shown(type)}`);
  refuseUnknownOptions(`SparkStreamSink source (${type})`, source, SOURCE_OPTIONS[type as SparkSource["type"]]);
  if (type === "kafka") {
    const servers = source.bootstrapServers;
    const list = Array.isArray(servers) ? servers : [servers];
    if (list.length === 0 || !list.every((s) => typeof s === "string" && /^\S+:\d+$/.test(s.trim()))) {
      throw new ConfigError("source.bootstrapServers", `expected "HOST:PORT" or a non-empty array of them; got ${shown(servers)}`);
    }
    if (typeof source.topic !== "string" || source.topic.trim() === "") throw new ConfigError("source.topic", `expected a topic name; got ${shown(source.topic)}`);
    if (source.startingOffsets !== undefined && source.startingOffsets !== "earliest" && source.startingOffsets !== "latest") {
      throw new ConfigError("source.startingOffsets", `expected "earliest" or "latest"; got ${shown(source.startingOffsets)}`);
    }
    positiveInt("source.maxOffsetsPerTrigger", source.maxOffsetsPerTrigger);
    return;
  }
  const what = type === "json" ? "a directory of newline-delimited JSON files (a path or URI)" : "the path or URI of a Delta table";
  location("source.path", source.path, what);
  positiveInt("source.maxFilesPerTrigger", source.maxFilesPerTrigger);
  if (type === "json") return;
  if (source.readChangeFeed !== undefined && typeof source.readChangeFeed !== "boolean") {
    throw new ConfigError("source.readChangeFeed", `expected true or false; got ${shown(source.readChangeFeed)}`);
  }
  const v = source.startingVersion;
  if (v !== undefined && !(typeof v === "number" && Number.isSafeInteger(v) && v >= 0)) {
    throw new ConfigError("source.startingVersion", `expected a Delta table version (an integer >= 0); got ${shown(v)}`);
  }
}

function checkTrigger(trigger: unknown): asserts trigger is SparkTrigger | undefined {
  if (trigger === undefined || trigger === "available_now") return;
  const expected = `expected "available_now" or { processingTime: "30 seconds" }`;
  if (!isObject(trigger)) throw new ConfigError("trigger", `${expected}; got ${shown(trigger)}`);
  refuseUnknownOptions("SparkStreamSink trigger", trigger, ["processingTime"]);
  const p = trigger.processingTime;
  if (typeof p !== "string" || !PROCESSING_TIME.test(p)) {
    throw new ConfigError("trigger.processingTime", `expected an interval such as "30 seconds", "2 minutes" or "500 milliseconds"; got ${shown(p)}`);
  }
}

/** Every option of a SparkStreamSink, checked when it is constructed: a ConfigError names the first bad one. */
export function checkSparkSinkOptions(options: unknown): asserts options is SparkStreamSinkOptions {
  if (!isObject(options)) throw new ConfigError("options", `SparkStreamSink expects { source, checkpointLocation, … }; got ${shown(options)}`);
  refuseUnknownOptions("SparkStreamSink", options, SINK_OPTIONS);
  checkSource(options.source);
  location("checkpointLocation", options.checkpointLocation, "the directory (path or URI) of Spark's checkpoint, where the source offsets and batch ids live");
  checkTrigger(options.trigger);
  if (options.targetPath !== undefined) location("targetPath", options.targetPath, "the path or URI of the Delta table");
  if (options.quarantinePath !== undefined) location("quarantinePath", options.quarantinePath, "the path or URI of the Delta quarantine table");
  const master = options.master;
  if (master !== undefined && (typeof master !== "string" || !MASTER.test(master))) {
    throw new ConfigError("master", `expected a Spark master: local, local[N], local[*], yarn, spark://HOST:PORT, k8s://https://HOST:PORT or mesos://HOST:PORT; got ${shown(master)}`);
  }
  const conf = options.conf;
  if (conf !== undefined) {
    if (!isObject(conf)) throw new ConfigError("conf", `expected an object of Spark settings ({ "spark.executor.memory": "4g" }); got ${shown(conf)}`);
    for (const [k, v] of Object.entries(conf)) {
      if (typeof v !== "string") throw new ConfigError(`conf.${k}`, `expected a string (Spark settings are text); got ${shown(v)}`);
    }
  }
  const packages = options.packages;
  if (packages !== undefined && (!Array.isArray(packages) || !packages.every((p) => typeof p === "string" && PACKAGE.test(p)))) {
    throw new ConfigError("packages", `expected an array of Maven coordinates "group:artifact:version"; got ${shown(packages)}`);
  }
  if (options.onBatch !== undefined && typeof options.onBatch !== "function") throw new ConfigError("onBatch", `expected a function (report) => void; got ${shown(options.onBatch)}`);
}

/** How long the pre-flight waits for a master's port to accept a connection. */
const CONNECT_TIMEOUT_MS = 15_000;

/** The host:port endpoints a spark:// or k8s:// master names (none for local, yarn, mesos). */
export function masterEndpoints(master: string): Array<{ host: string; port: number }> {
  if (master.startsWith("spark://")) {
    // spark://h1:7077,h2:7077 names the masters of a standby pair; each without a port listens on 7077.
    return master.slice("spark://".length).split(",").map((hp) => {
      const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(hp.trim());
      if (!m) throw new ConfigError("master", `${master}: "${hp}" is not HOST:PORT`);
      return { host: m[1]!, port: m[2] === undefined ? 7077 : Number(m[2]) };
    });
  }
  if (master.startsWith("k8s://")) {
    const rest = master.slice("k8s://".length);
    let url: URL;
    try {
      url = new URL(/^[a-z]+:\/\//i.test(rest) ? rest : `https://${rest}`);
    } catch {
      throw new ConfigError("master", `${master}: expected k8s://https://HOST:PORT (the Kubernetes API server)`);
    }
    return [{ host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port ? Number(url.port) : url.protocol === "http:" ? 80 : 443 }];
  }
  return [];
}

function tryConnect(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (why: string | undefined): void => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs / 1000} s`));
    socket.once("connect", () => done(undefined));
    socket.once("error", (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    socket.connect(port, host);
  });
}

/**
 * A spark:// or k8s:// master that nothing answers at is refused before a JVM starts: Spark
 * itself would retry its registration for a minute and then fail without naming the master.
 * One reachable endpoint of a standby pair is enough (Spark then finds the active one).
 */
export async function checkMasterReachable(master: string, timeoutMs = CONNECT_TIMEOUT_MS): Promise<void> {
  const endpoints = masterEndpoints(master);
  if (endpoints.length === 0) return;
  const failures = await Promise.all(endpoints.map(async (e) => ({ ...e, why: await tryConnect(e.host, e.port, timeoutMs) })));
  if (failures.some((f) => f.why === undefined)) return;
  const what = master.startsWith("k8s://") ? "Kubernetes API server" : "Spark master";
  throw new ConfigError(
    "master",
    `${master}: no ${what} answers there (${failures.map((f) => `${f.host}:${f.port} ${f.why}`).join("; ")}); ` +
      "start it or correct the master URL (local[2] runs Spark inside this machine's driver)",
  );
}
